// The side bar's tree and the Navigate Tree quick pick, from pi/getTree nodes.
import assert from "node:assert/strict";
import { test } from "node:test";
import core from "../out/core.cjs";

const { TreeModel, oneLine } = core;

/** root → a → b → c(branch point) → {d → e (leaf), f → g}, plus a compaction on the d branch. */
function nodes() {
  const spec = [
    ["root", null, "message", "user", "hello"],
    ["a", "root", "message", "assistant", "hi there"],
    ["b", "a", "message", "user", "do the thing"],
    ["c", "b", "message", "assistant", "which way?"],
    ["d", "c", "compaction", null, "summary of work"],
    ["e", "d", "message", "user", "left branch"],
    ["f", "c", "message", "user", "right branch"],
    ["g", "f", "branch_summary", null, "what the left did"],
  ];
  const kids = new Map();
  for (const [id, parent] of spec) {
    if (parent) kids.set(parent, [...(kids.get(parent) ?? []), id]);
  }
  return spec.map(([id, parentId, type, role, preview]) => ({
    id,
    parentId,
    type,
    role,
    preview,
    label: id === "b" ? "checkpoint" : null,
    timestamp: "2025-01-01T00:00:00Z",
    childIds: kids.get(id) ?? [],
    onActivePath: ["root", "a", "b", "c", "d", "e"].includes(id),
  }));
}

const model = () => new TreeModel({ leafId: "e", nodes: nodes(), total: 8 });

test("a chain is flat and a branch point nests its branch heads", () => {
  const m = model();
  assert.deepEqual(m.children(), ["root", "a", "b", "c"]);
  assert.deepEqual(m.children("c"), ["d", "f"]);
  assert.deepEqual(m.children("d"), ["e"]);
  assert.deepEqual(m.children("f"), ["g"]);
  assert.deepEqual(m.children("a"), []);
  assert.equal(m.isExpandable("c"), true);
  assert.equal(m.isExpandable("b"), false);
});

test("every node is shown exactly once and displayParent inverts children", () => {
  const m = model();
  const seen = [];
  const walk = (id, parent) => {
    for (const child of m.children(id)) {
      seen.push(child);
      assert.equal(m.displayParent(child), parent, `parent of ${child}`);
      walk(child, child);
    }
  };
  walk(undefined, undefined);
  assert.deepEqual(seen.sort(), nodes().map((n) => n.id).sort());
});

test("only branches holding the active path start expanded", () => {
  const m = model();
  assert.equal(m.isExpanded("c"), true);
  assert.equal(m.isExpanded("d"), true);
  assert.equal(m.isExpanded("f"), false);
});

test("views carry icons, labels, leaf marker and summary context values", () => {
  const m = model();
  const leaf = m.view("e");
  assert.equal(leaf.isLeaf, true);
  assert.equal(leaf.icon, "debug-stackframe");
  assert.match(leaf.description, /leaf/);
  assert.equal(leaf.contextValue, "entry-leaf");
  assert.equal(m.view("a").icon, "hubot");
  assert.equal(m.view("root").icon, "account");
  assert.equal(m.view("b").description, "[checkpoint]");
  const compaction = m.view("d");
  assert.equal(compaction.icon, "archive");
  assert.equal(compaction.contextValue, "entry-summary");
  assert.equal(compaction.label, "Compaction: summary of work");
  assert.equal(m.view("g").contextValue, "entry-summary");
  assert.equal(m.view("g").icon, "git-merge");
  assert.equal(m.view("f").onActivePath, false);
  assert.throws(() => m.view("nope"), /unknown node/);
});

test("pick rows list the tree in display order, indented by depth", () => {
  const rows = model().pickRows();
  assert.deepEqual(
    rows.map((r) => [r.id, r.depth]),
    [["root", 0], ["a", 0], ["b", 0], ["c", 0], ["d", 1], ["e", 2], ["f", 1], ["g", 2]],
  );
  const e = rows.find((r) => r.id === "e");
  assert.ok(e.label.startsWith("\u2003\u2003$(account) left branch"), e.label);
  assert.match(e.description, /debug-stackframe/);
  assert.match(rows.find((r) => r.id === "b").description, /circle-filled\) \[checkpoint\]/);
  assert.doesNotMatch(rows.find((r) => r.id === "f").description, /circle-filled/);
});

test("the active path is derived from the leaf when the daemon does not flag it", () => {
  const bare = nodes().map((n) => ({ ...n, onActivePath: undefined }));
  const m = new TreeModel({ leafId: "g", nodes: bare });
  assert.equal(m.view("f").onActivePath, true);
  assert.equal(m.view("d").onActivePath, false);
  assert.equal(m.isExpanded("f"), true);
});

