// Starts the real daemon and talks to it through vscode-jsonrpc, as the extension's LanguageClient does.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import rpc from "vscode-jsonrpc/node";
import core from "../out/core.cjs";

export const PYTHON = process.env.PI_SESSIOND_PYTHON || "python3";

/** Why the daemon cannot run here, or `undefined` when it can. */
export function daemonUnavailable() {
  const done = spawnSync(PYTHON, ["-m", "pi_sessiond", "serve", "--help"], { encoding: "utf8", timeout: 30000 });
  if (done.error) return `${PYTHON}: ${done.error.message}`;
  return done.status === 0 ? undefined : `${PYTHON} -m pi_sessiond serve --help exited ${done.status}: ${done.stderr.trim().split("\n").pop()}`;
}

/** Skip options for node:test — but under CI=true a missing daemon fails instead. */
export function requireDaemon() {
  const reason = daemonUnavailable();
  if (reason && process.env.CI === "true") {
    throw new Error(`required in CI: ${reason}`);
  }
  return { skip: reason };
}

/** A workspace: a temp folder with an agent dir, a sessions dir and the generated 400-entry session. */
export function makeWorkspace() {
  const root = mkdtempSync(path.join(tmpdir(), "pi-vscode-"));
  const agentDir = path.join(root, "agent");
  const sessionsDir = path.join(root, "sessions");
  mkdirSync(agentDir);
  mkdirSync(sessionsDir);
  const fixture = path.join(root, "generated.jsonl");
  const gen = spawnSync(
    PYTHON,
    ["-m", "pi_sessiond.examples.generator", fixture, "--entries", "400", "--shape", "long", "--seed", "3"],
    { encoding: "utf8" },
  );
  if (gen.status !== 0) throw new Error(`generator failed: ${gen.stderr}`);
  let copies = 0;
  return {
    root,
    agentDir,
    sessionsDir,
    /** A fresh copy of the generated session (each test writes its own). */
    copy(name = `copy-${++copies}.jsonl`) {
      const file = path.join(sessionsDir, name);
      copyFileSync(fixture, file);
      return file;
    },
  };
}

/**
 * Spawns `python -m pi_sessiond serve` and initializes it with what the extension sends:
 * `initializationOptions(explicit settings)` and the hooks of `piCapabilities(reviewSummaries)`.
 */
export async function startDaemon(workspace, { settings = {}, reviewSummaries = false, workDoneProgress = true, env = {} } = {}) {
  const proc = spawn(PYTHON, ["-m", "pi_sessiond", "serve"], {
    cwd: workspace.root,
    env: { ...process.env, PI_CODING_AGENT_DIR: workspace.agentDir, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => proc.on("exit", (code) => resolve(code)));
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  conn.listen();
  const explicit = (key) => (key === "sessionsDir" ? workspace.sessionsDir : settings[key]);
  const initializationOptions = core.initializationOptions(explicit);
  const init = await conn.sendRequest("initialize", {
    processId: process.pid,
    rootUri: null,
    capabilities: { window: { workDoneProgress }, experimental: core.piCapabilities(reviewSummaries) },
    initializationOptions,
  });
  await conn.sendNotification("initialized", {});
  return {
    conn,
    proc,
    init,
    initializationOptions,
    pi: new core.PiClient(conn),
    stderr: () => stderr,
    /** `shutdown` + `exit`; resolves to the exit code. */
    async close() {
      await conn.sendRequest("shutdown");
      await conn.sendNotification("exit");
      const code = await Promise.race([exited, delay(10000).then(() => "timeout")]);
      conn.dispose();
      if (code === "timeout") proc.kill();
      return code;
    },
  };
}

export function delay(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves with the first value `register` hands its callback (rejects after `ms`). */
export function nextEvent(register, ms = 10000, what = "event") {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    const sub = register((value) => {
      clearTimeout(timer);
      sub?.dispose?.();
      resolve(value);
    });
  });
}

/**
 * A loopback OpenAI-compatible endpoint that starts streaming a summary and then
 * stalls: a summary that only a cancel ends. Records when the daemon hangs up.
 */
export async function stallingProvider() {
  let received;
  let disconnected;
  const state = {
    requests: 0,
    received: new Promise((resolve) => {
      received = resolve;
    }),
    disconnected: new Promise((resolve) => {
      disconnected = resolve;
    }),
  };
  const server = http.createServer((req, res) => {
    state.requests += 1;
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const chunk = { id: "c1", object: "chat.completion.chunk", model: "stall", choices: [{ index: 0, delta: { role: "assistant", content: "## Goal\n" } }] };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      received(req.url);
    });
    res.on("close", () => {
      if (!res.writableEnded) disconnected(true);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    state,
    settings: {
      "summarizer.provider": "openai",
      "summarizer.baseUrl": `http://127.0.0.1:${port}/v1`,
      "summarizer.model": "stall-model",
      "summarizer.apiKeyEnv": "PI_VSCODE_TEST_KEY",
    },
    env: { PI_VSCODE_TEST_KEY: "sk-loopback-test" },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** `pi-sessiond hold-lock FILE` as the Pi extension runs it: the lock body names a live Pi. */
export async function holdAsPi(file, socket) {
  const child = spawn(PYTHON, ["-m", "pi_sessiond", "hold-lock", file, "--pid", String(process.pid), "--socket", socket], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const ready = await new Promise((resolve, reject) => {
    child.stdout.once("data", (chunk) => resolve(JSON.parse(String(chunk).split("\n")[0])));
    child.once("exit", (code) => reject(new Error(`hold-lock exited ${code}`)));
  });
  assert.equal(ready.ready, true);
  return {
    release: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.stdin.end();
      }),
  };
}

export { core, rpc };
