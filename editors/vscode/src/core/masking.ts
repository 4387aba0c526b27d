/**
 * The masking tier as the editors show it, as pure functions: which tool results are masked
 * on the active branch, what a `context_edit` entry does, the original of a masked result,
 * and the sentences around `pi/mask` / `pi/unmask`.
 *
 * A placeholder (the daemon's `compaction/masking.py`) starts with {@link MASK_MARKER}, names
 * the tool and the original entry on its first line, then `arguments: {json}` and `outcome: …;
 * N characters, M lines`. Masked state follows Pi 1.6.0's projection: among the context
 * entries of the leaf (after the newest compaction, plus its kept range) the latest
 * `context_edit` per target wins; a target masked by that edit is masked. The original always
 * comes from the raw history (`pi/getEntries` of the tool result), never from the placeholder.
 */
import type { MaskResult, TreeNode } from "../protocol";
import { formatTokens } from "./status";
import { oneLine, rootPath, toolTarget } from "./nodes";

/** The first characters of every placeholder the masking tier writes. */
export const MASK_MARKER = "[masked tool output";

/** What a placeholder says about the result it stands for. */
export interface Placeholder {
  tool: string;
  originalId?: string;
  /** The call's path, command or pattern (short), or "". */
  target: string;
  /** `ok; 4451 characters, 50 lines` (the placeholder's outcome line without `outcome: `). */
  size: string;
  text: string;
}

/** What one `context_edit` does: masks, restores (a later edit with other content), omits. */
export interface EditInfo {
  id: string;
  targetId: string;
  kind: "masked" | "replaced" | "omitted";
  placeholder?: Placeholder;
}

/** How a row of the tree is marked (see `TreeOptions.marks`). */
export interface Mark {
  /**
   * `entry-masked` (a tool result masked now), `entry-edit` (the context edit masking it now),
   * `entry-history` (any other context edit), `entry-tool` (a maskable tool result).
   */
  contextValue: "entry-masked" | "entry-edit" | "entry-history" | "entry-tool";
  label?: string;
  description?: string;
  tooltip?: string;
  icon?: string;
}

const HEAD = /^\[masked tool output: (.+?) — the original is entry (\S+?);/;

/** The text of a message's content (text blocks joined by newlines; images named). */
export function contentText(content: unknown): string {
  if (typeof content === "string") {
    return content;
  }
  const parts: string[] = [];
  for (const block of Array.isArray(content) ? (content as Array<Record<string, unknown>>) : []) {
    if (block?.type === "text") {
      parts.push(String(block.text ?? ""));
    } else if (block?.type === "image") {
      parts.push(`[image ${String(block.mimeType ?? "")}]`);
    }
  }
  return parts.join("\n");
}

/** The arguments line of a placeholder, parsed (it may be clipped: then the known keys only). */
function placeholderArguments(line: string | undefined): Record<string, unknown> {
  const json = line?.startsWith("arguments: ") ? line.slice("arguments: ".length) : "";
  try {
    const value = JSON.parse(json) as unknown;
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    const found = /"(path|file_path|filePath|file|pattern|command)": "((?:[^"\\]|\\.)*)/.exec(json);
    return found?.[1] ? { [found[1]]: found[2]?.replace(/\\(.)/g, "$1") } : {};
  }
}

/** Reads a placeholder; `undefined` when `text` is not one. */
export function parsePlaceholder(text: string): Placeholder | undefined {
  if (!text.startsWith(MASK_MARKER)) {
    return undefined;
  }
  const lines = text.split("\n");
  const head = HEAD.exec(lines[0] ?? "");
  const args = placeholderArguments(lines.find((line) => line.startsWith("arguments: ")));
  const outcome = lines.find((line) => line.startsWith("outcome: "));
  return {
    tool: head?.[1] ?? "tool",
    ...(head?.[2] ? { originalId: head[2] } : {}),
    target: toolTarget(args),
    size: outcome ? outcome.slice("outcome: ".length) : "",
    text,
  };
}

/**
 * What a `context_edit` does, from its tree node (the preview is `targetId: text`, or
 * `targetId: (omitted)`) and, when fetched, its entry (the whole placeholder).
 */