test("several roots are branch heads at the top level; orphans become roots", () => {
  const m = new TreeModel({
    leafId: "y",
    nodes: [
      { id: "x", parentId: null, type: "message", role: "user", childIds: [] },
      { id: "y", parentId: "missing", type: "message", role: "user", childIds: ["z"] },
      { id: "z", parentId: "y", type: "label", childIds: [] },
    ],
  });
  assert.deepEqual(m.children(), ["x", "y"]);
  assert.deepEqual(m.children("y"), ["z"]);
  assert.equal(m.displayParent("z"), "y");
  assert.equal(m.displayParent("y"), undefined);
});

test("a 10k-entry chain stays flat and is built quickly", () => {
  const many = Array.from({ length: 10000 }, (_, i) => ({
    id: `n${i}`,
    parentId: i ? `n${i - 1}` : null,
    type: "message",
    role: i % 2 ? "assistant" : "user",
    preview: `message ${i}`,
    childIds: i < 9999 ? [`n${i + 1}`] : [],
  }));
  const started = performance.now();
  const m = new TreeModel({ leafId: "n9999", nodes: many });
  assert.equal(m.children().length, 10000);
  assert.equal(m.pickRows().length, 10000);
  assert.ok(performance.now() - started < 2000);
});

test("oneLine collapses whitespace and cuts with an ellipsis", () => {
  assert.equal(oneLine("a\n\n b\tc"), "a b c");
  assert.equal(oneLine("x".repeat(100), 10), `${"x".repeat(9)}…`);
});

/** u1 → a1 [read] → t1 → a2 → c (compaction) → u2 → a3 [bash] [edit] (leaf), plus a model change in turn 1. */
function turnNodes() {
  const spec = [
    ["u1", null, "message", "user", "fix the bug"],
    ["a1", "u1", "message", "assistant", "Let me look [read]"],
    ["t1", "a1", "message", "toolResult", "file text"],
    ["m1", "t1", "model_change", null, "gpt"],
    ["a2", "m1", "message", "assistant", "Found it."],
    ["c", "a2", "compaction", null, "## Goal"],
    ["u2", "c", "message", "user", "now test it"],
    ["a3", "u2", "message", "assistant", "[bash] [edit] [bash]"],
  ];
  return spec.map(([id, parentId, type, role, preview], i) => ({
    id,
    parentId,
    type,
    role,
    preview,
    childIds: spec[i + 1] ? [spec[i + 1][0]] : [],
  }));
}

test("turns: each user message holds the assistant's work; compactions stay at the top", () => {
  const details = new Map([
    ["a1", core.entryDetail({ type: "message", message: { role: "assistant", content: [
      { type: "text", text: "Let me look" },
      { type: "toolCall", name: "read", arguments: { path: "/repo/src/agent.ts" } },
    ] } })],
    ["c", core.entryDetail({ type: "compaction", tokensBefore: 181234, summary: "## Goal" })],
  ]);
  const m = new TreeModel({ leafId: "a3", nodes: turnNodes() }, { groupTurns: true, details });
  assert.deepEqual(m.children(), ["u1", "c", "u2"]);
  assert.deepEqual(m.children("u1"), ["a1", "t1", "m1", "a2"]);
  assert.deepEqual(m.children("u2"), ["a3"]);
  assert.equal(m.displayParent("t1"), "u1");
  assert.equal(m.displayParent("u2"), undefined);
  assert.equal(m.isExpanded("u1"), false); // only the turn holding the leaf opens
  assert.equal(m.isExpanded("u2"), true);
  assert.equal(m.view("u1").description, "→ 4 steps · read");
  assert.equal(m.view("u2").description, "→ 1 step · bash ×2, edit");
  assert.equal(m.view("a1").label, "Let me look ⟨read agent.ts⟩");
  assert.equal(m.view("c").label, "Compaction (181k tokens): ## Goal");
  assert.equal(m.pickRows().length, 8);
});

test("turns keep the invariant on a tree with branches", () => {
  const m = new TreeModel({ leafId: "e", nodes: nodes(), total: 8 }, { groupTurns: true });
  const seen = [];
  const walk = (id, parent) => {
    for (const child of m.children(id)) {
      seen.push(child);
      assert.equal(m.displayParent(child), parent, `parent of ${child}`);
      walk(child, child);
    }
  };
  walk(undefined, undefined);
  assert.deepEqual(seen.sort(), nodes().map((n) => n.id).sort());
  assert.deepEqual(m.children(), ["root", "b", "c"]);
  assert.deepEqual(m.children("root"), ["a"]);
});

test("entryDetail: tool targets are short; other entries add nothing", () => {
  const call = (name, args) => ({ type: "toolCall", name, arguments: args });
  const entry = { type: "message", message: { role: "assistant", content: [
    call("bash", { command: "npm test\nmore" }), call("grep", { pattern: "TODO" }), call("think", {}),
  ] } };
  assert.deepEqual(core.entryDetail(entry), { tools: ["bash npm test", "grep TODO", "think"] });
  assert.equal(core.entryDetail({ type: "message", message: { role: "user", content: "hi" } }), undefined);
  assert.deepEqual(core.entryDetail({ type: "branch_summary", summary: "x".repeat(400) }), { tokens: 100 });
  assert.equal(core.entryDetail(undefined), undefined);
});
