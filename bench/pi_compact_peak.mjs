// Pi 1.6.0 side of bench/bench_scale.py's compact-rss part: what Pi holds on the way to its summary request.
//
//   node bench/pi_compact_peak.mjs FILE
//
// Copies FILE into a fresh temp dir (Pi may write to the file it opens), opens it with
// SessionManager.open, takes the leaf's path, runs prepareCompaction (default settings) and
// serializes the messages to summarize (serializeConversation(convertToLlm(...))), the text
// Pi's summary request is built from. Prints one JSON line: the process's peak RSS (VmHWM, kB),
// its RSS before the file was opened (the floor, kB) and how many messages were serialized.
// The request itself (a network call) is not made. Nothing from Pi is copied here; it is
// imported from tests/parity/node_modules.

import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [file] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/pi_compact_peak.mjs FILE");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "tests", "parity", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "core");
const work = mkdtempSync(join(tmpdir(), "pi-peak-"));
process.env.PI_CODING_AGENT_DIR = join(work, "agent");
const load = (rel) => import(pathToFileURL(join(dist, rel)).href);  // the exports map hides these modules
const { SessionManager } = await load("session-manager.js");
const { prepareCompaction, DEFAULT_COMPACTION_SETTINGS } = await load("compaction/compaction.js");
const { serializeConversation } = await load("compaction/utils.js");
const { convertToLlm } = await load("messages.js");
const status = (key) => Number(readFileSync("/proc/self/status", "utf8").match(new RegExp(`${key}:\\s+(\\d+)`))[1]);

const floor = status("VmRSS");
const copy = join(work, basename(file));
copyFileSync(file, copy);
try {
  const sm = SessionManager.open(copy, dirname(copy));
  const prep = prepareCompaction(sm.getBranch(), DEFAULT_COMPACTION_SETTINGS);
  const text = prep ? serializeConversation(convertToLlm(prep.messagesToSummarize)) : "";
  console.log(JSON.stringify({ peakKB: status("VmHWM"), floorKB: floor,
    messages: prep ? prep.messagesToSummarize.length : 0, serializedChars: text.length }));
} finally {
  rmSync(work, { recursive: true, force: true });
}
