// LiveSession.turnEnd alone: what it hands back to Pi's turn boundary for the daemon's masking answer.
// The daemon is a stand-in here (this is a unit test of one method); the real daemon and the real Pi
// are in tests/e2e/test_pi_extension.py.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LiveSession } from "../dist/live.js";

const edit = (targetId) => ({ type: "context_edit", targetId, replacement: { content: [{ type: "text", text: "[masked" }] } });

function session(answer, deadlineMs = 1000) {
  const asked = [];
  const daemon = {
    maskingEdits: (file) => {
      asked.push(file);
      return typeof answer === "function" ? answer() : Promise.resolve(answer);
    },
    warmUp: () => undefined,
  };
  return { live: new LiveSession(daemon, deadlineMs), asked };
}

function context(file = "/s.jsonl") {
  const notes = [];
  return { notes, sessionManager: { getSessionFile: () => file }, ui: { notify: (m) => notes.push(m) } };
}

const turn = (over = {}) => ({ turnIndex: 0, messageEntryId: "a", toolResultEntryIds: [], outcome: "completed",
  entries: [], continue: false, ...over });

test("the daemon's edits follow the drafts other handlers proposed; a target already proposed is left to them", async () => {
  const { live, asked } = session([edit("t1"), edit("t2")]);
  const theirs = { type: "custom", customType: "x" };
  const answer = await live.turnEnd(turn({ entries: [theirs, edit("t2")] }), context());
  assert.deepEqual(answer, { entries: [theirs, edit("t2"), edit("t1")] });
  assert.deepEqual(asked, ["/s.jsonl"]);
});

test("nothing to mask, an aborted or failed turn, or no session file: the boundary is left as it is", async () => {
  assert.equal(await session([]).live.turnEnd(turn(), context()), undefined);
  for (const outcome of ["aborted", "error"]) {
    const { live, asked } = session([edit("t1")]);
    assert.equal(await live.turnEnd(turn({ outcome }), context()), undefined);
    assert.deepEqual(asked, []);
  }
  assert.equal(await session([edit("t1")]).live.turnEnd(turn(), context(null)), undefined); // an in-memory session
});

test("a daemon slower than the deadline leaves the turn as it is; a failing one is told once", async () => {
  const slow = session(() => new Promise((resolve) => setTimeout(() => resolve([edit("t1")]), 5000).unref()), 20);
  assert.equal(await slow.live.turnEnd(turn(), context()), undefined);
  const failing = session(() => Promise.reject(new Error("no daemon")));
  const ctx = context();
  assert.equal(await failing.live.turnEnd(turn(), ctx), undefined);
  assert.equal(await failing.live.turnEnd(turn(), ctx), undefined);
  assert.equal(ctx.notes.length, 1);
  assert.match(ctx.notes[0], /^pi-sessiond: the daemon could not mask old tool output \(no daemon\)/);
});

test("each provider request is handed to the daemon without changing it or keeping Pi waiting", async () => {
  const recorded = [];
  let fail = false;
  const daemon = {
    recordRequest: (file, request) => {
      recorded.push({ file, request });
      return fail ? Promise.reject(new Error("no daemon")) : Promise.resolve();
    },
    warmUp: () => undefined,
  };
  const live = new LiveSession(daemon);
  const ctx = { ...context(), model: { provider: "loop", id: "loopm", contextWindow: 9 } };
  const payload = { model: "loopm", messages: [{ role: "user", content: "hi" }] };
  assert.equal(live.providerRequest({ payload }, ctx), undefined); // the payload is kept as Pi built it
  assert.equal(recorded.length, 1);
  const { file, request } = recorded[0];
  assert.equal(file, "/s.jsonl");
  assert.equal(request.body, payload);
  assert.deepEqual([request.provider, request.model], ["loop", "loopm"]);
  assert.ok(Math.abs(request.sentAt - Date.now()) < 60_000);
  fail = true;
  assert.equal(live.providerRequest({ payload }, ctx), undefined); // a failing daemon is not Pi's problem
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(ctx.notes.length, 0);
  for (const [event, view] of [[{ payload }, context(null)], [{ payload }, context()], [{ payload: "x" }, ctx]]) {
    live.providerRequest(event, view); // no session file, no model, not a JSON object
  }
  assert.equal(recorded.length, 2);
});
