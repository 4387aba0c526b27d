// Differential-testing oracle: runs the real Pi 0.73.1 session/compaction code.
//
// Protocol: one JSON request per line on stdin ({"op": ..., "id"?: ..., ...params}),
// exactly one JSON line per request on stdout: {"ok": true, "result": ...} or
// {"ok": false, "error": "<message>"} (the request "id", if any, is echoed).
// A bad request never ends the process.
//
// Input files are never handed to Pi: every session file is copied into a fresh
// temp dir first, because opening a file lets Pi migrate (rewrite) or even
// truncate it. Ops see the file as Pi left it after its first open (see below).
// Nothing from Pi is copied into pi-sessiond; this file only calls it.
// Parameters and results of every op: docs/history/pi-0.73.1.md, section 0.

import {
  copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { serve } from "./serve.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core");
// Keep Pi away from the real ~/.pi even if some code path asks for the agent dir.
const agentDir = mkdtempSync(join(tmpdir(), "pi-oracle-agent-"));
process.env.PI_CODING_AGENT_DIR = agentDir;

// The package `exports` map only exposes "." and "./hooks", so deep modules are
// imported by absolute file URL (same URLs Pi uses internally, so one instance each).
const load = (rel) => import(pathToFileURL(join(dist, rel)).href);
const sessions = await load("session-manager.js");
const messagesMod = await load("messages.js");
const compaction = await load("compaction/compaction.js");
const utils = await load("compaction/utils.js");
const branches = await load("compaction/branch-summarization.js");

const { SessionManager, buildSessionContext } = sessions;

const readOrNull = (p) => (p && existsSync(p) ? readFileSync(p, "utf8") : null);

/** "__undefined__" (or a missing key) means "pass undefined" to Pi. */
const leafArg = (v) => (v === "__undefined__" ? undefined : v);

