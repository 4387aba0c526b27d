// Preview / edit / commit / undo: the draft document (pure), the error sentences, and the
// real daemon's pi/compact {draft}, pi/commitDraft and pi/undo through vscode-jsonrpc.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { core, holdAsPi, makeWorkspace, requireDaemon, startDaemon } from "./support.mjs";

const draft = {
  draftId: "d-1",
  sessionId: "s",
  kind: "compaction",
  summary: "## Goal\nShip it.\n\n## Done\n- x -->y\n",
  firstKeptEntryId: "u3",
  tokensBefore: 50000,
  estimatedTokensAfter: 9000,
  gate: { added: [{ kind: "modifiedFile", text: "src/a.ts" }, { kind: "constraint", text: "never -->push to main" }] },
  expiresAt: "2026-12-01T18:00:00.000Z",
};

// u1 a1 C1(keep a1) u2 a2 u3 a3: the next compaction summarizes a1 (kept by C1) .. a2, keeps u3.
const nodes = [
  { id: "u1", parentId: null, type: "message", role: "user", preview: "first request" },
  { id: "a1", parentId: "u1", type: "message", role: "assistant", preview: "first answer" },
  { id: "c1", parentId: "a1", type: "compaction", preview: "" },
  { id: "u2", parentId: "c1", type: "message", role: "user", preview: "second request" },
  { id: "l1", parentId: "u2", type: "label", preview: "" },
  { id: "a2", parentId: "l1", type: "message", role: "assistant", preview: "second answer" },
  { id: "u3", parentId: "a2", type: "message", role: "user", preview: "third -->request" },
  { id: "a3", parentId: "u3", type: "message", role: "assistant", preview: "third answer" },
];

test("replacedRange follows Pi's range: from the earlier compaction's kept entry to the new one", () => {
  const range = core.replacedRange(nodes, "a3", "u3", (id) => (id === "c1" ? "a1" : undefined));
  assert.equal(range.count, 3); // a1, u2, a2 (the label and the compaction are not messages)
  assert.equal(range.first.id, "a1");
  assert.equal(range.last.id, "a2");
  assert.equal(range.kept.id, "u3");
  assert.equal(range.previousSummary, true);
  // Without the earlier compaction's first kept entry: from the entry after it.
  assert.equal(core.replacedRange(nodes, "a3", "u3").first.id, "u2");
  // No compaction on the path, nothing kept (retain-none): everything.
  const plain = core.replacedRange(nodes.slice(0, 2), "a1", null);
  assert.deepEqual([plain.count, plain.kept, plain.previousSummary], [2, undefined, false]);
});

test("the draft document: a header of what it replaces, tokens and the gate, then the summary exactly", () => {
  const range = core.replacedRange(nodes, "a3", "u3", () => "a1");
  const text = core.draftDocument(draft, range, "Commit: :w");
  const header = text.slice(0, text.indexOf("\n-->"));
  assert.ok(text.startsWith(core.DRAFT_MARK));
  assert.match(header, /Replaces: 3 messages, from "first answer" to "second answer" and the previous summary/);
  assert.match(header, /Keeps: `u3` "third –request" and everything after it/);
  assert.match(header, /Tokens: 50k → ~9k/);
  assert.match(header, /Fidelity gate added 2 \(modifiedFile ×1, constraint ×1\):\n {2}- modifiedFile: src\/a\.ts\n {2}- constraint: never –push to main/);
  assert.match(header, /Commit: :w\nThe draft can be committed until 2026-12-01T18:00:00.000Z\./);
  assert.ok(!header.includes("-->"), "nothing in the header closes the comment early");
  assert.equal(core.draftSummary(text), draft.summary);
  const many = Array.from({ length: 13 }, (_, i) => ({ kind: i < 3 ? "goal" : "todo", text: `item ${i}` }));
  const long = core.draftDocument({ ...draft, gate: { added: many } }, undefined, "x");
  assert.match(long, /Fidelity gate added 13 \(goal ×3, todo ×10\):\n/);
  assert.match(long, /- todo: item 9\n {2}… and 3 more, all in the summary below\n/);
  assert.ok(!long.includes("item 10"));
  const none = core.draftDocument({ ...draft, gate: { added: [] } }, undefined, "x");
  assert.match(none, /Keeps: `u3` and everything after it\nTokens: .*\nFidelity gate: added nothing\n/);
});

