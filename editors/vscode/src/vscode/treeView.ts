/** The side bar's session tree (a `TreeDataProvider` over `TreeModel`). */
import * as vscode from "vscode";
import type { CurrentSession } from "./session";

export class SessionTreeProvider implements vscode.TreeDataProvider<string> {
  private readonly changed = new vscode.EventEmitter<string | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly session: CurrentSession) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getChildren(id?: string): string[] {
    return this.session.tree.children(id);
  }

  getParent(id: string): string | undefined {
    return this.session.tree.displayParent(id);
  }

  getTreeItem(id: string): vscode.TreeItem {
    const model = this.session.tree;
    const view = model.view(id);
    const state = !model.isExpandable(id)
      ? vscode.TreeItemCollapsibleState.None
      : model.isExpanded(id)
        ? vscode.TreeItemCollapsibleState.Expanded
        : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem({ label: view.label, highlights: view.isLeaf ? [[0, view.label.length]] : [] }, state);
    item.id = `${this.session.info?.sessionId ?? ""}/${id}`;
    item.description = view.description;
    item.tooltip = new vscode.MarkdownString().appendText(view.tooltip);
    const color = view.isLeaf ? "charts.green" : view.onActivePath ? "charts.blue" : undefined;
    item.iconPath = new vscode.ThemeIcon(view.icon, color ? new vscode.ThemeColor(color) : undefined);
    item.contextValue = view.contextValue;
    if (view.contextValue.startsWith("entry-summary")) {
      item.command = { command: "pi.tree.openSummary", title: "Open Summary", arguments: [id] };
    } else if (/^entry-(masked|edit|history)/.test(view.contextValue)) {
      item.command = { command: "pi.tree.showOriginal", title: "Show Original", arguments: [id] };
    }
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
