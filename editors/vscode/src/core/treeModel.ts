/**
 * The session tree as the side bar and the quick pick show it, built from
 * `pi/getTree` nodes.
 *
 * Sessions are long chains with a few branch points, so a chain is shown
 * flat (like Pi's `/tree`): the children of a node with one child follow it
 * as siblings, and only a branch point (two or more children) nests. Under a
 * branch point each child is a *branch head*, and a head holds the rest of
 * its chain. Invariant: every node appears exactly once, and
 * `displayParent` is the inverse of `children`.
 */
import type { TreeNode, TreeResult } from "../protocol";

/** How one node is drawn (icons are codicon ids). */
export interface NodeView {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  icon: string;
  /** `entry`, `entry-summary` (compaction / branch summary: opens as markdown), plus `-leaf` on the leaf. */
  contextValue: string;
  isLeaf: boolean;
  onActivePath: boolean;
}

/** One row of the Navigate Tree quick pick. */
export interface PickRow {
  id: string;
  depth: number;
  label: string;
  description: string;
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

const TYPE_NAMES: Record<string, string> = {
  compaction: "Compaction",
  branch_summary: "Branch summary",
  label: "Label",
  model_change: "Model",
  thinking_level_change: "Thinking level",
  custom: "Custom",
  custom_message: "Custom message",
  session_info: "Session name",
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

/** True for nodes whose summary opens as a markdown document. */
export function isSummaryNode(node: TreeNode): boolean {
  return node.type === "compaction" || node.type === "branch_summary";
}

export class TreeModel {
  readonly leafId: string | undefined;
  private readonly nodes = new Map<string, TreeNode>();
  private readonly kids = new Map<string, string[]>();
  private readonly roots: string[] = [];
  private readonly activePath = new Set<string>();

  constructor(result: TreeResult) {
    this.leafId = result.leafId ?? undefined;
    for (const node of result.nodes ?? []) {
      this.nodes.set(node.id, node);
    }
    for (const node of this.nodes.values()) {
      const kids = (node.childIds ?? []).filter((id) => this.nodes.has(id));
      this.kids.set(node.id, kids);
      const parent = node.parentId;
      if (parent === null || parent === undefined || !this.nodes.has(parent)) {
        this.roots.push(node.id);
      }
    }
    this.markActivePath();
  }

  get size(): number {
    return this.nodes.size;
  }

  node(id: string): TreeNode | undefined {
    return this.nodes.get(id);
  }

  /** The displayed children of `id` (the top level when omitted). */
  children(id?: string): string[] {
    if (id === undefined) {
      const [only] = this.roots;
      return this.roots.length === 1 && only !== undefined ? this.chain(only) : [...this.roots];
    }
    const kids = this.kids.get(id) ?? [];
    if (kids.length >= 2) {
      return [...kids];
    }
    const [next] = kids;
    return next !== undefined && this.isHead(id) ? this.chain(next) : [];
  }

  /** The displayed parent of `id`; `undefined` at the top level. */
  displayParent(id: string): string | undefined {
    if (this.isHead(id)) {
      return this.realParent(id);
    }
    // Not a head: its parent has one child, so walk up to the start of its chain.
    let start = id;
    for (let up = this.realParent(start); up !== undefined && !this.isHead(start); up = this.realParent(start)) {
      start = up;
    }
    return this.isHead(start) ? start : undefined;
  }

  isExpandable(id: string): boolean {
    return this.children(id).length > 0;
  }

  /** Expanded by default when it holds the active path. */
  isExpanded(id: string): boolean {
    return this.children(id).some((child) => this.activePath.has(child));
  }

  view(id: string): NodeView {
    const node = this.nodes.get(id);
    if (node === undefined) {
      throw new Error(`unknown node ${id}`);
    }
    const isLeaf = id === this.leafId;
    const label = this.nodeLabel(node);
    const description = [node.label ? `[${node.label}]` : "", isLeaf ? "● leaf" : ""].filter(Boolean).join(" ");
    const kind = node.type === "message" ? (node.role ?? "message") : (node.type ?? "entry");
    const when = node.timestamp ? `\n${node.timestamp}` : "";
    return {
      id,
      label,
      description,
      tooltip: `${kind} ${id}${node.label ? ` [${node.label}]` : ""}${when}\n\n${node.preview ?? ""}`,
      icon: isLeaf ? "debug-stackframe" : nodeIcon(node),
      contextValue: (isSummaryNode(node) ? "entry-summary" : "entry") + (isLeaf ? "-leaf" : ""),
      isLeaf,
      onActivePath: this.activePath.has(id),
    };
  }

  /** Every node in display order, indented by display depth (the Navigate Tree quick pick). */
  pickRows(): PickRow[] {
    const rows: PickRow[] = [];
    const visit = (ids: string[], depth: number): void => {
      for (const id of ids) {
        const view = this.view(id);
        const marker = view.isLeaf ? "$(debug-stackframe)" : view.onActivePath ? "$(circle-filled)" : "";
        rows.push({
          id,
          depth,
          label: `${"\u2003".repeat(depth)}$(${nodeIcon(this.nodes.get(id) as TreeNode)}) ${view.label}`,
          description: [marker, view.description.replace("● leaf", "leaf")].filter(Boolean).join(" "),
        });
        visit(this.children(id), depth + 1);
      }
    };
    visit(this.children(), 0);
    return rows;
  }

  private nodeLabel(node: TreeNode): string {
    const preview = oneLine(node.preview ?? "");
    const name = node.type === "message" ? "" : (TYPE_NAMES[node.type ?? ""] ?? node.type ?? "");
    if (name === "") {
      return preview || "(empty)";
    }
    return preview ? `${name}: ${preview}` : name;
  }

  private realParent(id: string): string | undefined {
    const parent = this.nodes.get(id)?.parentId;
    return parent !== null && parent !== undefined && this.nodes.has(parent) ? parent : undefined;
  }

  private isHead(id: string): boolean {
    const parent = this.realParent(id);
    if (parent === undefined) {
      return this.roots.length >= 2;
    }
    return (this.kids.get(parent) ?? []).length >= 2;
  }

  private chain(start: string): string[] {
    const ids = [start];
    let kids = this.kids.get(start) ?? [];
    while (kids.length === 1 && kids[0] !== undefined) {
      ids.push(kids[0]);
      kids = this.kids.get(kids[0]) ?? [];
    }
    return ids;
  }

  private markActivePath(): void {
    const fromNodes = [...this.nodes.values()].filter((n) => n.onActivePath).map((n) => n.id);
    for (const id of fromNodes) {
      this.activePath.add(id);
    }
    for (let id = this.leafId; id !== undefined && !this.activePath.has(id) && this.nodes.has(id); ) {
      this.activePath.add(id);
      id = this.realParent(id);
    }
  }
}
