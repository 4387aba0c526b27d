// PiClient over a fake endpoint: what goes on the wire, and progress subscriptions.
import assert from "node:assert/strict";
import { test } from "node:test";
import core from "../out/core.cjs";

function fakeEndpoint(answers = {}) {
  const sent = [];
  const progress = new Map();
  const notifications = new Map();
  const requests = new Map();
  const endpoint = {
    async sendRequest(method, ...args) {
      // Like MessageConnection: every argument after the method is sent (an undefined token too).
      const [params, token] = args;
      sent.push(args.length > 1 ? { method, params, token } : { method, params });
      const answer = answers[method];
      if (typeof answer === "function") return answer(params, { progress });
      return answer ?? null;
    },
    async sendNotification(method, params) {
      sent.push({ method, params });
    },
    onNotification(method, handler) {
      notifications.set(method, handler);
      return { dispose: () => notifications.delete(method) };
    },
    onRequest(method, handler) {
      requests.set(method, handler);
      return { dispose: () => requests.delete(method) };
    },
    onProgress(_type, token, handler) {
      progress.set(token, handler);
      return { dispose: () => progress.delete(token) };
    },
  };
  return { endpoint, sent, progress, notifications, requests };
}

test("compact with progress passes a fresh workDoneToken and unsubscribes after", async () => {
  const seen = [];
  const fake = fakeEndpoint({
    "pi/compact": (params, { progress }) => {
      progress.get(params.workDoneToken)({ kind: "begin", title: "Compacting" });
      return { entry: {}, tokensBefore: 10, tokensAfter: 2 };
    },
  });
  const client = new core.PiClient(fake.endpoint, () => "tok-1");
  const result = await client.compact("s1", "focus", { onProgress: (v) => seen.push(v.kind) });
  assert.deepEqual(result, { entry: {}, tokensBefore: 10, tokensAfter: 2 });
  assert.deepEqual(fake.sent[0], { method: "pi/compact", params: { sessionId: "s1", customInstructions: "focus", workDoneToken: "tok-1" } });
  assert.deepEqual(seen, ["begin"]);
  assert.equal(fake.progress.size, 0);
});

test("without onProgress no token is sent; the cancellation token is passed through", async () => {
  const fake = fakeEndpoint();
  const token = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) };
  await new core.PiClient(fake.endpoint).navigateTree("s1", "e9", { summarize: true }, { token });
  assert.deepEqual(fake.sent[0], { method: "pi/navigateTree", params: { sessionId: "s1", targetId: "e9", summarize: true }, token });
});

test("the progress subscription is dropped when the request fails", async () => {
  const fake = fakeEndpoint({
    "pi/compact": () => {
      throw Object.assign(new Error("cancelled"), { code: -32800 });
    },
  });
  await assert.rejects(new core.PiClient(fake.endpoint).compact("s", undefined, { onProgress() {} }), { code: -32800 });
  assert.equal(fake.progress.size, 0);
});

test("getTree pages until total; listSessions and settings shapes", async () => {
  const all = Array.from({ length: 5 }, (_, i) => ({ id: `n${i}` }));
  const fake = fakeEndpoint({
    "pi/getTree": ({ offset, limit }) => ({ leafId: "n4", nodes: all.slice(offset, offset + limit), total: 5 }),
    "pi/listSessions": () => ({ sessions: [{ sessionId: "a" }] }),
  });
  const client = new core.PiClient(fake.endpoint);
  const tree = await client.getTree("s", 2);
  assert.deepEqual(tree.nodes.map((n) => n.id), ["n0", "n1", "n2", "n3", "n4"]);
  assert.deepEqual(fake.sent.map((s) => s.params.offset), [0, 2, 4]);
  assert.deepEqual(await client.listSessions("/w"), [{ sessionId: "a" }]);
  assert.deepEqual(fake.sent.at(-1).params, { cwd: "/w" });
  await client.didChangeConfiguration({ tokenizer: "pi" });
  assert.deepEqual(fake.sent.at(-1), { method: "workspace/didChangeConfiguration", params: { settings: { pi: { tokenizer: "pi" } } } });
});

test("notifications and the review hook are wired to pi/ methods", async () => {
  const fake = fakeEndpoint();
  const client = new core.PiClient(fake.endpoint);
  const events = [];
  client.onSessionChanged((e) => events.push(e.leafId));
  client.onCompacted((e) => events.push(e.reason));
  client.onSessionLoaded((e) => events.push(e.entryCount));
  client.handleReviewSummary(async (p) => ({ action: p.summary === "ok" ? "accept" : "reject" }));
  fake.notifications.get("pi/sessionChanged")({ sessionId: "s", leafId: "L" });
  fake.notifications.get("pi/compacted")({ sessionId: "s", reason: "manual" });
  fake.notifications.get("pi/sessionLoaded")({ sessionId: "s", entryCount: 7, warnings: [], contextChanged: false });
  assert.deepEqual(events, ["L", "manual", 7]);
  assert.deepEqual(await fake.requests.get("pi/reviewSummary")({ summary: "ok" }, {}), { action: "accept" });
});
