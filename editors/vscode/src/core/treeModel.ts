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
 *
 * With `groupTurns` (the side bar and the quick pick) a chain is read as turns: each user
 * message holds the assistant's work that follows it (assistant messages, tool results, model
 * and thinking changes) up to the next user message, compaction or branch summary, so the top
 * level reads request → request; the user row's description sums the work up (steps, tool
 * calls by name) and only the turn holding the leaf starts expanded. Compactions and branch
 * summaries stay at the chain's level, with their token counts when `details` has them.
 */
import type { TreeNode, TreeResult } from "../protocol";
import type { Mark } from "./masking";
import { type EntryDetail, isSummaryNode, nodeIcon, oneLine, toolNames } from "./nodes";

/** How one node is drawn (icons are codicon ids). */
export interface NodeView {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  icon: string;
  /** `entry`, `entry-summary` (compaction / branch summary: opens as markdown), a mark's (`entry-masked`, `entry-edit`, `entry-history`, `entry-tool`), plus `-leaf` on the leaf. */
  contextValue: string;
  isLeaf: boolean;
  onActivePath: boolean;
}

export interface TreeOptions {
  groupTurns?: boolean;
  details?: ReadonlyMap<string, EntryDetail>;
  /** Masked tool results and context edits (`core/masking`'s `maskMarks`). */
  marks?: ReadonlyMap<string, Mark>;
}

/** One row of the Navigate Tree quick pick. */
export interface PickRow {
  id: string;
  depth: number;
  label: string;
  description: string;
}

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

/** A user message, a compaction or a branch summary: where a new turn starts. */
function startsTurn(node: TreeNode | undefined): boolean {
  return (node?.type === "message" && node.role === "user") || (node !== undefined && isSummaryNode(node));
}

function stripToolMarkers(text: string): string {
  return text.replace(/\[[A-Za-z_][\w-]*\]/g, "").trim();
}

function formatCount(n: number): string {
  return n >= 1000 ? `${Number((n / 1000).toFixed(n < 10_000 ? 1 : 0))}k` : String(Math.round(n));
}

export class TreeModel {
  readonly leafId: string | undefined;
  private readonly nodes = new Map<string, TreeNode>();
  private readonly kids = new Map<string, string[]>();
  private readonly roots: string[] = [];
  private readonly activePath = new Set<string>();
  /** user message id → the ids of its turn's work; member id → its user message. */
  private readonly turns = new Map<string, string[]>();
  private readonly turnOf = new Map<string, string>();
  private readonly details: ReadonlyMap<string, EntryDetail>;
  private readonly marks: ReadonlyMap<string, Mark>;

  constructor(
    result: TreeResult,
    options: TreeOptions = {},
  ) {
    this.details = options.details ?? new Map();
    this.marks = options.marks ?? new Map();
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
    if (options.groupTurns) {
      this.buildTurns();
    }
  }

  get size(): number {
    return this.nodes.size;
  }

  node(id: string): TreeNode | undefined {
    return this.nodes.get(id);
  }

  /** Every node, in the order `pi/getTree` gave them. */
  allNodes(): TreeNode[] {
    return [...this.nodes.values()];
  }

  /** What `details` knows of `id` (tool targets, token counts, a compaction's first kept entry). */
  detail(id: string): EntryDetail | undefined {
    return this.details.get(id);
  }

  /** The displayed children of `id` (the top level when omitted). */
  children(id?: string): string[] {
    if (id === undefined) {
      const [only] = this.roots;
      return this.roots.length === 1 && only !== undefined ? this.grouped(this.chain(only)) : [...this.roots];
    }
    const kids = this.kids.get(id) ?? [];
    if (kids.length >= 2) {
      return [...kids];
    }
    const members = this.turns.get(id);
    if (members !== undefined) {
      return [...members];
    }
    const [next] = kids;
    return next !== undefined && this.isHead(id) ? this.grouped(this.chain(next)) : [];
  }

