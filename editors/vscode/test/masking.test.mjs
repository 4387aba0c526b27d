// The masking tier in VS Code: placeholders, edits and marks (pure), the settings bridge, and
// the real daemon's pi/mask (dry run, then written), Show Original and pi/unmask through vscode-jsonrpc.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { core, holdAsPi, makeWorkspace, requireDaemon, startDaemon } from "./support.mjs";

const PLACEHOLDER = [
  "[masked tool output: bash — the original is entry t2; pi/unmask restores it]",
  'arguments: {"command": "cd src && npm test"}',
  "outcome: error (exit code 1); 5200 characters, 120 lines",
  "last lines:",
  "FAIL a.test.ts",
].join("\n");

// u1 a1 t1 a2 t2, then e1 masks t1, e2 masks t2, e3 restores t2 (an unmask), e4 omits t1's twin t3.
const nodes = [
  { id: "u1", parentId: null, type: "message", role: "user", preview: "run the tests" },
  { id: "a1", parentId: "u1", type: "message", role: "assistant", preview: "[read]" },
  { id: "t1", parentId: "a1", type: "message", role: "toolResult", preview: "line 1 …" },
  { id: "a2", parentId: "t1", type: "message", role: "assistant", preview: "[bash]" },
  { id: "t2", parentId: "a2", type: "message", role: "toolResult", preview: "FAIL …" },
  { id: "e1", parentId: "t2", type: "context_edit", preview: "t1: [masked tool output: read — the original is entry t1; pi/…" },
  { id: "e2", parentId: "e1", type: "context_edit", preview: "t2: [masked tool output: bash — the original is entry t2; pi/…" },
  { id: "e3", parentId: "e2", type: "context_edit", preview: "t2: FAIL a.test.ts …" },
];
const edits = new Map(
  nodes
    .map((node) => core.editInfo(node, node.id === "e2" ? { targetId: "t2", replacement: { content: [{ type: "text", text: PLACEHOLDER }] } } : undefined))
    .filter(Boolean)
    .map((edit) => [edit.id, edit]),
);

test("a placeholder names the tool, its target and the size; a clipped arguments line still gives the target", () => {
  const read = core.parsePlaceholder(PLACEHOLDER);
  assert.deepEqual([read.tool, read.originalId, read.target, read.size], ["bash", "t2", "cd src && npm test", "error (exit code 1); 5200 characters, 120 lines"]);
  const clipped = core.parsePlaceholder(`${PLACEHOLDER.split("\n")[0]}\narguments: {"path": "/repo/src/very/long.ts", "offset": 1…`);
  assert.equal(clipped.target, "long.ts");
  assert.equal(core.parsePlaceholder("plain output"), undefined);
});

test("a context edit reads as what it does: masked, restored, omitted, edited", () => {
  assert.equal(core.editLabel(edits.get("e2"), edits), "masked bash cd src && npm test");
  assert.equal(core.editLabel(edits.get("e3"), edits), "restored bash cd src && npm test");
  assert.equal(core.editLabel(edits.get("e1"), edits), "masked tool result t1"); // its entry was not fetched
  const omit = core.editInfo({ id: "e9", type: "context_edit", preview: "t1: (omitted)" });
  assert.equal(core.editLabel(omit, edits), "omitted tool result t1");
  assert.equal(core.editLabel(core.editInfo({ id: "e8", type: "context_edit", preview: "t1: other" }), new Map()), "edited tool result t1");
  assert.equal(core.editInfo({ id: "e7", type: "context_edit" }, { targetId: "t1", replacement: null }).kind, "omitted");
});

test("the latest edit per target in the leaf's context decides: t1 masked, t2 restored", () => {
  const masked = core.maskedTargets(nodes, "e3", edits);
  assert.deepEqual([...masked.keys()], ["t1"]);
  assert.deepEqual([...core.maskedTargets(nodes, "e2", edits).keys()], ["t1", "t2"], "before the restore both are");
  const marks = core.maskMarks(nodes, "e3", edits);
  assert.equal(marks.get("t1").contextValue, "entry-masked");
  assert.equal(marks.get("t2").contextValue, "entry-tool");
  assert.equal(marks.get("e2").description, "→ t2 · error (exit code 1); 5200 characters, 120 lines");
  const model = new core.TreeModel({ leafId: "e3", nodes }, { marks });
  assert.match(model.view("t1").description, /^masked/);
  assert.equal(model.view("t1").contextValue, "entry-masked");
  assert.equal(model.view("e3").label, "restored bash cd src && npm test");
  assert.equal(model.view("e3").contextValue, "entry-history-leaf"); // it restores: nothing to unmask
  assert.equal(marks.get("e1").contextValue, "entry-edit"); // the edit masking t1 now
});

