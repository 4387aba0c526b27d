// Status bar text, settings mapping, daemon discovery, quick picks, errors, rendering.
import assert from "node:assert/strict";
import { test } from "node:test";
import core from "../out/core.cjs";

test("status bar: Pi 71% · 142k/200k, warning near the threshold, error above it", () => {
  const view = (contextTokens, contextWindow = 200000, reserve = 16384) =>
    core.statusView({ contextTokens, contextWindow }, reserve);
  assert.equal(view(142000).text, "Pi 71% · 142k/200k");
  assert.equal(view(142000).level, "normal");
  assert.equal(view(163616).level, "warning"); // threshold 183616 − 10% of the window
  assert.equal(view(163615).level, "normal");
  assert.equal(view(183616).level, "warning");
  assert.equal(view(183617).level, "error");
  assert.match(view(183617).tooltip, /auto-compaction above 183,616/);
  assert.equal(view(null).text, "Pi ?/200k");
  const afterCompaction = core.statusView({ contextTokens: null, estimatedContextTokens: 31000, contextWindow: 200000 }, 16384);
  assert.equal(afterCompaction.text, "Pi ~16% · ~31k/200k"); // Pi's contextTokens is null until real usage
  assert.match(afterCompaction.tooltip, /estimated at 31,000 of 200,000/);
  assert.equal(core.statusView({}, 16384).text, "Pi ?");
  assert.equal(core.compactingView("threshold").text, "$(sync~spin) Pi compacting…");
});

test("status bar: a session live in Pi is marked and says where to act", () => {
  const base = core.statusView({ contextTokens: 142000, contextWindow: 200000 }, 16384);
  const live = core.liveView(base, { pid: 4242, program: "pi" });
  assert.equal(live.text, "$(terminal) Pi 71% · 142k/200k");
  assert.equal(live.level, base.level);
  assert.match(live.tooltip, /Live in Pi \(pid 4242\): compactions run in Pi; navigate there with \/tree$/);
  assert.ok(live.tooltip.startsWith(base.tooltip));
});

test("token counts are short", () => {
  assert.deepEqual(
    [0, 999, 1000, 1500, 9999, 12345, 142000, 999999, 1000000, 1250000].map(core.formatTokens),
    ["0", "999", "1k", "1.5k", "10k", "12k", "142k", "1M", "1M", "1.25M"],
  );
});

test("settings: only explicit values are sent, nested as Pi's settings.json", () => {
  const set = {
    "summarizer.provider": "openai",
    "summarizer.baseUrl": "http://127.0.0.1:9/v1",
    "summarizer.apiKeyEnv": "MY_KEY",
    "summarizer.model": "",
    "compaction.reserveTokens": 8000,
    "compaction.enabled": false,
    contextWindow: 100000,
    tokenizer: "cl100k",
    sessionsDir: "/tmp/sessions",
    "daemon.python": "/usr/bin/python3",
  };
  const options = core.initializationOptions((key) => set[key]);
  assert.deepEqual(options, {
    settings: {
      summarizer: { provider: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKeyEnv: "MY_KEY" },
      compaction: { reserveTokens: 8000, enabled: false },
      contextWindow: 100000,
      tokenizer: "cl100k",
    },
    sessionsDir: "/tmp/sessions",
  });
  assert.deepEqual(core.initializationOptions(() => undefined), { settings: {} });
  assert.deepEqual(core.piSettings((key) => (key === "contextWindow" ? null : undefined)), { contextWindow: null });
});

test("settings: summarizer keys come from user settings only", () => {
  const inspected = { globalValue: "offline", workspaceValue: "openai", workspaceFolderValue: "anthropic" };
  assert.equal(core.explicitValue("summarizer.provider", inspected), "offline");
  assert.equal(core.explicitValue("tokenizer", inspected), "anthropic");
  assert.equal(core.explicitValue("tokenizer", { workspaceValue: "pi" }), "pi");
  assert.equal(core.explicitValue("summarizer.baseUrl", { workspaceValue: "http://evil/v1" }), undefined);
  assert.equal(core.explicitValue("tokenizer", undefined), undefined);
});