  /** The displayed parent of `id`; `undefined` at the top level. */
  displayParent(id: string): string | undefined {
    const turn = this.turnOf.get(id);
    if (turn !== undefined) {
      return turn;
    }
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

  /** Expanded by default when it holds the active path (a turn: only when it holds the leaf). */
  isExpanded(id: string): boolean {
    if (this.turns.has(id)) {
      return this.leafId !== undefined && this.turnOf.get(this.leafId) === id;
    }
    return this.children(id).some((child) => this.activePath.has(child));
  }

  view(id: string): NodeView {
    const node = this.nodes.get(id);
    if (node === undefined) {
      throw new Error(`unknown node ${id}`);
    }
    const isLeaf = id === this.leafId;
    const mark = this.marks.get(id);
    const label = mark?.label ?? this.nodeLabel(node);
    const parts = [node.label ? `[${node.label}]` : "", isLeaf ? "● leaf" : "", mark?.description, this.summaryOf(id)];
    const description = parts.filter(Boolean).join(" ");
    const kind = node.type === "message" ? (node.role ?? "message") : (node.type ?? "entry");
    const when = node.timestamp ? `\n${node.timestamp}` : "";
    const more = mark?.tooltip ? `\n\n${mark.tooltip}` : "";
    return {
      id,
      label,
      description,
      tooltip: `${kind} ${id}${node.label ? ` [${node.label}]` : ""}${when}\n\n${node.preview ?? ""}${more}`,
      icon: isLeaf ? "debug-stackframe" : (mark?.icon ?? nodeIcon(node)),
      contextValue: (mark?.contextValue ?? (isSummaryNode(node) ? "entry-summary" : "entry")) + (isLeaf ? "-leaf" : ""),
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
    const detail = this.details.get(node.id);
    const tools = detail?.tools ?? [];
    const preview = oneLine(tools.length ? stripToolMarkers(node.preview ?? "") : (node.preview ?? ""));
    const name = node.type === "message" ? "" : (TYPE_NAMES[node.type ?? ""] ?? node.type ?? "");
    const tokens = detail?.tokens !== undefined ? ` (${formatCount(detail.tokens)} tokens)` : "";
    const calls = tools.length ? `${preview ? " " : ""}⟨${tools.join(" · ")}⟩` : "";
    if (name === "") {
      return `${preview}${calls}` || "(empty)";
    }
    return preview ? `${name}${tokens}: ${preview}` : `${name}${tokens}`;
  }

  /** A turn's summary for its user row: `→ 12 steps · read ×3, edit`; "" for other nodes. */
  private summaryOf(id: string): string {
    const members = this.turns.get(id);
    if (members === undefined) {
      return "";
    }
    const counts = new Map<string, number>();
    for (const member of members) {
      for (const tool of toolNames(this.nodes.get(member))) {
        counts.set(tool, (counts.get(tool) ?? 0) + 1);
      }
    }
    const tools = [...counts].map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(", ");
    const steps = `→ ${members.length} step${members.length === 1 ? "" : "s"}`;
    return tools ? `${steps} · ${tools}` : steps;
  }

  /** Fills `turns` / `turnOf` from every chain, as `children` shows them. */
  private buildTurns(): void {
    const lists: string[][] = [];
    const [only] = this.roots;
    const starts = this.roots.length === 1 && only !== undefined ? [] : [...this.roots];
    if (this.roots.length === 1 && only !== undefined) {
      lists.push(this.chain(only));
    }
    for (const kids of this.kids.values()) {
      if (kids.length >= 2) {
        starts.push(...kids);
      }
    }
    for (const head of starts) {
      const kids = this.kids.get(head) ?? [];
      if (kids.length === 1 && kids[0] !== undefined) {
        lists.push(this.chain(kids[0]));
      }
    }
    for (const list of lists) {
      let user: string | undefined;
      for (const id of list) {
        const node = this.nodes.get(id);
        if (startsTurn(node) || (this.kids.get(id) ?? []).length >= 2) {
          // A branch point stays visible at the chain's level: its branches nest under it.
          user = node?.type === "message" && node.role === "user" && !this.isBranchPoint(id) ? id : undefined;
          if (user !== undefined) {
            this.turns.set(user, []);
          }
        } else if (user !== undefined) {
          this.turns.get(user)?.push(id);
          this.turnOf.set(id, user);
        }
      }
    }
    for (const [user, members] of this.turns) {
      if (members.length === 0) {
        this.turns.delete(user);
      }
    }
  }

  private isBranchPoint(id: string): boolean {
    return (this.kids.get(id) ?? []).length >= 2;
  }

  /** `list` with each turn's work folded under its user message. */
  private grouped(list: string[]): string[] {
    return this.turns.size === 0 ? list : list.filter((id) => !this.turnOf.has(id));
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
