// Differential-testing oracle for Pi 1.6.0 (@earendil-works/pi-coding-agent@1.6.0).
//
// Same line protocol as oracle.mjs (one JSON request per line on stdin, exactly
// one JSON line back: {"ok": true, "result": ...} or {"ok": false, "error": ...}).
// Input files are copied into a fresh temp dir before Pi opens them (1.6.0 may
// rewrite a migrated file or append a newline to a torn last line on open).
// Nothing from Pi is copied into pi-sessiond; this file only calls it.
//
// Determinism (docs/history/pi-0.73.1.md section 0, shared/reference/pi-1.6.md
// "How to check"): crypto.randomUUID is replaced by a counter, reset before every
// open and every write script, so the k-th id drawn is "%08x" % k; a write script
// runs under a fake clock (each argument-less `new Date()` advances one second
// from `clock`, default 2026-11-20T00:00:00.000Z). Session ids are passed in.
//
// Ops (parameters -> result):
//   ping -> "pong"
//   load {file} -> {header, entries, leafId, tree, labels, sessionName, fileTextAfterLoad}
//        or {error} when 1.6.0 refuses the file (the original is never touched)
//   context {file, leafIds?} -> per leaf: {messages, thinkingLevel, model,
//        entries: [{id, type, messages}], systemMessage}   ("__undefined__" = current leaf)
//   systemMessage {messages} -> getCurrentSystemMessage(messages) ?? null
//   write {calls, cwd?, sessionId?, clock?} -> {results, file, fileText, files, leafId, entries}
//        calls: [{method, args}] on one SessionManager.create(cwd, dir, {id}); an arg
//        {"$ref": n} is the n-th call's result (its `.id` when that is an object).
//   estimate {messages} -> {perMessage, context}
//   prepare {file, leafId?, settings?} -> {preparation (null when Pi returns none), serialized,
//        turnPrefixSerialized, readFiles, modifiedFiles, firstKeptIndex (on the path)};
//        a text Pi cannot serialize (it throws) is {"$error": message}
//   projectedTokens {file, leafId?} -> estimateProjectedContextTokens(projection, branch)
//   cut {file, leafId?, keepRecentTokens: [n]} -> {pathIds, results: [findCutPoint(path, 0, len, n)]}
//   serialize {messages} / collectBranch {file, oldLeafId, targetId, tokenBudget?}
//   fork {file, leafId} -> {sourcePath, newFileName, fileText, header, entries, leafId} after
//        createBranchedSession(leafId) (label ids from the counter)
//   stats {file, contextWindow?} -> AgentSession.getSessionStats() (with its contextUsage for a
//        model of that window) on the opened file. Needs Node >= 22.19 (agent-session.js and what it
//        imports); run this oracle with PiOracle(version="1.6.0", node=<Node 24>) for it.

import crypto from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { serve } from "./serve.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "node_modules", "@earendil-works", "pi-coding-agent");
const dist = join(root, "dist", "core");
const agentDir = mkdtempSync(join(tmpdir(), "pi16-oracle-agent-"));
process.env.PI_CODING_AGENT_DIR = agentDir;

