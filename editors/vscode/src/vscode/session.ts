/** The open session: which one it is, its tree, and change events for the views. */
import * as vscode from "vscode";
import type { PiClient } from "../core/client";
import type { EditInfo } from "../core/masking";
import { loadTree } from "../core/sessionTree";
import { effectiveReserve } from "../core/settings";
import { TreeModel } from "../core/treeModel";
import type { LockHolder, SessionInfo, StatsResult } from "../protocol";

export class CurrentSession implements vscode.Disposable {
  info: SessionInfo | undefined;
  tree: TreeModel = new TreeModel({ nodes: [] });
  stats: StatsResult | undefined;
  /** The tool results masked in the leaf's context: target id → the edit masking it. */
  masked = new Map<string, EditInfo>();
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
    const [loaded, stats] = await Promise.all([loadTree(pi, id), pi.getStats(id).catch(() => undefined)]);
    if (this.info?.sessionId === id) {
      this.tree = loaded.model;
      this.masked = loaded.masked;
      this.stats = stats;
      this.changed.fire();
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.changed.dispose();
  }
}

