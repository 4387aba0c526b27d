// Pi 1.6.0 side of bench/bench_prepare.py: one session file, one fresh node process.
//
//   node bench/pi_prepare_bench.mjs FILE CALLS
//
// Copies FILE into a fresh temp dir (Pi may write to the file it opens), opens it with
// SessionManager.open(copy, tmpdir) (timed as open_ms only), then CALLS times:
//   path        path = sm.getBranch()
//   prepare     prepareCompaction(path, settings)
//   serialize   serializeConversation(convertToLlm(prep.messagesToSummarize))
// each timed on its own; before every call but the first, one user message is appended
// under the leaf (sm.appendMessage, untimed; the same message as bench_prepare.py APPENDED).
// with settings = {enabled: true, reserveTokens: 16384, keepRecentTokens: 20000}.
// Prints one JSON line: every call's times (ms), the first call, the median of the
// other calls, and what the driver checks against our side (first kept id, counts,
// tokensBefore, sha1 of the serialized text).
// Nothing from Pi is copied here; it is imported from tests/parity/node_modules.

import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const [file, callsArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/pi_prepare_bench.mjs FILE [CALLS]");
  process.exit(2);
}
const calls = Math.max(2, Number(callsArg ?? 5));
const settings = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };
const appended = { role: "user", content: "Go on with the next step and keep the tests green.", timestamp: 0 };

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "tests", "parity", "node_modules", "@earendil-works",
  "pi-coding-agent", "dist", "core");
const work = mkdtempSync(join(tmpdir(), "pi-bench-"));
process.env.PI_CODING_AGENT_DIR = join(work, "agent");  // keep Pi away from ~/.pi

// The package `exports` map hides these modules: import them by file URL (as tests/parity/oracle.mjs).
const load = (rel) => import(pathToFileURL(join(dist, rel)).href);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

try {
  const { SessionManager } = await load("session-manager.js");
  const { prepareCompaction } = await load("compaction/compaction.js");
  const { serializeConversation } = await load("compaction/utils.js");
  const { convertToLlm } = await load("messages.js");
  const copy = join(work, basename(file));
  copyFileSync(resolve(file), copy);

  let t = performance.now();
  const sm = SessionManager.open(copy, work);
  const openMs = performance.now() - t;

  const branchMs = [], prepareMs = [], serializeMs = [];
  let prep, text, pathLength = 0;
  for (let i = 0; i < calls; i++) {
    if (i > 0) sm.appendMessage({ ...appended });  // a new message before every later call (untimed)
    t = performance.now();
    const path = sm.getBranch();
    const t1 = performance.now();
    prep = prepareCompaction(path, settings);
    const t2 = performance.now();
    text = prep ? serializeConversation(convertToLlm(prep.messagesToSummarize)) : null;
    const t3 = performance.now();
    branchMs.push(t1 - t);
    prepareMs.push(t2 - t1);  // prepareCompaction only (getBranch is branchMs)
    serializeMs.push(t3 - t2);
    pathLength = path.length;
  }
  const both = prepareMs.map((p, i) => p + serializeMs[i]);
  console.log(JSON.stringify({
    impl: "pi",
    entries: sm.getEntries().length,
    pathLength,
    firstKeptEntryId: prep?.firstKeptEntryId ?? null,
    messagesToSummarize: prep ? prep.messagesToSummarize.length : null,
    turnPrefixMessages: prep ? prep.turnPrefixMessages.length : null,
    isSplitTurn: prep?.isSplitTurn ?? null,
    tokensBefore: prep?.tokensBefore ?? null,
    serializedSha1: text === null ? null : createHash("sha1").update(text, "utf8").digest("hex"),
    calls,
    open_ms: openMs,
    path_first_ms: branchMs[0],
    path_ms: median(branchMs.slice(1)),
    prepare_first_ms: prepareMs[0],
    prepare_ms: median(prepareMs.slice(1)),
    serialize_first_ms: serializeMs[0],
    serialize_ms: median(serializeMs.slice(1)),
    prepare_serialize_first_ms: both[0],
    prepare_serialize_ms: median(both.slice(1)),
    per_call: { path_ms: branchMs, prepare_ms: prepareMs, serialize_ms: serializeMs },
  }));
} finally {
  rmSync(work, { recursive: true, force: true });
}