export function editInfo(node: TreeNode, entry?: Record<string, unknown>): EditInfo | undefined {
  if (node.type !== "context_edit") {
    return undefined;
  }
  const preview = node.preview ?? "";
  const colon = preview.indexOf(": ");
  const targetId = typeof entry?.targetId === "string" ? entry.targetId : preview.slice(0, Math.max(colon, 0));
  const replacement = entry?.replacement as { content?: unknown } | null | undefined;
  if (entry !== undefined ? replacement === null || typeof replacement !== "object" : preview.endsWith(": (omitted)")) {
    return { id: node.id, targetId, kind: "omitted" };
  }
  const text = entry !== undefined ? contentText(replacement?.content) : preview.slice(colon + 2);
  if (!text.startsWith(MASK_MARKER)) {
    return { id: node.id, targetId, kind: "replaced" };
  }
  const placeholder = entry !== undefined ? parsePlaceholder(text) : undefined;
  return { id: node.id, targetId, kind: "masked", ...(placeholder ? { placeholder } : {}) };
}

/** True for a `context_edit` node whose preview shows a placeholder (the entries worth fetching). */
export function isMaskingEdit(node: TreeNode): boolean {
  return node.type === "context_edit" && (node.preview ?? "").includes(`: ${MASK_MARKER}`);
}

/** The ids of the leaf's context entries, Pi 1.6.0's rule (`firstKeptOf`: a compaction's kept id). */
export function contextEntryIds(
  nodes: readonly TreeNode[],
  leafId: string | null | undefined,
  firstKeptOf: (compactionId: string) => string | null | undefined = () => undefined,
): string[] {
  const path = rootPath(nodes, leafId);
  const ids = path.map((node) => node.id);
  const newest = path.map((node) => node.type).lastIndexOf("compaction");
  if (newest < 0) {
    return ids;
  }
  const kept = ids.indexOf(firstKeptOf(ids[newest] ?? "") ?? "");
  return [...(kept >= 0 && kept < newest ? ids.slice(kept, newest) : []), ...ids.slice(newest + 1)];
}

/** The tool results masked in the leaf's context: target id → the edit that masks it. */
export function maskedTargets(
  nodes: readonly TreeNode[],
  leafId: string | null | undefined,
  edits: ReadonlyMap<string, EditInfo>,
  firstKeptOf?: (compactionId: string) => string | null | undefined,
): Map<string, EditInfo> {
  const context = contextEntryIds(nodes, leafId, firstKeptOf);
  const inContext = new Set(context);
  const latest = new Map<string, EditInfo>();
  for (const id of context) {
    const edit = edits.get(id);
    if (edit !== undefined && inContext.has(edit.targetId)) {
      latest.set(edit.targetId, edit);
    }
  }
  return new Map([...latest].filter(([, edit]) => edit.kind === "masked"));
}

/** `bash cd src && npm test` for an edit: its placeholder's, else any masking edit of its target. */
function whatOf(edit: EditInfo, edits: ReadonlyMap<string, EditInfo>): string {
  const own = edit.placeholder;
  const other = [...edits.values()].find((e) => e.targetId === edit.targetId && e.placeholder)?.placeholder;
  const found = own ?? other;
  return found ? [found.tool, found.target].filter(Boolean).join(" ") : `tool result ${edit.targetId}`;
}

/** The label of a `context_edit` row: `masked bash npm test`, `restored …`, `omitted …`. */
export function editLabel(edit: EditInfo, edits: ReadonlyMap<string, EditInfo>): string {
  const what = whatOf(edit, edits);
  if (edit.kind === "replaced") {
    const restores = [...edits.values()].some((e) => e.targetId === edit.targetId && e.kind === "masked");
    return `${restores ? "restored" : "edited"} ${what}`;
  }
  return `${edit.kind} ${what}`;
}