test("settings: hooks, change actions, effective reserve", () => {
  assert.deepEqual(core.piCapabilities(true), { pi: { hooks: ["reviewSummary"] } });
  assert.deepEqual(core.piCapabilities(false), { pi: { hooks: [] } });
  assert.equal(core.changeAction((k) => k === "pi.reviewSummaries"), "restart");
  assert.equal(core.changeAction((k) => k === "pi.daemon.python"), "restart");
  assert.equal(core.changeAction((k) => k === "pi.compaction.keepRecentTokens"), "notify");
  assert.equal(core.changeAction((k) => k === "pi.trace.server"), "none");
  assert.equal(core.effectiveReserve({ settings: { compaction: { reserveTokens: 1000 } } }), 1000);
  assert.equal(core.effectiveReserve(undefined), 16384);
});

function probes(over = {}) {
  const calls = [];
  const base = {
    commandSetting: [],
    pythonSetting: "",
    pythonExtensionInterpreter: async () => {
      calls.push("python extension");
      return "/venv/bin/python";
    },
    hasModule: async (python) => {
      calls.push(`hasModule ${python}`);
      return true;
    },
    which: async (name) => {
      calls.push(`which ${name}`);
      return `/usr/local/bin/${name}`;
    },
  };
  return { probes: { ...base, ...over }, calls };
}

test("discovery order: command setting → python setting → Python extension → PATH", async () => {
  let p = probes({ commandSetting: ["/opt/pi", "serve", "--stdio"], pythonSetting: "/ignored" });
  assert.deepEqual(await core.discoverDaemon(p.probes), {
    command: "/opt/pi",
    args: ["serve", "--stdio"],
    source: "command setting",
  });
  assert.deepEqual(p.calls, []);

  p = probes({ pythonSetting: " /py/bin/python3 " });
  assert.deepEqual(await core.discoverDaemon(p.probes), {
    command: "/py/bin/python3",
    args: ["-m", "pi_sessiond", "serve"],
    source: "python setting",
  });
  assert.deepEqual(p.calls, []);

  p = probes();
  assert.equal((await core.discoverDaemon(p.probes)).source, "python extension");
  assert.deepEqual(p.calls, ["python extension", "hasModule /venv/bin/python"]);

  p = probes({ hasModule: async () => false });
  assert.deepEqual(await core.discoverDaemon(p.probes), {
    command: "/usr/local/bin/pi-sessiond",
    args: ["serve"],
    source: "PATH",
  });

  p = probes({ pythonExtensionInterpreter: async () => undefined, which: async () => undefined });
  assert.equal(await core.discoverDaemon(p.probes), undefined);
  assert.match(core.missingDaemonMessage("/venv/bin/python"), /pip install pi-sessiond.*pi\.daemon\.python/);
  assert.match(core.missingDaemonMessage(undefined), /not found on PATH\. Install/);
});

test("whichOnPath searches PATH in order, with PATHEXT on Windows", async () => {
  const exists = (set) => async (file) => set.has(file);
  const env = { PATH: "/a::/b:/c" };
  assert.equal(await core.whichOnPath("pi-sessiond", env, exists(new Set(["/b/pi-sessiond", "/c/pi-sessiond"])), "linux"), "/b/pi-sessiond");
  assert.equal(await core.whichOnPath("pi-sessiond", env, exists(new Set()), "linux"), undefined);
  const win = { Path: "C:\\py\\Scripts", PATHEXT: ".COM;.EXE" };
  assert.equal(
    await core.whichOnPath("pi-sessiond", win, exists(new Set(["C:\\py\\Scripts\\pi-sessiond.exe"])), "win32"),
    "C:\\py\\Scripts\\pi-sessiond.exe",
  );
});

