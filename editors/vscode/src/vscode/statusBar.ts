/** The status bar item: context usage, compaction in progress. */
import * as vscode from "vscode";
import { type StatusView, compactingView, liveView, statusView } from "../core/status";
import type { CurrentSession } from "./session";

const BACKGROUND = {
  normal: undefined,
  warning: new vscode.ThemeColor("statusBarItem.warningBackground"),
  error: new vscode.ThemeColor("statusBarItem.errorBackground"),
};

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("pi.context", vscode.StatusBarAlignment.Right, 100);

  constructor(private readonly session: CurrentSession) {
    this.item.name = "Pi Context";
    this.item.command = "pi.showStats";
  }

  update(): void {
    const stats = this.session.stats;
    if (this.session.info === undefined || stats === undefined) {
      this.item.hide();
      return;
    }
    const view = statusView(stats, this.session.reserveTokens);
    const holder = this.session.liveHolder;
    this.show(holder ? liveView(view, holder) : view);
  }

  compacting(reason: string): void {
    this.show(compactingView(reason));
  }

  private show(view: StatusView): void {
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = BACKGROUND[view.level];
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
