// The parts of the extension that run without Pi: paths, the command, the JSON-RPC framing.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { PassThrough, Duplex } from "node:stream";
import { test } from "node:test";
import { daemonSocket, forwardingSocket, sessiondCommand, socketDir } from "../dist/paths.js";
import { Connection, RpcError } from "../dist/rpc.js";

test("sockets live in $XDG_RUNTIME_DIR/pi-sessiond, a live Pi's named by a hash of the session path", () => {
  const env = { XDG_RUNTIME_DIR: "/run/user/1000" };
  assert.equal(socketDir(env), "/run/user/1000/pi-sessiond");
  assert.equal(daemonSocket(env), "/run/user/1000/pi-sessiond/daemon.sock");
  const digest = createHash("sha256").update("/home/u/s.jsonl").digest("hex").slice(0, 16);
  assert.equal(forwardingSocket("/home/u/s.jsonl", env), `/run/user/1000/pi-sessiond/pi-${digest}.sock`);
  assert.match(socketDir({}), /^\/tmp\/pi-sessiond-\d+$/);
});

test("the pi-sessiond command: one word or a JSON array, else pi-sessiond", () => {
  assert.deepEqual(sessiondCommand({}), ["pi-sessiond"]);
  assert.deepEqual(sessiondCommand({ PI_SESSIOND_COMMAND: "/opt/bin/pi-sessiond" }), ["/opt/bin/pi-sessiond"]);
  assert.deepEqual(sessiondCommand({ PI_SESSIOND_COMMAND: '["python3", "-m", "pi_sessiond"]' }), [
    "python3",
    "-m",
    "pi_sessiond",
  ]);
  assert.throws(() => sessiondCommand({ PI_SESSIOND_COMMAND: "[1]" }), /JSON array of strings/);
});

function pair() {
  const aToB = new PassThrough();
  const bToA = new PassThrough();
  const a = Duplex.from({ readable: bToA, writable: aToB });
  const b = Duplex.from({ readable: aToB, writable: bToA });
  return [new Connection(a), new Connection(b)];
}

test("requests, errors and cancellation cross LSP framing both ways", async () => {
  const [client, server] = pair();
  server.handlers.set("echo", async (params) => ({ got: params, text: "ünïcode ✓" }));
  server.handlers.set("fail", async () => {
    throw new RpcError("nope", -32004, { reason: "nothingToCompact" });
  });
  let aborted = false;
  server.handlers.set("hang", (_params, _id, signal) => {
    return new Promise((_resolve, reject) => {
      signal.addEventListener("abort", () => {
        aborted = true;
        reject(new RpcError("cancelled", -32800));
      });
    });
  });
  assert.deepEqual(await client.request("echo", { n: 1 }), { got: { n: 1 }, text: "ünïcode ✓" });
  await assert.rejects(client.request("fail", {}), (error) => error.code === -32004 && error.data.reason === "nothingToCompact");
  await assert.rejects(client.request("missing", {}), (error) => error.code === -32601);
  const controller = new AbortController();
  const hung = client.request("hang", {}, controller.signal);
  controller.abort();
  await assert.rejects(hung, (error) => error.code === -32800);
  assert.ok(aborted);
  client.close();
  await assert.rejects(client.request("echo", {}), /connection closed/);
});

test("a daemon draft's cut is used only on Pi's branch and not after Pi's own cut", async () => {
  const { notAfter } = await import("../dist/daemon.js");
  const branch = ["r", "a", "b", "c"];
  assert.equal(notAfter(branch, "b", "b"), true);
  assert.equal(notAfter(branch, "a", "c"), true); // an earlier cut: the kept part is larger
  assert.equal(notAfter(branch, "c", "b"), false); // after Pi's: Pi's range would be summarized only in part
  assert.equal(notAfter(branch, "x", "b"), false); // another branch
});