test("session picks: newest first, name or first message, counts and age", () => {
  const now = new Date("2025-06-10T12:00:00Z");
  const picks = core.sessionPicks(
    [
      { sessionId: "old", path: "/s/old.jsonl", name: null, modified: "2025-06-01T12:00:00Z", messageCount: 1, firstMessage: "fix\nthe build" },
      { sessionId: "new", path: "/s/new.jsonl", name: "Refactor", modified: "2025-06-10T11:30:00Z", messageCount: 12, firstMessage: "let us refactor" },
      { sessionId: "none", path: "/s/none.jsonl", modified: null },
    ],
    now,
  );
  assert.deepEqual(picks.map((p) => p.sessionId), ["new", "old", "none"]);
  assert.deepEqual(picks[0], {
    label: "Refactor",
    description: "30 min ago · 12 messages",
    detail: "let us refactor",
    path: "/s/new.jsonl",
    sessionId: "new",
  });
  assert.equal(picks[1].label, "fix the build");
  assert.equal(picks[1].description, "9 days ago · 1 message");
  assert.equal(picks[1].detail, "/s/old.jsonl");
  assert.equal(picks[2].label, "none");
  assert.equal(core.relativeTime("2025-01-01T00:00:00Z", now), "2025-01-01");
  assert.equal(core.relativeTime("garbage", now), "");
});

test("navigate choices map to pi/navigateTree options", () => {
  const [none, summarize, custom] = core.NAVIGATE_CHOICES;
  assert.deepEqual(core.navigateOptions(none, "ignored"), {});
  assert.deepEqual(core.navigateOptions(summarize), { summarize: true });
  assert.deepEqual(core.navigateOptions(custom, "  focus on tests "), { summarize: true, customInstructions: "focus on tests" });
  assert.deepEqual(core.navigateOptions(custom, "   "), { summarize: true });
  assert.equal(custom.askInstructions, true);
});

test("errors: cancellation and friendly reasons", () => {
  assert.equal(core.isCancelled({ code: -32800, message: "cancelled" }), true);
  assert.equal(core.isCancelled(new Error("x")), false);
  assert.equal(core.describeError({ code: -32004, message: "m", data: { reason: "nothingToCompact" } }), "Nothing to compact yet: the session has no messages to summarize.");
  assert.equal(core.describeError({ code: -32005, message: "HTTP 500", data: { reason: "summarizerFailed" } }), "The summarizer failed: HTTP 500");
  assert.equal(core.describeError({ code: -32603, message: "boom" }), "boom");
});

test("progress: absolute percentages become increments", () => {
  const updates = [];
  const handle = core.progressReporter((u) => updates.push(u));
  handle({ kind: "begin", title: "Compacting", percentage: 0 });
  handle({ kind: "report", message: "summarizing 12 messages", percentage: 40 });
  handle({ kind: "report", message: "writing", percentage: 90 });
  handle({ kind: "report", percentage: 80 });
  handle({ kind: "end", message: "done" });
  assert.deepEqual(updates, [{ increment: 0 }, { message: "summarizing 12 messages", increment: 40 }, { message: "writing", increment: 50 }, { increment: 0 }]);
});

test("rendering: context, stats and summaries as markdown", () => {
  const md = core.contextMarkdown(
    {
      messages: [
        { role: "compactionSummary", summary: "## Goal\nship it", tokensBefore: 5 },
        { role: "user", content: "hello" },
        { role: "assistant", content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "hi" }, { type: "toolCall", name: "read", arguments: { path: "a" } }] },
        { role: "toolResult", toolName: "read", content: [{ type: "text", text: "file" }] },
      ],
      tokens: 1500,
    },
    "s1",
  );
  assert.match(md, /^# Context of s1\n\n4 messages · 1\.5k tokens/);
  assert.match(md, /## 1\. compactionSummary\n\n## Goal\nship it/);
  assert.match(md, /## 3\. assistant\n\n> _thinking:_ hmm\n\nhi\n\n`read\(\{"path":"a"\}\)`/);
  assert.match(md, /## 4\. toolResult \(read\)\n\nfile/);
  const stats = core.statsMarkdown({ contextTokens: 142000, contextWindow: 200000, contextPercent: 71, cost: 0.5, messageCounts: { user: 3 } }, "s1");
  assert.match(stats, /\| Context \| 142,000 tokens \|/);
  assert.match(stats, /\| Messages: user \| 3 \|/);
  const summary = core.summaryMarkdown({ id: "abc", type: "compaction", summary: "S", tokensBefore: 900, firstKeptEntryId: "k1" });
  assert.equal(summary, "# Compaction `abc`\n\n_900 tokens before · first kept entry `k1`_\n\nS\n");
  assert.match(core.summaryMarkdown({ id: "b", type: "branch_summary", summary: "B", fromId: "x" }), /^# Branch summary `b`/);
});
