/**
 * Preview, edit, commit and undo of a compaction, as pure functions the editor
 * adapters share.
 *
 * A draft (`pi/compact {draft: true}` → DRAFT) opens as a Markdown document:
 * a header comment saying what the summary replaces, the tokens before → after
 * and what the fidelity gate added, then the summary itself. Invariants:
 * `draftSummary(draftDocument(d, …))` is exactly `d.summary`; the header never
 * contains `-->` before its own end, so whatever the person writes below it is
 * the summary; a commit carries `summary` only when the text differs from the
 * draft's (`commitSummary`), so an unchanged draft is written as the daemon made it.
 */
import type { CompactResult, Draft, TreeNode, UndoResult } from "../protocol";
import { oneLine, rootPath } from "./nodes";
import { formatTokens } from "./status";

/** The first characters of every draft document (how a draft is recognised). */
export const DRAFT_MARK = "<!-- pi-sessiond draft";
const HEADER_END = "-->";

/** The messages a compaction of the leaf summarizes, on the path to the leaf. */
export interface ReplacedRange {
  /** Messages (user, assistant, tool results, branch summaries, custom messages) summarized. */
  count: number;
  first?: TreeNode;
  last?: TreeNode;
  /** The first kept entry (undefined when nothing is kept). */
  kept?: TreeNode;
  /** True when the range starts after an earlier compaction, whose summary is folded in. */
  previousSummary: boolean;
}

const MESSAGE_TYPES = new Set(["message", "branch_summary", "custom_message"]);

/**
 * Pi's compaction range: from the newest earlier compaction's first kept entry on the
 * path (else the entry after that compaction, else the start) up to `firstKeptEntryId`
 * (exclusive; `null`: everything). `firstKeptOf` gives a compaction's `firstKeptEntryId`.
 */
export function replacedRange(
  nodes: readonly TreeNode[],
  leafId: string | null | undefined,
  firstKeptEntryId: string | null | undefined,
  firstKeptOf: (compactionId: string) => string | null | undefined = () => undefined,
): ReplacedRange {
  const path = rootPath(nodes, leafId);
  const ids = path.map((node) => node.id);
  const previous = path.map((node) => node.type).lastIndexOf("compaction");
  let start = 0;
  if (previous >= 0) {
    const keptBefore = ids.indexOf(firstKeptOf(ids[previous] ?? "") ?? "");
    start = keptBefore >= 0 && keptBefore < previous ? keptBefore : previous + 1;
  }
  const keptAt = firstKeptEntryId ? ids.indexOf(firstKeptEntryId) : -1;
  const end = keptAt >= 0 ? keptAt : path.length;
  const messages = path.slice(start, end).filter((node) => MESSAGE_TYPES.has(node.type ?? ""));
  return {
    count: messages.length,
    first: messages[0],
    last: messages[messages.length - 1],
    kept: keptAt >= 0 ? path[keptAt] : undefined,
    previousSummary: previous >= 0,
  };
}

/** Text for a header line: one line, never closing the comment early. */
function safe(text: string, max = 60): string {
  return oneLine(text, max).replace(/--+>?/g, "–");
}

function quoted(node: TreeNode | undefined): string {
  return node?.preview ? ` "${safe(node.preview)}"` : "";
}

/** At most this many of the gate's additions are listed in the header (all are in the summary). */
export const GATE_LISTED = 10;

/** What the fidelity gate added: counts by kind, the first `GATE_LISTED` items. */
function gateLines(added: readonly { kind: string; text: string }[]): string[] {
  if (added.length === 0) {
    return ["Fidelity gate: added nothing"];
  }
  const counts = new Map<string, number>();
  for (const item of added) {
    counts.set(item.kind, (counts.get(item.kind) ?? 0) + 1);
  }
  const byKind = [...counts].map(([kind, n]) => `${safe(kind, 30)} ×${n}`).join(", ");
  const lines = [`Fidelity gate added ${added.length} (${byKind}):`];
  for (const item of added.slice(0, GATE_LISTED)) {
    lines.push(`  - ${safe(item.kind, 30)}: ${safe(item.text, 100)}`);
  }
  if (added.length > GATE_LISTED) {
    lines.push(`  … and ${added.length - GATE_LISTED} more, all in the summary below`);
  }
  return lines;
}