/** Run fn(dir) with a fresh temp dir that is removed afterwards. */
async function withTempDir(fn) {
  const dir = mkdtempSync(join(tmpdir(), "pi-oracle-"));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Migrating a v1 file draws fresh random ids, so every file is opened once and
// the text Pi leaves behind is cached (keyed by path, mtime and size); later ops
// open that text, which keeps ids stable across ops within one oracle process.
const openedText = new Map();

function textAfterOpen(file) {
  const st = statSync(file);
  const key = `${resolve(file)}\0${st.mtimeMs}\0${st.size}`;
  if (!openedText.has(key)) {
    const dir = mkdtempSync(join(tmpdir(), "pi-oracle-"));
    try {
      const copy = join(dir, basename(file));
      copyFileSync(file, copy);
      SessionManager.open(copy, join(dir, "sessions"));
      openedText.set(key, readOrNull(copy));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return openedText.get(key);
}

/** Open a private copy of `file` (as Pi left it after its first open); fn(sm, copyPath, dir). */
function withSession(file, fn) {
  if (typeof file !== "string") throw new Error("missing 'file'");
  return withTempDir((dir) => {
    const copy = join(dir, basename(file));
    const text = existsSync(file) ? textAfterOpen(file) : null;
    if (text !== null) writeFileSync(copy, text);
    const sm = SessionManager.open(copy, join(dir, "sessions"));
    return fn(sm, copy, dir);
  });
}

const fileOpsJson = (ops) => ({ read: [...ops.read], written: [...ops.written], edited: [...ops.edited] });

/** getTree() flattened depth-first pre-order, children in Pi's order. */
function flattenTree(roots) {
  const out = [];
  const stack = roots.map((node) => [node, 0]).reverse();
  while (stack.length > 0) {
    const [node, depth] = stack.pop();
    const { id, parentId } = node.entry;
    const childIds = node.children.map((c) => c.entry.id);
    const label = node.label ?? null;
    out.push({ id, parentId, depth, label, labelTimestamp: node.labelTimestamp ?? null, childIds });
    for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
  }
  return out;
}

/** The [start, end) range 0.73.1's prepareCompaction hands to findCutPoint. */
function compactionRange(path) {
  let prev = -1;
  for (let i = path.length - 1; i >= 0 && prev < 0; i--) if (path[i].type === "compaction") prev = i;
  if (prev < 0) return { boundaryStart: 0, boundaryEnd: path.length };
  const kept = path.findIndex((e) => e.id === path[prev].firstKeptEntryId);
  return { boundaryStart: kept >= 0 ? kept : prev + 1, boundaryEnd: path.length };
}

const serialize = (messages) => utils.serializeConversation(messagesMod.convertToLlm(messages));

function prepare(sm, leafId, settings) {
  const path = sm.getBranch(leafArg(leafId));
  const prep = compaction.prepareCompaction(path, settings ?? compaction.DEFAULT_COMPACTION_SETTINGS);
  if (!prep) {
    const none = { serialized: null, turnPrefixSerialized: null, readFiles: null, modifiedFiles: null };
    return { preparation: null, ...none, formattedFileOps: null, firstKeptIndex: null };
  }
  const { readFiles, modifiedFiles } = utils.computeFileLists(prep.fileOps);
  return {
    preparation: { ...prep, fileOps: fileOpsJson(prep.fileOps) },
    serialized: serialize(prep.messagesToSummarize),
    turnPrefixSerialized: prep.turnPrefixMessages.length > 0 ? serialize(prep.turnPrefixMessages) : "",
    readFiles,
    modifiedFiles,
    formattedFileOps: utils.formatFileOperations(readFiles, modifiedFiles),
    firstKeptIndex: path.findIndex((e) => e.id === prep.firstKeptEntryId),
  };
}

function collectBranch(sm, { oldLeafId, targetId, tokenBudget }) {
  const { entries, commonAncestorId } = branches.collectEntriesForBranchSummary(sm, oldLeafId, targetId);
  const prepared = branches.prepareBranchEntries(entries, tokenBudget ?? 0);
  const { readFiles, modifiedFiles } = utils.computeFileLists(prepared.fileOps);
  return {
    entryIds: entries.map((e) => e.id),
    commonAncestorId,
    messages: prepared.messages,
    fileOps: fileOpsJson(prepared.fileOps),
    readFiles,
    modifiedFiles,
    totalTokens: prepared.totalTokens,
  };
}

function fork(sm, copy, leafId) {
  const newFile = sm.createBranchedSession(leafId);
  return {
    sourcePath: copy,
    newFileName: newFile ? basename(newFile) : null,
    fileText: readOrNull(newFile),
    header: sm.getHeader(),
    entries: sm.getEntries(),
    leafId: sm.getLeafId(),
  };
}

const resolvedLabels = (sm) =>
  Object.fromEntries(sm.getEntries().filter((e) => sm.getLabel(e.id)).map((e) => [e.id, sm.getLabel(e.id)]));

async function list(dir) {
  if (typeof dir !== "string") throw new Error("missing 'dir'");
  const infos = await SessionManager.list(dir, dir);
  return infos.map((s) => ({ ...s, created: s.created.toJSON(), modified: s.modified.toJSON() }));
}

const ops = {
  ping: () => "pong",
  load: ({ file }) => withSession(file, (sm, copy) => ({
    header: sm.getHeader(),
    sessionId: sm.getSessionId(),
    entries: sm.getEntries(),
    leafId: sm.getLeafId(),
    fileTextAfterLoad: readOrNull(copy),
    tree: flattenTree(sm.getTree()),
    labels: resolvedLabels(sm),
    sessionName: sm.getSessionName() ?? null,
  })),
  context: ({ file, leafIds }) => withSession(file, (sm) =>
    (leafIds ?? ["__undefined__"]).map((id) => buildSessionContext(sm.getEntries(), leafArg(id)))),
  branch: ({ file, fromId }) => withSession(file, (sm) => sm.getBranch(leafArg(fromId)).map((e) => e.id)),
  estimate: ({ messages }) => ({
    perMessage: messages.map((m) => compaction.estimateTokens(m)),
    context: compaction.estimateContextTokens(messages),
  }),
  contextTokens: ({ file, leafId }) => withSession(file, (sm) =>
    compaction.estimateContextTokens(buildSessionContext(sm.getEntries(), leafArg(leafId)).messages)),
  cut: ({ file, leafId, keepRecentTokens }) => withSession(file, (sm) => {
    const path = sm.getBranch(leafArg(leafId));
    const { boundaryStart, boundaryEnd } = compactionRange(path);
    const results = keepRecentTokens.map((keep) => {
      const cut = compaction.findCutPoint(path, boundaryStart, boundaryEnd, keep);
      return { keepRecentTokens: keep, ...cut, firstKeptEntryId: path[cut.firstKeptEntryIndex]?.id ?? null };
    });
    return { pathIds: path.map((e) => e.id), boundaryStart, boundaryEnd, results };
  }),
  prepare: ({ file, leafId, settings }) => withSession(file, (sm) => prepare(sm, leafId, settings)),
  serialize: ({ messages }) => serialize(messages),
  collectBranch: (req) => withSession(req.file, (sm) => collectBranch(sm, req)),
  fork: ({ file, leafId }) => withSession(file, (sm, copy) => fork(sm, copy, leafId)),
  list: ({ dir }) => list(dir),
};

await serve(ops, () => rmSync(agentDir, { recursive: true, force: true }));