test("commitSummary sends the summary only when edited; an empty one is refused", () => {
  const text = core.draftDocument(draft, undefined, "x");
  assert.deepEqual(core.commitSummary(draft, text), {});
  assert.deepEqual(core.commitSummary(draft, `${text}More.\n`), { summary: `${draft.summary}More.\n` });
  assert.deepEqual(core.commitSummary(draft, "## Goal\nAll mine"), { summary: "## Goal\nAll mine" }); // header deleted
  assert.match(core.commitSummary(draft, `${text.slice(0, text.indexOf("\n-->") + 4)}\n  \n`).problem, /empty/);
  const crlf = text.replace(/\n/g, "\r\n");
  assert.equal(core.draftSummary(crlf), draft.summary.replace(/\n/g, "\r\n"));
});

test("undoTarget is the leaf only when it is a compaction or a branch summary", () => {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const node = (id) => byId.get(id);
  assert.deepEqual(core.undoTarget("c1", node), { entryId: "c1", kind: "compaction" });
  assert.equal(core.undoTarget("a3", node), undefined);
  assert.equal(core.undoTarget(undefined, node), undefined);
  byId.set("b1", { id: "b1", type: "branch_summary" });
  assert.deepEqual(core.undoTarget("b1", node), { entryId: "b1", kind: "branch summary" });
  const undone = { leafId: "x9", entry: { id: "x9", parentId: "a3", type: "custom" } };
  assert.match(core.undoneMessage("compaction", undone), /undid the compaction; the leaf is back at `a3`/);
});

test("errors of undo and commit read as sentences; a live Pi's command is kept", () => {
  const conflict = { code: -32006, message: "m", data: { reason: "conflict" } };
  assert.match(core.describeError(conflict, "undo"), /no longer the leaf/);
  assert.match(core.describeError(conflict, "commitDraft"), /session changed since the preview/);
  assert.match(core.describeError(conflict), /moved to another branch/);
  const expired = { code: -32602, message: "draftId: …", data: { reason: "invalidParams", draftState: "expired" } };
  assert.match(core.describeError(expired, "commitDraft"), /draft expired/);
  const live = { code: -32009, message: "Pi (pid 7) has this session open; undo it there: type /tree in Pi",
    data: { reason: "liveWriter", piCommand: "/tree", holder: { pid: 7, program: "pi" } } };
  assert.equal(core.describeError(live, "undo"), live.message);
  assert.equal(core.piCommand(live), "/tree");
  assert.match(core.describeError({ code: -32009, message: "m", data: { reason: "liveWriter" } }), /moments ago/);
});

