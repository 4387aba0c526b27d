/** The open session: which one it is, its tree, and change events for the views. */
import * as vscode from "vscode";
import type { PiClient } from "../core/client";
import { effectiveReserve } from "../core/settings";
import { type EntryDetail, entryDetail, isSummaryNode, TreeModel, toolNames } from "../core/treeModel";
import type { LockHolder, SessionInfo, StatsResult, TreeResult } from "../protocol";

/** At most this many entries are fetched for tool targets and token counts (the rest show names only). */
const DETAIL_LIMIT = 2000;

export class CurrentSession implements vscode.Disposable {
  info: SessionInfo | undefined;
  tree: TreeModel = new TreeModel({ nodes: [] });
  stats: StatsResult | undefined;
  reserveTokens = 16384;
  /** Sessions a live Pi holds (`pi/sessionLive`), by id: their holder. */
  readonly live = new Map<string, LockHolder>();
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires after the tree and stats were reloaded. */
  readonly onDidChange = this.changed.event;
  private timer: NodeJS.Timeout | undefined;

  /** The live Pi holding the open session, if any. */
  get liveHolder(): LockHolder | undefined {
    return this.info ? this.live.get(this.info.sessionId) : undefined;
  }

  get title(): string {
    const header = this.info?.header;
    const name = typeof header?.name === "string" ? header.name : undefined;
    return name ?? this.info?.path?.split(/[\\/]/).pop() ?? this.info?.sessionId ?? "no session";
  }

  /** Switches to `info` and loads it. */
  async open(pi: PiClient, info: SessionInfo): Promise<void> {
    this.info = info;
    const settings = await pi.getSettings(info.sessionId).catch(() => undefined);
    this.reserveTokens = effectiveReserve(settings);
    await this.reload(pi);
  }

  /** Reloads tree and stats (coalesces bursts of `pi/sessionChanged`). */
  scheduleReload(pi: PiClient): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(pi), 100);
  }

  async reload(pi: PiClient): Promise<void> {
    const id = this.info?.sessionId;
    if (id === undefined) {
      return;
    }
    const [tree, stats] = await Promise.all([pi.getTree(id), pi.getStats(id).catch(() => undefined)]);
    const details = await this.details(pi, id, tree);
    if (this.info?.sessionId === id) {
      this.tree = new TreeModel(tree, { groupTurns: true, details });
      this.stats = stats;
      this.changed.fire();
    }
  }

  /** Tool-call targets and summary token counts, from the entries of the nodes that have them. */
  private async details(pi: PiClient, sessionId: string, tree: TreeResult): Promise<Map<string, EntryDetail>> {
    const wanted = (tree.nodes ?? []).filter((node) => isSummaryNode(node) || toolNames(node).length > 0);
    const ids = wanted.slice(-DETAIL_LIMIT).map((node) => node.id);
    const out = new Map<string, EntryDetail>();
    if (ids.length === 0) {
      return out;
    }
    const entries = await pi.getEntries(sessionId, ids).catch(() => []);
    for (const entry of entries) {
      const detail = entryDetail(entry as unknown as Record<string, unknown>);
      const entryId = (entry as { id?: unknown }).id;
      if (detail !== undefined && typeof entryId === "string") {
        out.set(entryId, detail);
      }
    }
    return out;
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.changed.dispose();
  }
}