/** The marks of every tool result and context edit (see {@link Mark}). */
export function maskMarks(
  nodes: readonly TreeNode[],
  leafId: string | null | undefined,
  edits: ReadonlyMap<string, EditInfo>,
  firstKeptOf?: (compactionId: string) => string | null | undefined,
): Map<string, Mark> {
  const marks = new Map<string, Mark>();
  const masked = maskedTargets(nodes, leafId, edits, firstKeptOf);
  const context = new Set(contextEntryIds(nodes, leafId, firstKeptOf));
  for (const node of nodes) {
    const edit = edits.get(node.id);
    const by = masked.get(node.id);
    if (edit !== undefined) {
      const size = edit.placeholder?.size;
      marks.set(node.id, {
        contextValue: masked.get(edit.targetId)?.id === edit.id ? "entry-edit" : "entry-history",
        label: editLabel(edit, edits),
        description: `→ ${edit.targetId}${size ? ` · ${size}` : ""}`,
        tooltip: edit.placeholder?.text ?? "",
        icon: edit.kind === "masked" ? "eye-closed" : edit.kind === "omitted" ? "circle-slash" : "eye",
      });
    } else if (by !== undefined) {
      const size = by.placeholder?.size;
      marks.set(node.id, {
        contextValue: "entry-masked",
        description: `masked${size ? ` · ${size}` : ""}`,
        tooltip: `Masked in the context by ${by.id}; Show Original opens the full output.\n\n${by.placeholder?.text ?? ""}`,
        icon: "eye-closed",
      });
    } else if (node.type === "message" && node.role === "toolResult" && context.has(node.id)) {
      marks.set(node.id, { contextValue: "entry-tool" });
    }
  }
  return marks;
}

/** The question before masking: `Mask 29 tool results, frees ~84k tokens?`. */
export function maskQuestion(dry: MaskResult): string {
  const n = dry.edits?.length ?? 0;
  const freed = Math.max(0, (dry.tokensBefore ?? 0) - (dry.tokensAfter ?? 0));
  return `Mask ${n} tool result${n === 1 ? "" : "s"}, frees ~${formatTokens(freed)} tokens? The originals stay in the session file.`;
}

/** When a dry run finds nothing: why, in the settings' words. */
export const NOTHING_TO_MASK =
  "Nothing to mask: no tool result (compaction.masking.tools) is at least minTokens long with olderThanTokens of context after it.";

/** The message after `pi/mask` or `pi/unmask`. */
export function maskedMessage(kind: "mask" | "unmask", result: MaskResult): string {
  const n = result.edits?.length ?? 0;
  const tokens = `${formatTokens(result.tokensBefore ?? 0)} → ~${formatTokens(result.tokensAfter ?? 0)} tokens`;
  const results = `${n} tool result${n === 1 ? "" : "s"}`;
  return kind === "mask"
    ? `Pi: masked ${results} (${tokens}); Unmask restores them.`
    : `Pi: restored ${results} (${tokens}); the context holds the full output again.`;
}

/** The call of `toolCallId` in an assistant entry's content, if there. */
export function toolCallArguments(assistant: Record<string, unknown> | undefined, toolCallId: unknown): unknown {
  const content = (assistant?.message as { content?: unknown } | undefined)?.content;
  for (const block of Array.isArray(content) ? (content as Array<Record<string, unknown>>) : []) {
    if (block?.type === "toolCall" && block.id === toolCallId) {
      return block.arguments;
    }
  }
  return undefined;
}

/** Lines as the placeholder counts them (Python's `splitlines`: a final newline ends a line). */
function lineCount(text: string): number {
  const lines = text.split(/\r\n|\r|\n/);
  return text === "" ? 0 : lines.length - (/[\r\n]$/.test(text) ? 1 : 0);
}

/**
 * The document of **Show Original**: a header (tool, arguments, outcome, whether it is masked
 * now), a rule, then the stored output exactly. `undefined` when `entry` is not a tool result.
 */
export function originalDocument(entry: Record<string, unknown>, args: unknown, masked: boolean): string | undefined {
  const message = entry.message as Record<string, unknown> | undefined;
  if (entry.type !== "message" || message?.role !== "toolResult") {
    return undefined;
  }
  const text = contentText(message.content);
  const code = (message.details as { exitCode?: unknown } | undefined)?.exitCode;
  const outcome = `${message.isError ? "error" : "ok"}${typeof code === "number" ? ` (exit code ${code})` : ""}`;
  const lines = [
    `Original tool result ${String(entry.id)} (${String(message.toolName ?? "tool")}), as stored in the session file.`,
    ...(args !== undefined ? [`Arguments: ${oneLine(JSON.stringify(args), 300)}`] : []),
    `Outcome: ${outcome}; ${text.length} characters, ${lineCount(text)} lines.`,
    masked ? "Masked in the context (the model sees the placeholder); Unmask restores it." : "Not masked in the context.",
    "─".repeat(40),
  ];
  return `${lines.join("\n")}\n${text}`;
}
