/**
 * Read-only markdown documents: the LLM context, the stats, and the summary
 * of a compaction or branch-summary entry.
 */
import type { ContextResult, StatsResult } from "../protocol";
import { formatTokens } from "./status";

interface Block {
  type?: string;
  text?: string;
  thinking?: string;
  name?: string;
  arguments?: unknown;
}

interface AnyMessage {
  role?: string;
  content?: string | Block[];
  summary?: string;
  command?: string;
  output?: string;
  toolName?: string;
}

function blockText(block: Block): string {
  switch (block.type) {
    case "text":
      return block.text ?? "";
    case "thinking":
      return `> _thinking:_ ${(block.thinking ?? "").replace(/\n/g, "\n> ")}`;
    case "toolCall":
      return `\`${block.name ?? "tool"}(${JSON.stringify(block.arguments ?? {})})\``;
    case "image":
      return "_[image]_";
    default:
      return `_[${block.type ?? "block"}]_`;
  }
}

function messageBody(message: AnyMessage): string {
  if (message.role === "compactionSummary" || message.role === "branchSummary") {
    return message.summary ?? "";
  }
  if (message.role === "bashExecution") {
    return `\`\`\`\n$ ${message.command ?? ""}\n${message.output ?? ""}\n\`\`\``;
  }
  const content = message.content;
  if (typeof content === "string") {
    return content;
  }
  return (content ?? []).map(blockText).join("\n\n");
}

/** The context as markdown: one section per message, in order. */
export function contextMarkdown(context: ContextResult, title: string): string {
  const lines = [`# Context of ${title}`, "", `${context.messages.length} messages · ${formatTokens(context.tokens ?? 0)} tokens`];
  context.messages.forEach((raw, index) => {
    const message = raw as AnyMessage;
    const tool = message.toolName ? ` (${message.toolName})` : "";
    lines.push("", `## ${index + 1}. ${message.role ?? "message"}${tool}`, "", messageBody(message));
  });
  return `${lines.join("\n")}\n`;
}

/** The stats as a markdown table. */
export function statsMarkdown(stats: StatsResult, title: string): string {
  const tokens = stats.tokens ?? {};
  const rows: [string, string][] = [
    ["Context", stats.contextTokens == null ? "unknown" : `${stats.contextTokens.toLocaleString("en-US")} tokens`],
    ["Context window", `${(stats.contextWindow ?? 0).toLocaleString("en-US")} tokens`],
    ["Context used", stats.contextPercent == null ? "unknown" : `${Math.round(stats.contextPercent)}%`],
    ["Input tokens", (tokens.input ?? 0).toLocaleString("en-US")],
    ["Output tokens", (tokens.output ?? 0).toLocaleString("en-US")],
    ["Cache read", (tokens.cacheRead ?? 0).toLocaleString("en-US")],
    ["Cache write", (tokens.cacheWrite ?? 0).toLocaleString("en-US")],
    ["Cost", `$${(stats.cost ?? 0).toFixed(4)}`],
    ["Compactions", String(stats.compactions ?? 0)],
    ["Branch summaries", String(stats.branchSummaries ?? 0)],
  ];
  for (const [role, count] of Object.entries(stats.messageCounts ?? {})) {
    rows.push([`Messages: ${role}`, String(count)]);
  }
  const table = rows.map(([key, value]) => `| ${key} | ${value} |`).join("\n");
  return `# Stats of ${title}\n\n| | |\n|---|---|\n${table}\n`;
}

/** A compaction or branch-summary entry as markdown. */
export function summaryMarkdown(entry: Record<string, unknown>): string {
  const kind = entry.type === "compaction" ? "Compaction" : "Branch summary";
  const facts: string[] = [];
  if (typeof entry.tokensBefore === "number") {
    facts.push(`${entry.tokensBefore.toLocaleString("en-US")} tokens before`);
  }
  if (typeof entry.firstKeptEntryId === "string") {
    facts.push(`first kept entry \`${entry.firstKeptEntryId}\``);
  }
  if (typeof entry.fromId === "string") {
    facts.push(`from \`${entry.fromId}\``);
  }
  if (entry.fromHook) {
    facts.push("written by a hook");
  }
  const head = `# ${kind} \`${String(entry.id ?? "")}\`\n\n${facts.length ? `_${facts.join(" · ")}_\n\n` : ""}`;
  return `${head}${String(entry.summary ?? "")}\n`;
}