test("a masked result summarized away by a compaction is not masked in the context", () => {
  const compacted = [...nodes.slice(0, 6), { id: "c1", parentId: "e1", type: "compaction", preview: "" }];
  assert.equal(core.maskedTargets(compacted, "c1", edits).size, 0);
  // Unless the compaction keeps it (its firstKeptEntryId is before the result and the edit).
  assert.deepEqual([...core.maskedTargets(compacted, "c1", edits, () => "a1").keys()], ["t1"]);
});

test("the question, the messages and the errors of masking read as sentences", () => {
  assert.equal(core.maskQuestion({ edits: [{}, {}], tokensBefore: 180820, tokensAfter: 96774 }),
    "Mask 2 tool results, frees ~84k tokens? The originals stay in the session file.");
  assert.match(core.maskedMessage("unmask", { edits: [{}], tokensBefore: 10, tokensAfter: 900 }), /^Pi: restored 1 tool result \(10 → ~900 tokens\)/);
  const stale = { code: -32602, message: "entryIds: t1 is not masked", data: { reason: "invalidParams", entryId: "t1" } };
  assert.match(core.describeError(stale, "unmask"), /not masked in the context of the leaf .*nothing was written/);
  assert.match(core.describeError(stale, "mask"), /not an unmasked tool result/);
  const busy = { code: -32009, message: "x", data: { reason: "liveWriter" } };
  assert.match(core.describeError(busy, "mask"), /wrote to this session moments ago; nothing was written/);
});

test("the masking settings and prepareAt reach the daemon; an explicit null prepareAt is sent", () => {
  const set = { "compaction.masking.enabled": true, "compaction.masking.minTokens": 200, "compaction.prepareAt": null };
  assert.deepEqual(core.piSettings((key) => set[key]), { compaction: { masking: { enabled: true, minTokens: 200 }, prepareAt: null } });
  assert.equal(core.changeAction((key) => key === "pi.compaction.prepareAt"), "notify");
});

test("the original document: the header, then the stored output exactly", () => {
  const entry = { id: "t2", type: "message", message: { role: "toolResult", toolName: "bash", isError: true, details: { exitCode: 1 }, content: [{ type: "text", text: "a\nb\n" }] } };
  const text = core.originalDocument(entry, { command: "npm test" }, true);
  assert.match(text, /^Original tool result t2 \(bash\)/);
  assert.match(text, /Arguments: \{"command":"npm test"\}\nOutcome: error \(exit code 1\); 4 characters, 2 lines\.\nMasked in the context/);
  assert.ok(text.endsWith("─\na\nb\n"));
  assert.equal(core.originalDocument({ type: "compaction" }, undefined, false), undefined);
});

const MASKING = { "compaction.masking.minTokens": 200, "compaction.masking.olderThanTokens": 2000, "compaction.prepareAt": 0.8 };