/** The header lines (without the comment markers) of a draft document. */
export function draftHeaderLines(draft: Draft, range: ReplacedRange | undefined, howTo: string): string[] {
  const lines: string[] = [];
  if (range !== undefined) {
    const from = range.first ? `, from${quoted(range.first)}` : "";
    const to = range.last && range.last !== range.first ? ` to${quoted(range.last)}` : "";
    const earlier = range.previousSummary ? " and the previous summary" : "";
    lines.push(`Replaces: ${range.count} message${range.count === 1 ? "" : "s"}${from}${to}${earlier}`);
    lines.push(range.kept ? `Keeps: \`${range.kept.id}\`${quoted(range.kept)} and everything after it` : "Keeps: nothing before the summary");
  } else if (draft.firstKeptEntryId) {
    lines.push(`Keeps: \`${draft.firstKeptEntryId}\` and everything after it`);
  }
  lines.push(`Tokens: ${formatTokens(draft.tokensBefore ?? 0)} → ~${formatTokens(draft.estimatedTokensAfter ?? 0)}`);
  lines.push(...gateLines(draft.gate?.added ?? []));
  lines.push(howTo);
  if (draft.expiresAt) {
    lines.push(`The draft can be committed until ${draft.expiresAt}.`);
  }
  return lines;
}

/** The whole document: the header comment, then the summary exactly as the draft has it. */
export function draftDocument(draft: Draft, range: ReplacedRange | undefined, howTo: string): string {
  const kind = draft.kind === "branchSummary" ? "branch summary" : "compaction";
  const head = `${DRAFT_MARK} ${safe(draft.draftId, 80)} (${kind}): everything below this comment is the summary that will be written.`;
  return [head, ...draftHeaderLines(draft, range, howTo), HEADER_END, draft.summary].join("\n");
}

/** The summary part of a draft document's text (all of it when the header was deleted). */
export function draftSummary(text: string): string {
  if (!text.startsWith(DRAFT_MARK)) {
    return text;
  }
  const end = text.indexOf(`\n${HEADER_END}`);
  if (end < 0) {
    return text;
  }
  const rest = text.slice(end + 1 + HEADER_END.length);
  return rest.startsWith("\r\n") ? rest.slice(2) : rest.startsWith("\n") ? rest.slice(1) : rest;
}

/** What a commit sends: `{}` when the summary is unchanged, `{summary}` when edited; `problem` when empty. */
export function commitSummary(draft: Draft, text: string): { summary?: string; problem?: string } {
  const summary = draftSummary(text);
  if (summary.trim() === "") {
    return { problem: "The summary is empty: write one, or discard the draft." };
  }
  return summary === draft.summary ? {} : { summary };
}

/** The message after a commit. */
export function committedMessage(result: CompactResult, edited: boolean): string {
  const saved = `${formatTokens(result.tokensBefore)} → ${formatTokens(result.tokensAfter)} tokens`;
  return `Pi: compacted (${saved}); ${edited ? "your edited summary was written" : "the summary was written as previewed"}.`;
}

/** What `pi/undo` would take back: the leaf, when it is a compaction or a branch summary. */
export function undoTarget(
  leafId: string | undefined,
  node: (id: string) => TreeNode | undefined,
): { entryId: string; kind: "compaction" | "branch summary" } | undefined {
  const type = leafId === undefined ? undefined : node(leafId)?.type;
  if (leafId === undefined || (type !== "compaction" && type !== "branch_summary")) {
    return undefined;
  }
  return { entryId: leafId, kind: type === "compaction" ? "compaction" : "branch summary" };
}

/** The message after an undo (the new leaf is the undo entry, under the entry the summary followed). */
export function undoneMessage(kind: string, result: UndoResult): string {
  const back = (result.entry as { parentId?: unknown }).parentId;
  const leaf = typeof back === "string" ? `\`${back}\`` : "the start";
  return `Pi: undid the ${kind}; the leaf is back at ${leaf} and the context is what it was before.`;
}
