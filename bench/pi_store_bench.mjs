// Pi 1.6.0 side of bench/bench_store.py: one session file, one fresh node process.
//
//   node bench/pi_store_bench.mjs FILE ITERATIONS
//
// Copies FILE into a fresh temp dir (Pi may write to the file it opens), then times
//   open      SessionManager.open(copy, tmpdir)
//   context   buildSessionContext(sm.getEntries(), sm.getLeafId())  (once, after open)
//   append    ITERATIONS x { sm.appendMessage(user "x"); sm.buildSessionContext() }
//   edit      ITERATIONS x { id = sm.appendMessage(user "x");
//                            sm.appendContextEdit(id, i odd ? null : {content: "edited"});
//                            sm.buildSessionContext() }
// and prints one JSON line. Pi keeps persisting: each append is an appendFileSync
// to the temp copy (no fsync); that cost is inside the append numbers.
// Nothing from Pi is copied here; it is imported from tests/parity/node_modules.

import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const [file, iterArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/pi_store_bench.mjs FILE [ITERATIONS]");
  process.exit(2);
}
const iterations = Number(iterArg ?? 200);

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "tests", "parity", "node_modules", "@earendil-works",
  "pi-coding-agent", "dist", "core");
const work = mkdtempSync(join(tmpdir(), "pi-bench-"));
process.env.PI_CODING_AGENT_DIR = join(work, "agent");  // keep Pi away from ~/.pi

try {
  const { SessionManager, buildSessionContext } = await import(
    pathToFileURL(join(dist, "session-manager.js")).href);
  const copy = join(work, basename(file));
  copyFileSync(resolve(file), copy);
  const rssBefore = process.memoryUsage().rss;

  let t = performance.now();
  const sm = SessionManager.open(copy, work);
  const openMs = performance.now() - t;

  t = performance.now();
  const ctx = buildSessionContext(sm.getEntries(), sm.getLeafId());
  const contextMs = performance.now() - t;

  const perOp = [];
  let lastCount = 0;
  for (let i = 0; i < iterations; i++) {
    t = performance.now();
    sm.appendMessage({ role: "user", content: "x", timestamp: 0 });
    lastCount = sm.buildSessionContext().messages.length;
    perOp.push(performance.now() - t);
  }
  const editOp = [];
  let editCount = 0;
  for (let i = 0; i < iterations; i++) {
    t = performance.now();
    const id = sm.appendMessage({ role: "user", content: "x", timestamp: 0 });
    sm.appendContextEdit(id, i % 2 ? null : { content: "edited" });
    editCount = sm.buildSessionContext().messages.length;
    editOp.push(performance.now() - t);
  }
  const sorted = [...perOp].sort((a, b) => a - b);
  const total = perOp.reduce((a, b) => a + b, 0);
  const editSorted = [...editOp].sort((a, b) => a - b);
  const editTotal = editOp.reduce((a, b) => a + b, 0);
  console.log(JSON.stringify({
    impl: "pi",
    entries: sm.getEntries().length - 3 * iterations,
    contextMessages: ctx.messages.length,
    finalMessages: lastCount,
    open_ms: openMs,
    context_ms: contextMs,
    append_ctx_mean_ms: iterations ? total / iterations : null,
    append_ctx_p50_ms: iterations ? sorted[Math.floor(iterations / 2)] : null,
    append_ctx_max_ms: iterations ? sorted[iterations - 1] : null,
    edit_messages: editCount,
    append_edit_ctx_mean_ms: iterations ? editTotal / iterations : null,
    append_edit_ctx_p50_ms: iterations ? editSorted[Math.floor(iterations / 2)] : null,
    append_edit_ctx_max_ms: iterations ? editSorted[iterations - 1] : null,
    rss_before_open_kb: Math.round(rssBefore / 1024),
    rss_end_kb: Math.round(process.memoryUsage().rss / 1024),
    max_rss_kb: process.resourceUsage().maxRSS,
    writes: "appendFileSync to a temp copy",
  }));
} finally {
  rmSync(work, { recursive: true, force: true });
}
