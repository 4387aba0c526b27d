/**
 * Read-only markdown documents: the LLM context, the stats, and the summary
 * of a compaction or branch-summary entry.
 */
import type {
  BranchSummaryEntry,
  CompactionEntry,
  ContentBlock,
  ContextResult,
  Message,
  StatsResult,
} from "../protocol";
import { formatTokens } from "./status";

/** A content block; blocks of a type this client does not know pass through as plain objects. */
type Block = ContentBlock | Record<string, unknown>;

function blockText(block: Block): string {
  if (!isKnownBlock(block)) {
    return `_[${typeof block.type === "string" ? block.type : "block"}]_`;
  }
  switch (block.type) {
    case "text":
      return block.text;
    case "thinking":
      return `> _thinking:_ ${block.thinking.replace(/\n/g, "\n> ")}`;
    case "toolCall":
      return `\`${block.name}(${JSON.stringify(block.arguments ?? {})})\``;
    case "image":
      return "_[image]_";
  }
}

function isKnownBlock(block: Block): block is ContentBlock {
  return ["text", "thinking", "toolCall", "image"].includes(String(block.type));
}

function messageBody(message: Message): string {
  switch (message.role) {
    case "compactionSummary":
    case "branchSummary":
      return message.summary ?? "";
    case "bashExecution":
      return `\`\`\`\n$ ${message.command ?? ""}\n${message.output ?? ""}\n\`\`\``;
    default: {
      // Messages of a role this client does not know pass through as plain objects.
      const content: string | Block[] | undefined = message.content;
      return typeof content === "string" ? content : (content ?? []).map(blockText).join("\n\n");
    }
  }
}

/** The context as markdown: one section per message, in order. */
export function contextMarkdown(context: ContextResult, title: string): string {
  const lines = [`# Context of ${title}`, "", `${context.messages.length} messages · ${formatTokens(context.tokens ?? 0)} tokens`];
  context.messages.forEach((message, index) => {
    const tool = message.role === "toolResult" && message.toolName ? ` (${message.toolName})` : "";
    lines.push("", `## ${index + 1}. ${message.role ?? "message"}${tool}`, "", messageBody(message));
  });
  return `${lines.join("\n")}\n`;
}

/** The context size: exact, else the estimate as `~N` (Pi's contextTokens is null after a compaction). */
function contextCell(stats: StatsResult): string {
  if (stats.contextTokens != null) {
    return `${stats.contextTokens.toLocaleString("en-US")} tokens`;
  }
  const estimate = stats.estimatedContextTokens;
  return estimate == null ? "unknown" : `~${estimate.toLocaleString("en-US")} tokens (estimated until the next answer)`;
}

/** The stats as a markdown table. */
export function statsMarkdown(stats: StatsResult, title: string): string {
  const tokens = stats.tokens ?? {};
  const rows: [string, string][] = [
    ["Context", contextCell(stats)],
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
export function summaryMarkdown(entry: CompactionEntry | BranchSummaryEntry): string {
  const facts: string[] = [];
  if (entry.type === "compaction") {
    if (typeof entry.tokensBefore === "number") {
      facts.push(`${entry.tokensBefore.toLocaleString("en-US")} tokens before`);
    }
    if (typeof entry.firstKeptEntryId === "string") {
      facts.push(`first kept entry \`${entry.firstKeptEntryId}\``);
    }
  } else if (typeof entry.fromId === "string") {
    facts.push(`from \`${entry.fromId}\``);
  }
  if (entry.fromHook) {
    facts.push("written by a hook");
  }
  const kind = entry.type === "compaction" ? "Compaction" : "Branch summary";
  const head = `# ${kind} \`${String(entry.id ?? "")}\`\n\n${facts.length ? `_${facts.join(" · ")}_\n\n` : ""}`;
  return `${head}${String(entry.summary ?? "")}\n`;
}
