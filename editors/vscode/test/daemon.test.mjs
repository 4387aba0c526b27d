// The extension's protocol glue against the REAL daemon over vscode-jsonrpc: open, tree, context,
// compaction with progress (client- and server-created tokens), cancellation, navigation with a
// summary, the reviewSummary hook, settings. Needs `$PI_SESSIOND_PYTHON -m pi_sessiond serve`.
import assert from "node:assert/strict";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { core, makeWorkspace, nextEvent, requireDaemon, rpc, stallingProvider, startDaemon } from "./support.mjs";

const gate = requireDaemon();
const CANCELLED = -32800;

describe("the real daemon through vscode-jsonrpc", gate, () => {
  let workspace;
  let daemon;

  before(async () => {
    workspace = makeWorkspace();
    daemon = await startDaemon(workspace, { settings: { tokenizer: "pi", "compaction.keepRecentTokens": 20000 } });
  });

  after(async () => {
    if (daemon) assert.equal(await daemon.close(), 0, daemon.stderr());
  });

  test("initialize carries the extension's options; the daemon reports them as 'initialize'", async () => {
    assert.deepEqual(daemon.initializationOptions, {
      settings: { tokenizer: "pi", compaction: { keepRecentTokens: 20000 } },
      sessionsDir: workspace.sessionsDir,
    });
    const { settings, sources } = await daemon.pi.getSettings();
    assert.equal(settings.compaction.keepRecentTokens, 20000);
    assert.equal(sources["compaction.keepRecentTokens"], "initialize");
    assert.equal(sources["compaction.reserveTokens"], "default");
  });

  test("open, list, getTree → TreeModel, getContext, getStats → status bar", async () => {
    const file = workspace.copy("tree.jsonl");
    const info = await daemon.pi.openSession(file);
    assert.equal(info.entryCount, 399);
    const sessions = await daemon.pi.listSessions();
    assert.ok(sessions.some((s) => s.path === file), JSON.stringify(sessions));

    const tree = await daemon.pi.getTree(info.sessionId, 150); // paged as the extension pages
    assert.equal(tree.nodes.length, 399);
    const model = new core.TreeModel(tree);
    assert.equal(model.leafId, info.leafId);
    assert.equal(model.children().length, 399, "a linear session is one flat chain");
    assert.equal(model.view(info.leafId).isLeaf, true);
    assert.equal(model.pickRows().length, 399);
    assert.ok(tree.nodes.every((n) => n.onActivePath));

    const context = await daemon.pi.getContext(info.sessionId);
    assert.ok(context.messages.length > 300);
    assert.ok(context.tokens > 0);
    assert.match(core.contextMarkdown(context, "tree"), /^# Context of tree\n/);

    const stats = await daemon.pi.getStats(info.sessionId);
    assert.equal(stats.contextWindow, 200000); // claude-sonnet-4-5 from the session's model_change
    assert.match(core.statusView(stats, 16384).text, /^Pi \d+% · [\d.]+k\/200k$/);
  });

  test("unknown sessions fail with -32001 and a friendly message", async () => {
    await assert.rejects(daemon.pi.getStats("no-such-session"), (error) => {
      assert.equal(error.code, -32001);
      assert.equal(core.errorReason(error), "unknownSession");
      assert.match(core.describeError(error), /no longer open/);
      return true;
    });
  });

  test("compact with a client-created workDoneToken: begin → reports → end, one entry appended", async () => {
    const file = workspace.copy("compact.jsonl");
    const info = await daemon.pi.openSession(file);
    const lines = readFileSync(file, "utf8").split("\n").length;
    const values = [];
    const compacted = nextEvent((cb) => daemon.pi.onCompacted(cb), 30000, "pi/compacted");
    const changed = nextEvent((cb) => daemon.pi.onSessionChanged((e) => e.sessionId === info.sessionId && cb(e)), 30000);
    const result = await daemon.pi.compact(info.sessionId, "focus on the migration", { onProgress: (v) => values.push(v) });
    assert.equal(result.entry.type, "compaction");
    assert.ok(result.tokensAfter < result.tokensBefore, JSON.stringify(result));
    assert.equal(values[0].kind, "begin");
    assert.equal(values[0].cancellable, true);
    assert.equal(values.at(-1).kind, "end");
    assert.ok(values.some((v) => v.kind === "report" && v.message), JSON.stringify(values));
    assert.equal((await compacted).reason, "manual");
    assert.equal((await changed).sessionId, info.sessionId);
    assert.equal(readFileSync(file, "utf8").split("\n").length, lines + 1);

    const model = new core.TreeModel(await daemon.pi.getTree(info.sessionId));
    const view = model.view(result.entry.id);
    assert.equal(view.icon, "debug-stackframe"); // the new leaf
    assert.equal(view.contextValue, "entry-summary-leaf");
    const [entry] = await daemon.pi.getEntries(info.sessionId, [result.entry.id]);
    assert.match(core.summaryMarkdown(entry), /^# Compaction `/);
  });

  test("the real Pi fixture (v1, 1003 lines): open, context as Pi builds it, compact with progress", async (t) => {
    const fixture = path.resolve(import.meta.dirname, "../../../../shared/fixtures/pi/before-compaction.jsonl");
    if (!existsSync(fixture)) {
      if (process.env.CI === "true") throw new Error(`required in CI: ${fixture}`);
      t.skip(`Pi fixture not found at ${fixture}`);
      return;
    }
    const file = path.join(workspace.sessionsDir, "fixture.jsonl");
    copyFileSync(fixture, file);
    const info = await daemon.pi.openSession(file);
    assert.equal(info.entryCount, 1002);
    const context = await daemon.pi.getContext(info.sessionId);
    assert.equal(context.messages.length, 446);
    assert.equal(context.tokens, 180820);
    const values = [];
    const result = await daemon.pi.compact(info.sessionId, undefined, { onProgress: (v) => values.push(v) });
    assert.equal(values[0].kind, "begin");
    assert.equal(values.at(-1).kind, "end");
    assert.equal(result.tokensBefore, 180820);
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    assert.equal(lines.length, 1004); // migrated to v3 once, plus the compaction
    assert.equal(JSON.parse(lines.at(-1)).type, "compaction");
  });

  test("compact with a server-created token (window/workDoneProgress/create)", async () => {
    const info = await daemon.pi.openSession(workspace.copy("server-token.jsonl"));
    const values = [];
    const created = [];
    const sub = daemon.conn.onRequest("window/workDoneProgress/create", ({ token }) => {
      created.push(token);
      daemon.conn.onProgress(core.workDoneProgress, token, (v) => values.push(v));
      return null;
    });
    try {
      const result = await daemon.pi.compact(info.sessionId);
      assert.equal(result.entry.type, "compaction");
    } finally {
      sub.dispose();
    }
    assert.equal(created.length, 1);
    assert.deepEqual([values[0]?.kind, values.at(-1)?.kind], ["begin", "end"]);
  });

  test("navigate with a summary: branch summary written, leaf moved, pi/treeNavigated", async () => {
    const file = workspace.copy("navigate.jsonl");
    const info = await daemon.pi.openSession(file);
    const before = new core.TreeModel(await daemon.pi.getTree(info.sessionId));
    const target = before.children().find((id, index) => index > 200 && before.node(id).role === "assistant");

    const values = [];
    const navigated = nextEvent((cb) => daemon.pi.onTreeNavigated(cb), 30000, "pi/treeNavigated");
    const choice = core.navigateOptions(core.NAVIGATE_CHOICES[2], "what was tried");
    const result = await daemon.pi.navigateTree(info.sessionId, target, choice, { onProgress: (v) => values.push(v) });
    assert.equal(result.cancelled, false);
    assert.equal(result.entry.type, "branch_summary");
    assert.equal((await navigated).leafId, result.leafId);
    assert.deepEqual([values[0]?.kind, values.at(-1)?.kind], ["begin", "end"]);

    const after = new core.TreeModel(await daemon.pi.getTree(info.sessionId));
    assert.equal(after.leafId, result.leafId);
    assert.equal(after.children(target).length, 2, "the target is now a branch point");
    assert.equal(after.view(result.entry.id).contextValue.startsWith("entry-summary"), true);
    assert.equal(after.isExpanded(target), true);

    // Pi's "No summary": the leaf moves, nothing is written (Pi never stores the leaf).
    const bytes = readFileSync(file);
    const plain = await daemon.pi.navigateTree(info.sessionId, before.children()[100], core.navigateOptions(core.NAVIGATE_CHOICES[0]));
    assert.equal(plain.cancelled, false);
    assert.equal(plain.entry ?? undefined, undefined);
    assert.ok(readFileSync(file).equals(bytes), "navigating without a summary writes nothing");
    assert.equal(new core.TreeModel(await daemon.pi.getTree(info.sessionId)).leafId, plain.leafId);
  });

  test("setLabel and fork", async () => {
    const info = await daemon.pi.openSession(workspace.copy("label.jsonl"));
    const target = (await daemon.pi.getTree(info.sessionId)).nodes[10].id;
    await daemon.pi.setLabel(info.sessionId, target, "checkpoint");
    const model = new core.TreeModel(await daemon.pi.getTree(info.sessionId));
    assert.equal(model.node(target).label, "checkpoint");
    assert.match(model.view(target).description, /\[checkpoint\]/);
    const forked = await daemon.pi.fork(info.sessionId, target);
    assert.notEqual(forked.sessionId, info.sessionId);
    assert.ok(forked.path && readFileSync(forked.path, "utf8").length > 0);
  });

  test("workspace/didChangeConfiguration reaches the daemon", async () => {
    await daemon.pi.didChangeConfiguration(core.piSettings((key) => ({ "compaction.reserveTokens": 12345 })[key]));
    const deadline = Date.now() + 5000;
    let reserve;
    while (Date.now() < deadline) {
      reserve = core.effectiveReserve(await daemon.pi.getSettings());
      if (reserve === 12345) break;
    }
    assert.equal(reserve, 12345);
  });
});

describe("cancellation stops a running summary", gate, () => {
  let workspace;
  let provider;
  let daemon;

  before(async () => {
    workspace = makeWorkspace();
    provider = await stallingProvider();
    daemon = await startDaemon(workspace, { settings: provider.settings, env: provider.env });
  });

  after(async () => {
    if (daemon) assert.equal(await daemon.close(), 0, daemon.stderr());
    await provider?.close();
  });

  test("$/cancelRequest (the notification's cancel button) → -32800, HTTP call closed, file byte-identical", async () => {
    const file = workspace.copy("cancel.jsonl");
    const info = await daemon.pi.openSession(file);
    const bytes = readFileSync(file);
    const source = new rpc.CancellationTokenSource();
    const values = [];
    const running = daemon.pi.compact(info.sessionId, undefined, { token: source.token, onProgress: (v) => values.push(v) });
    assert.equal(await withTimeout(provider.state.received, 20000, "the summarizer's HTTP request"), "/v1/chat/completions");
    source.cancel();
    await assert.rejects(running, (error) => error.code === CANCELLED && core.isCancelled(error));
    assert.equal(await withTimeout(provider.state.disconnected, 5000, "the HTTP call to close"), true);
    assert.ok(readFileSync(file).equals(bytes), "nothing was written");
    assert.equal(values[0]?.kind, "begin");
  });

  test("window/workDoneProgress/cancel on a server-created bar → -32800, file byte-identical", async () => {
    const file = workspace.copy("cancel-bar.jsonl");
    const info = await daemon.pi.openSession(file);
    const bytes = readFileSync(file);
    const requestsBefore = provider.state.requests;
    let token;
    const sub = daemon.conn.onRequest("window/workDoneProgress/create", (params) => {
      token = params.token;
      return null;
    });
    try {
      const running = daemon.pi.compact(info.sessionId);
      const deadline = Date.now() + 20000;
      while ((token === undefined || provider.state.requests === requestsBefore) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.notEqual(token, undefined, "the daemon created a progress token");
      await daemon.conn.sendNotification("window/workDoneProgress/cancel", { token });
      await assert.rejects(running, (error) => error.code === CANCELLED);
    } finally {
      sub.dispose();
    }
    assert.ok(readFileSync(file).equals(bytes), "nothing was written");
  });
});

describe("the reviewSummary hook (pi.reviewSummaries)", gate, () => {
  let workspace;
  let daemon;
  let script = [];

  before(async () => {
    workspace = makeWorkspace();
    daemon = await startDaemon(workspace, { reviewSummaries: true });
    // The same state machine the extension runs; the "person" clicks through `script`.
    daemon.pi.handleReviewSummary(async (params, token) => {
      let text = params.summary;
      const answer = await core.runReview(
        params,
        async () => {
          const step = script.shift();
          if (step?.edit !== undefined) text = step.edit;
          return step?.button;
        },
        () => text,
        () => token.isCancellationRequested,
      );
      return answer ?? { action: "reject" };
    });
  });

  after(async () => {
    if (daemon) assert.equal(await daemon.close(), 0, daemon.stderr());
  });

  test("the daemon offers the hook the extension declares", () => {
    assert.deepEqual(core.piCapabilities(true).pi.hooks, ["reviewSummary"]);
    assert.ok(daemon.init.capabilities.experimental.pi.hooks.includes("reviewSummary"), JSON.stringify(daemon.init));
  });

  test("accept writes the proposed summary", async () => {
    const info = await daemon.pi.openSession(workspace.copy("accept.jsonl"));
    script = [{ button: "Accept" }];
    const result = await daemon.pi.compact(info.sessionId);
    assert.equal(script.length, 0, "the reviewer was asked");
    assert.match(result.entry.summary, /\S/);
    assert.notEqual(result.entry.summary, "edited");
  });

  test("edit writes the person's text", async () => {
    const info = await daemon.pi.openSession(workspace.copy("edit.jsonl"));
    script = [{ button: "Edit" }, { button: "Accept", edit: "## Goal\nEdited by the reviewer." }];
    const result = await daemon.pi.compact(info.sessionId);
    assert.equal(result.entry.summary, "## Goal\nEdited by the reviewer.");
    const [stored] = await daemon.pi.getEntries(info.sessionId, [result.entry.id]);
    assert.equal(stored.summary, "## Goal\nEdited by the reviewer.");
  });

  test("reject answers -32800 and writes nothing", async () => {
    const file = workspace.copy("reject.jsonl");
    const info = await daemon.pi.openSession(file);
    const bytes = readFileSync(file);
    script = [{ button: "Reject" }];
    await assert.rejects(daemon.pi.compact(info.sessionId), (error) => error.code === CANCELLED);
    assert.ok(readFileSync(file).equals(bytes));
  });

  test("a branch summary is reviewed too (edit)", async () => {
    const info = await daemon.pi.openSession(workspace.copy("branch-review.jsonl"));
    const model = new core.TreeModel(await daemon.pi.getTree(info.sessionId));
    const target = model.children().find((id, index) => index > 200 && model.node(id).role === "assistant");
    script = [{ button: "Accept", edit: "Branch summary by the reviewer." }];
    const result = await daemon.pi.navigateTree(info.sessionId, target, { summarize: true });
    assert.equal(result.entry.type, "branch_summary");
    assert.equal(result.entry.summary, "Branch summary by the reviewer.");
  });
});

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
