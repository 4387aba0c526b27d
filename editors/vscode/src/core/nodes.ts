/**
 * What one `pi/getTree` node or stored entry shows, row by row: its icon, a one-line preview,
 * tool names and targets, the token counts entries add, and the root-to-leaf path of nodes.
 * Pure (no VS Code); `treeModel` arranges the rows, `drafts`/`masking` read paths with it.
 */
import type { TreeNode } from "../protocol";

/** What the entries themselves add to a node (from `pi/getEntries`); see `entryDetail`. */
export interface EntryDetail {
  /** Tool calls as `name target`, e.g. `read src/a.ts` (target: the path or command, when there is one). */
  tools?: string[];
  /** Compaction: `tokensBefore`; branch summary: the summary's estimated size. */
  tokens?: number;
  /** Compaction: its `firstKeptEntryId` (where the range of the next compaction starts). */
  firstKept?: string;
}

const PREVIEW_LENGTH = 80;

const ROLE_ICONS: Record<string, string> = {
  user: "account",
  assistant: "hubot",
  toolResult: "tools",
  bashExecution: "terminal",
  custom: "extensions",
  branchSummary: "git-merge",
  compactionSummary: "archive",
};

const TYPE_ICONS: Record<string, string> = {
  compaction: "archive",
  branch_summary: "git-merge",
  label: "tag",
  model_change: "settings-gear",
  thinking_level_change: "lightbulb",
  custom: "extensions",
  custom_message: "extensions",
  session_info: "info",
};

/** Collapses whitespace and cuts `text` to `max` characters with an ellipsis. */
export function oneLine(text: string, max = PREVIEW_LENGTH): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The codicon of a node. */
export function nodeIcon(node: TreeNode): string {
  if (node.type === "message") {
    return ROLE_ICONS[node.role ?? ""] ?? "comment";
  }
  return TYPE_ICONS[node.type ?? ""] ?? "circle-outline";
}

/** The tool names in a node's preview (`[read]`, `[bash]`, as the daemon writes them). */
export function toolNames(node: TreeNode | undefined): string[] {
  if (node?.type !== "message" || node.role !== "assistant") {
    return [];
  }
  return [...(node.preview ?? "").matchAll(/\[([A-Za-z_][\w-]*)\]/g)].map((m) => m[1] ?? "");
}

/** Short target of a tool call: its path, file, pattern or command (first line), else "". */
export function toolTarget(args: Record<string, unknown>): string {
  for (const key of ["path", "file_path", "filePath", "file", "pattern", "command"]) {
    const value = args[key];
    if (typeof value === "string" && value !== "") {
      const first = value.split("\n")[0] ?? "";
      const short = key.includes("path") || key === "file" ? (first.split("/").pop() ?? first) : first;
      return oneLine(short, 40);
    }
  }
  return "";
}

/** What an entry adds to its tree row: tool calls with targets, or a summary's token count. */
export function entryDetail(entry: Record<string, unknown> | undefined): EntryDetail | undefined {
  if (entry === undefined) {
    return undefined;
  }
  if (entry.type === "compaction" && typeof entry.tokensBefore === "number") {
    const firstKept = typeof entry.firstKeptEntryId === "string" ? { firstKept: entry.firstKeptEntryId } : {};
    return { tokens: entry.tokensBefore, ...firstKept };
  }
  if (entry.type === "branch_summary" && typeof entry.summary === "string") {
    return { tokens: Math.ceil(entry.summary.length / 4) };
  }
  const message = entry.message as { role?: unknown; content?: unknown } | undefined;
  if (entry.type !== "message" || message?.role !== "assistant" || !Array.isArray(message.content)) {
    return undefined;
  }
  const tools: string[] = [];
  for (const block of message.content as Array<Record<string, unknown>>) {
    if (block?.type === "toolCall" && typeof block.name === "string") {
      const target = toolTarget((block.arguments ?? {}) as Record<string, unknown>);
      tools.push(target ? `${block.name} ${target}` : block.name);
    }
  }
  return tools.length ? { tools } : undefined;
}

/** True for nodes whose summary opens as a markdown document. */
export function isSummaryNode(node: TreeNode): boolean {
  return node.type === "compaction" || node.type === "branch_summary";
}

/** The nodes from the root down to `leafId` (parent links; stops at a missing parent or a cycle). */
export function rootPath(nodes: readonly TreeNode[], leafId: string | null | undefined): TreeNode[] {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const path: TreeNode[] = [];
  for (let id = leafId ?? undefined; id !== undefined && byId.has(id) && path.length <= byId.size; ) {
    const node = byId.get(id) as TreeNode;
    path.push(node);
    id = node.parentId ?? undefined;
  }
  return path.reverse();
}