let counter = 0;
crypto.randomUUID = () => `${(++counter).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
syncBuiltinESMExports();
const resetIds = () => {
  counter = 0;
};

const load = (rel) => import(pathToFileURL(join(dist, rel)).href);
const sessions = await load("session-manager.js");
const messagesMod = await load("messages.js");
const compaction = await load("compaction/compaction.js");
const utils = await load("compaction/utils.js");
const branches = await load("compaction/branch-summarization.js");
const piAi = await import(pathToFileURL(join(here, "node_modules", "@earendil-works", "pi-ai", "dist", "index.js")).href);

const { SessionManager, buildSessionProjection } = sessions;
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;

const readOrNull = (p) => (p && existsSync(p) ? readFileSync(p, "utf8") : null);
const leafArg = (v) => (v === "__undefined__" ? undefined : v);

async function withTempDir(fn) {
  const dir = mkdtempSync(join(tmpdir(), "pi16-oracle-"));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Open a private copy of `file` with deterministic migration ids; fn(sm, copyPath, dir). */
function withSession(file, fn) {
  if (typeof file !== "string") throw new Error("missing 'file'");
  return withTempDir((dir) => {
    const copy = join(dir, basename(file));
    if (existsSync(file)) writeFileSync(copy, readFileSync(file));
    resetIds();
    const sm = SessionManager.open(copy, join(dir, "sessions"));
    return fn(sm, copy, dir);
  });
}

function flattenTree(roots) {
  const out = [];
  const stack = roots.map((node) => [node, 0]).reverse();
  while (stack.length > 0) {
    const [node, depth] = stack.pop();
    const { id, parentId } = node.entry;
    const childIds = node.children.map((c) => c.entry.id);
    out.push({ id, parentId, depth, label: node.label ?? null, labelTimestamp: node.labelTimestamp ?? null, childIds });
    for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
  }
  return out;
}

const resolvedLabels = (sm) =>
  Object.fromEntries(sm.getEntries().filter((e) => sm.getLabel(e.id)).map((e) => [e.id, sm.getLabel(e.id)]));

async function loadOp({ file }) {
  try {
    return await withSession(file, (sm, copy) => ({
      header: sm.getHeader(),
      entries: sm.getEntries(),
      leafId: sm.getLeafId(),
      tree: flattenTree(sm.getTree()),
      labels: resolvedLabels(sm),
      sessionName: sm.getSessionName() ?? null,
      fileTextAfterLoad: readOrNull(copy),
    }));
  } catch (err) {
    return { error: err instanceof Error ? err.message.replace(/: \S*$/, ": <path>") : String(err) };
  }
}

function contextAt(sm, leafId) {
  const projection = buildSessionProjection(sm.getEntries(), leafArg(leafId));
  return {
    messages: projection.messages,
    thinkingLevel: projection.thinkingLevel,
    model: projection.model,
    entries: projection.entries.map((e) => ({ id: e.sourceEntry.id, type: e.sourceEntry.type, messages: e.messages })),
    systemMessage: piAi.getCurrentSystemMessage(projection.messages) ?? null,
  };
}

// ------------------------------------------------------------------ writing
const RealDate = Date;
function installClock(startIso) {
  let now = new RealDate(startIso ?? "2026-11-20T00:00:00.000Z").getTime();
  class FakeDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) {
        super(now);
        now += 1000;
      } else {
        super(...args);
      }
    }
    static now() {
      return now;
    }
  }
  globalThis.Date = FakeDate;
}

function resolveRefs(value, results) {
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, results));
  if (value && typeof value === "object") {
    if (Object.keys(value).length === 1 && "$ref" in value) {
      const found = results[value.$ref];
      return found && typeof found === "object" && "id" in found ? found.id : found;
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRefs(v, results)]));
  }
  return value;
}

function write({ calls, cwd, sessionId, clock }) {
  if (!Array.isArray(calls)) throw new Error("missing 'calls'");
  return withTempDir((dir) => {
    installClock(clock);
    try {
      resetIds();
      const sm = SessionManager.create(cwd ?? "/work/project", dir, { id: sessionId ?? "0190a000-0000-7000-8000-000000000001" });
      const results = [];
      for (const [index, call] of calls.entries()) {
        const fn = sm[call.method];
        if (typeof fn !== "function") throw new Error(`call ${index}: no method ${call.method}`);
        try {
          const value = fn.apply(sm, resolveRefs(call.args ?? [], results));
          results.push(value === undefined ? null : value);
        } catch (err) {
          throw new Error(`call ${index} (${call.method}): ${err instanceof Error ? err.message : err}`);
        }
      }
      const file = sm.getSessionFile();
      const files = Object.fromEntries(
        readdirSync(dir).filter((n) => n.endsWith(".jsonl")).map((n) => [n, readFileSync(join(dir, n), "utf8")]),
      );
      return {
        results,
        file: file ? basename(file) : null,
        fileText: readOrNull(file),
        files,
        leafId: sm.getLeafId(),
        entries: sm.getEntries(),
      };
    } finally {
      globalThis.Date = RealDate;
    }
  });
}

// -------------------------------------------- compaction (for later parity work)
const fileOpsJson = (ops) => ({ read: [...ops.read], written: [...ops.written], edited: [...ops.edited] });
const serialize = (messages) => utils.serializeConversation(messagesMod.convertToLlm(messages));
const safeSerialize = (messages) => {
  try {
    return serialize(messages);
  } catch (err) {
    return { $error: err instanceof Error ? err.message : String(err) };
  }
};

function prepare(sm, leafId, settings) {
  const path = sm.getBranch(leafArg(leafId));
  const prep = compaction.prepareCompaction(path, settings ?? compaction.DEFAULT_COMPACTION_SETTINGS);
  if (!prep) return { preparation: null };
  const { readFiles, modifiedFiles } = utils.computeFileLists(prep.fileOps);
  return {
    preparation: { ...prep, fileOps: fileOpsJson(prep.fileOps) },
    serialized: safeSerialize(prep.messagesToSummarize),
    turnPrefixSerialized: prep.turnPrefixMessages.length > 0 ? safeSerialize(prep.turnPrefixMessages) : "",
    readFiles,
    modifiedFiles,
    firstKeptIndex: path.findIndex((e) => e.id === prep.firstKeptEntryId),
  };
}

function collectBranch(sm, { oldLeafId, targetId, tokenBudget }) {
  const { entries, commonAncestorId } = branches.collectEntriesForBranchSummary(sm, oldLeafId, targetId);
  const prepared = branches.prepareBranchEntries(entries, tokenBudget ?? 0);
  return {
    entryIds: entries.map((e) => e.id),
    commonAncestorId,
    messages: prepared.messages,
    fileOps: fileOpsJson(prepared.fileOps),
    totalTokens: prepared.totalTokens,
  };
}

function cut(sm, { leafId, keepRecentTokens }) {
  const path = sm.getBranch(leafArg(leafId));
  return {
    pathIds: path.map((e) => e.id),
    results: keepRecentTokens.map((keep) => compaction.findCutPoint(path, 0, path.length, keep)),
  };
}

function fork(sm, copy, { leafId }) {
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

let agentSessionModule = null;
/** AgentSession's own getSessionStats/getContextUsage, called on a minimal `this` (no agent, no model). */
async function stats({ file, contextWindow }) {
  agentSessionModule ??= await load("agent-session.js");
  const proto = agentSessionModule.AgentSession.prototype;
  return withSession(file, (sm) => {
    const self = {
      sessionManager: sm,
      sessionFile: sm.getSessionFile(),
      sessionId: sm.getSessionId(),
      _limitsModel: () => (contextWindow ? { contextWindow } : undefined),
    };
    self.getContextUsage = () => proto.getContextUsage.call(self);
    const result = proto.getSessionStats.call(self);
    return { ...result, sessionFile: undefined };
  });
}

const ops = {
  ping: () => "pong",
  version: () => version,
  load: loadOp,
  context: ({ file, leafIds }) => withSession(file, (sm) => (leafIds ?? ["__undefined__"]).map((id) => contextAt(sm, id))),
  systemMessage: ({ messages }) => piAi.getCurrentSystemMessage(messages) ?? null,
  write,
  estimate: ({ messages }) => ({
    perMessage: messages.map((m) => compaction.estimateTokens(m)),
    context: compaction.estimateContextTokens(messages),
  }),
  projectedTokens: ({ file, leafId }) => withSession(file, (sm) =>
    compaction.estimateProjectedContextTokens(buildSessionProjection(sm.getEntries(), leafArg(leafId)),
      sm.getBranch(leafArg(leafId)))),
  prepare: ({ file, leafId, settings }) => withSession(file, (sm) => prepare(sm, leafId, settings)),
  serialize: ({ messages }) => serialize(messages),
  collectBranch: (req) => withSession(req.file, (sm) => collectBranch(sm, req)),
  cut: (req) => withSession(req.file, (sm) => cut(sm, req)),
  fork: (req) => withSession(req.file, (sm, copy) => fork(sm, copy, req)),
  stats,
};

await serve(ops, () => rmSync(agentDir, { recursive: true, force: true }));