describe("preview, commit and undo through the real daemon", requireDaemon(), () => {
  let workspace;
  let daemon;

  before(async () => {
    workspace = makeWorkspace();
    daemon = await startDaemon(workspace, { settings: { "compaction.keepRecentTokens": 2000 } });
  });

  after(async () => {
    if (daemon) assert.equal(await daemon.close(), 0, daemon.stderr());
  });

  test("preview → edit → commit writes the edited text; a second commit of it is refused", async () => {
    const file = workspace.copy("draft.jsonl");
    const { sessionId } = await daemon.pi.openSession(file);
    const before = readFileSync(file, "utf8");
    const seen = [];
    const draft = await daemon.pi.compactDraft(sessionId, undefined, { onProgress: (v) => seen.push(v.kind) });
    assert.equal(readFileSync(file, "utf8"), before, "a draft writes nothing");
    assert.equal(draft.kind, "compaction");
    assert.ok(seen.includes("begin") && seen.includes("end"), seen.join());
    const tree = await daemon.pi.getTree(sessionId);
    const range = core.replacedRange(tree.nodes, tree.leafId, draft.firstKeptEntryId);
    assert.ok(range.count > 0 && range.kept?.id === draft.firstKeptEntryId, JSON.stringify(range));
    const text = core.draftDocument(draft, range, "Commit: …");
    assert.deepEqual(core.commitSummary(draft, text), {}, "unchanged text: no summary sent");

    const edited = `${text}\n## Reviewer note\nKeep the retry logic.\n`;
    const { summary } = core.commitSummary(draft, edited);
    const result = await daemon.pi.commitDraft(sessionId, draft.draftId, summary);
    const last = JSON.parse(readFileSync(file, "utf8").trim().split("\n").pop());
    assert.equal(last.id, result.entry.id);
    assert.equal(last.summary, `${draft.summary}\n## Reviewer note\nKeep the retry logic.\n`);
    assert.match(core.committedMessage(result, true), /your edited summary was written/);

    const error = await daemon.pi.commitDraft(sessionId, draft.draftId).then(() => undefined, (e) => e);
    assert.match(core.describeError(error, "commitDraft"), /already committed/);
  });

  test("an unchanged draft is written as previewed", async () => {
    const file = workspace.copy("draft-unchanged.jsonl");
    const { sessionId } = await daemon.pi.openSession(file);
    const draft = await daemon.pi.compactDraft(sessionId);
    const { summary } = core.commitSummary(draft, core.draftDocument(draft, undefined, "x"));
    await daemon.pi.commitDraft(sessionId, draft.draftId, summary);
    const last = JSON.parse(readFileSync(file, "utf8").trim().split("\n").pop());
    assert.equal(last.type, "compaction");
    assert.equal(last.summary, draft.summary);
  });

  test("a session a live Pi holds: undo answers liveWriter with the Pi command, and the message keeps it", async () => {
    const file = workspace.copy("live.jsonl");
    let { sessionId } = await daemon.pi.openSession(file);
    const result = await daemon.pi.compact(sessionId);
    await daemon.pi.closeSession(sessionId); // the daemon lets go of the lock; Pi takes it
    const pi = await holdAsPi(file, path.join(workspace.root, "pi.sock"));
    try {
      ({ sessionId } = await daemon.pi.openSession(file));
      const before = readFileSync(file, "utf8");
      const error = await daemon.pi.undo(sessionId, result.entry.id).then(() => undefined, (e) => e);
      assert.equal(core.errorReason(error), "liveWriter");
      assert.match(core.piCommand(error), /^\/tree/);
      assert.match(core.describeError(error, "undo"), /^Pi \(pid \d+\) has this session open; undo it there: type \/tree/);
      assert.equal(readFileSync(file, "utf8"), before, "nothing was written");
    } finally {
      await pi.release();
    }
  });

  test("compact, then undo: the context is the one before, the compaction stays on a side branch", async () => {
    const file = workspace.copy("undo.jsonl");
    const { sessionId, leafId } = await daemon.pi.openSession(file);
    const before = await daemon.pi.getContext(sessionId);
    const result = await daemon.pi.compact(sessionId);
    const tree = new core.TreeModel(await daemon.pi.getTree(sessionId));
    assert.deepEqual(core.undoTarget(tree.leafId, (id) => tree.node(id)), { entryId: result.entry.id, kind: "compaction" });

    const undone = await daemon.pi.undo(sessionId, result.entry.id);
    assert.equal(undone.entry.parentId, leafId); // the undo entry hangs under the old leaf and is the leaf now
    assert.equal(undone.leafId, undone.entry.id);
    assert.match(core.undoneMessage("compaction", undone), new RegExp(`back at \`${leafId}\``));
    assert.deepEqual(await daemon.pi.getContext(sessionId), before);
    const last = JSON.parse(readFileSync(file, "utf8").trim().split("\n").pop());
    assert.equal(last.customType, "pi-sessiond.undo");
    const again = new core.TreeModel(await daemon.pi.getTree(sessionId));
    assert.equal(core.undoTarget(again.leafId, (id) => again.node(id)), undefined);

    // The compaction is no longer the leaf: a second undo is a conflict, with its own sentence.
    const error = await daemon.pi.undo(sessionId, result.entry.id).then(() => undefined, (e) => e);
    assert.equal(core.errorReason(error), "conflict");
    assert.match(core.describeError(error, "undo"), /no longer the leaf/);
  });
});