describe("mask, show the original, unmask through the real daemon", requireDaemon(), () => {
  let workspace;
  let daemon;

  before(async () => {
    workspace = makeWorkspace();
    daemon = await startDaemon(workspace, { settings: MASKING });
  });

  after(async () => {
    if (daemon) assert.equal(await daemon.close(), 0, daemon.stderr());
  });

  test("dry run → mask → the tree marks them → the original is the stored output → unmask one, then all", async () => {
    const file = workspace.copy("mask.jsonl");
    const { sessionId } = await daemon.pi.openSession(file);
    const settings = await daemon.pi.getSettings(sessionId);
    assert.equal(settings.settings.compaction.masking.minTokens, 200, "pi.compaction.masking.* reached the daemon");
    const before = readFileSync(file, "utf8");
    const contextBefore = await daemon.pi.getContext(sessionId);
    const dry = await daemon.pi.mask(sessionId, { dryRun: true });
    assert.equal(readFileSync(file, "utf8"), before, "a dry run writes nothing");
    assert.ok(dry.edits.length >= 2, `the generated session has results to mask: ${dry.edits.length}`);
    assert.match(core.maskQuestion(dry), new RegExp(`^Mask ${dry.edits.length} tool results, frees ~`));

    const result = await daemon.pi.mask(sessionId);
    const targets = result.edits.map((edit) => edit.targetId);
    let loaded = await core.loadTree(daemon.pi, sessionId);
    assert.deepEqual([...loaded.masked.keys()].sort(), [...targets].sort());
    const [first, second] = targets;
    assert.match(loaded.model.view(first).description, /masked · (ok|error).*\d+ characters, \d+ lines/);
    const editRow = loaded.model.view(result.edits[0].id);
    assert.match(editRow.label, /^masked (read|bash|grep|find|ls)\b/);

    // Show Original: the tool result as the file stores it, not the placeholder.
    const [stored] = before.split("\n").filter(Boolean).map((line) => JSON.parse(line)).filter((e) => e.id === first);
    const [entry] = await daemon.pi.getEntries(sessionId, [first]);
    const text = core.originalDocument(entry, undefined, loaded.masked.has(first));
    assert.ok(text.endsWith(core.contentText(stored.message.content)));
    assert.doesNotMatch(text, /\[masked tool output/);

    await daemon.pi.unmask(sessionId, [first]);
    loaded = await core.loadTree(daemon.pi, sessionId);
    assert.ok(!loaded.masked.has(first) && loaded.masked.has(second));
    const restore = loaded.model.allNodes().filter((node) => node.type === "context_edit").pop();
    assert.match(loaded.model.view(restore.id).label, /^restored /);
    const stale = await daemon.pi.unmask(sessionId, [first]).then(() => undefined, (e) => e);
    assert.match(core.describeError(stale, "unmask"), /not masked in the context of the leaf/);

    await daemon.pi.unmask(sessionId, [...loaded.masked.keys()]);
    loaded = await core.loadTree(daemon.pi, sessionId);
    assert.equal(loaded.masked.size, 0);
    assert.deepEqual((await daemon.pi.getContext(sessionId)).messages, contextBefore.messages, "the context is back");
  });

  test("Mask This Tool Output masks one named result; masking it again is refused with a sentence", async () => {
    const file = workspace.copy("mask-one.jsonl");
    const { sessionId } = await daemon.pi.openSession(file);
    let loaded = await core.loadTree(daemon.pi, sessionId);
    const tool = loaded.model.allNodes().find((node) => loaded.model.view(node.id).contextValue.startsWith("entry-tool"));
    assert.ok(tool, "the leaf's context has a maskable tool result");
    const result = await daemon.pi.mask(sessionId, { entryIds: [tool.id] });
    assert.deepEqual(result.edits.map((edit) => edit.targetId), [tool.id]);
    loaded = await core.loadTree(daemon.pi, sessionId);
    assert.deepEqual([...loaded.masked.keys()], [tool.id]);
    assert.equal(loaded.model.view(tool.id).contextValue, "entry-masked");
    const again = await daemon.pi.mask(sessionId, { entryIds: [tool.id] }).then(() => undefined, (e) => e);
    assert.match(core.describeError(again, "mask"), /not an unmasked tool result in the context of the leaf/);
  });

  test("a session a live Pi holds: mask answers liveWriter with the Pi command, and the message keeps it", async () => {
    const file = workspace.copy("mask-live.jsonl");
    const pi = await holdAsPi(file, path.join(workspace.root, "pi-mask.sock"));
    try {
      const { sessionId } = await daemon.pi.openSession(file);
      const before = readFileSync(file, "utf8");
      const error = await daemon.pi.mask(sessionId).then(() => undefined, (e) => e);
      assert.equal(core.errorReason(error), "liveWriter");
      assert.match(core.describeError(error, "mask"), /^Pi \(pid \d+\) has this session open; .* type \/compact in Pi/);
      assert.equal(readFileSync(file, "utf8"), before, "nothing was written");
    } finally {
      await pi.release();
    }
  });
});
