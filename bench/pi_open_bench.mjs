// Pi 1.6.0 side of bench/bench_open.py: open one session file and build its context, in one fresh process.
//
//   node bench/pi_open_bench.mjs FILE
//
// Copies FILE into a fresh temp dir (Pi may write to the file it opens), then times
//   open     SessionManager.open(copy, tmpdir)
//   context  buildSessionContext(sm.getEntries(), sm.getLeafId())
// and prints one JSON line. Nothing from Pi is copied here; it is imported from tests/parity/node_modules.

import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const [file] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/pi_open_bench.mjs FILE");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "tests", "parity", "node_modules", "@earendil-works",
  "pi-coding-agent", "dist", "core");
const work = mkdtempSync(join(tmpdir(), "pi-open-bench-"));
process.env.PI_CODING_AGENT_DIR = join(work, "agent");  // keep Pi away from ~/.pi

try {
  const { SessionManager, buildSessionContext } = await import(
    pathToFileURL(join(dist, "session-manager.js")).href);
  const copy = join(work, basename(file));
  copyFileSync(resolve(file), copy);
  let t = performance.now();
  const sm = SessionManager.open(copy, work);
  const openMs = performance.now() - t;
  t = performance.now();
  const ctx = buildSessionContext(sm.getEntries(), sm.getLeafId());
  const contextMs = performance.now() - t;
  console.log(JSON.stringify({
    entries: sm.getEntries().length,
    contextMessages: ctx.messages.length,
    open_ms: openMs,
    context_ms: contextMs,
    open_context_ms: openMs + contextMs,
  }));
} finally {
  rmSync(work, { recursive: true, force: true });
}
