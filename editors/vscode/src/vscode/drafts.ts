/**
 * Draft documents in VS Code: **Pi: Preview Compaction** opens the DRAFT as an
 * editable untitled Markdown document (see `core/drafts`), with Commit /
 * Discard as CodeLenses on its first line and as editor title buttons
 * (`pi.draftActive`). Commit sends the summary only when it was edited;
 * closing the document discards the draft (the daemon lets it expire).
 */
import * as vscode from "vscode";
import type { PiClient } from "../core/client";
import { commitSummary, committedMessage, draftDocument, replacedRange } from "../core/drafts";
import { describeError } from "../core/errors";
import type { CompactResult, Draft } from "../protocol";
import type { CurrentSession } from "./session";

const HOW_TO = "Commit: the Commit action above (or Ctrl+S); Discard: the Discard action, or close this tab.";

interface OpenDraft {
  draft: Draft;
  document: vscode.TextDocument;
}

export class DraftEditors implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly open = new Map<string, OpenDraft>();
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly session: CurrentSession) {
    this.subscriptions = [
      vscode.languages.registerCodeLensProvider({ scheme: "untitled", language: "markdown" }, this),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
      vscode.workspace.onDidCloseTextDocument((document) => this.forget(document)),
    ];
  }

  /** Opens `draft` for editing. */
  async show(draft: Draft): Promise<void> {
    const range = replacedRange(
      this.session.tree.allNodes(),
      this.session.tree.leafId,
      draft.firstKeptEntryId,
      (id) => this.session.tree.detail(id)?.firstKept,
    );
    const content = draftDocument(draft, draft.kind === "compaction" ? range : undefined, HOW_TO);
    const document = await vscode.workspace.openTextDocument({ language: "markdown", content });
    this.open.set(document.uri.toString(), { draft, document });
    await vscode.window.showTextDocument(document, { preview: false });
    this.lensesChanged.fire();
    this.updateContext();
  }

  /** The draft of `uri` (else of the active editor), if it is a draft document. */
  find(uri?: vscode.Uri): OpenDraft | undefined {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri;
    return target ? this.open.get(target.toString()) : undefined;
  }

  /**
   * Writes the draft of `uri` (edited text as `summary` only if it changed); closes it on
   * success and returns the result, else shows why and keeps the document open.
   */
  async commit(pi: PiClient, uri?: vscode.Uri): Promise<CompactResult | undefined> {
    const open = this.find(uri);
    if (open === undefined) {
      void vscode.window.showWarningMessage("Pi: this is not a draft document (run Pi: Preview Compaction).");
      return undefined;
    }
    const { summary, problem } = commitSummary(open.draft, open.document.getText());
    if (problem !== undefined) {
      void vscode.window.showWarningMessage(`Pi: ${problem}`);
      return undefined;
    }
    let result: CompactResult;
    try {
      result = await pi.commitDraft(open.draft.sessionId, open.draft.draftId, summary);
    } catch (error) {
      void vscode.window.showErrorMessage(`Pi: commit failed: ${describeError(error, "commitDraft")}`);
      return undefined;
    }
    await this.close(open);
    await this.session.reload(pi);
    void this.offerUndo(committedMessage(result, summary !== undefined), result);
    return result;
  }

  /** Closes the draft document of `uri` without writing anything. */
  async discard(uri?: vscode.Uri): Promise<void> {
    const open = this.find(uri);
    if (open !== undefined) {
      await this.close(open);
      void vscode.window.showInformationMessage("Pi: draft discarded; nothing was written.");
    }
  }

  /** A message with an Undo button (runs `pi.undo` on the entry just written). */
  async offerUndo(message: string, result: { entry?: { id?: unknown } | null }): Promise<void> {
    const entryId = typeof result.entry?.id === "string" ? result.entry.id : undefined;
    const choice = await vscode.window.showInformationMessage(message, ...(entryId ? ["Undo"] : []));
    if (choice === "Undo") {
      await vscode.commands.executeCommand("pi.undo", entryId);
    }
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (!this.open.has(document.uri.toString())) {
      return [];
    }
    const top = new vscode.Range(0, 0, 0, 0);
    return [
      new vscode.CodeLens(top, { title: "$(check) Commit", command: "pi.commitDraft", arguments: [document.uri] }),
      new vscode.CodeLens(top, { title: "$(trash) Discard", command: "pi.discardDraft", arguments: [document.uri] }),
    ];
  }

  private async close(open: OpenDraft): Promise<void> {
    this.open.delete(open.document.uri.toString());
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === open.document);
    if (editor !== undefined) {
      await vscode.window.showTextDocument(editor.document, editor.viewColumn);
      await vscode.commands.executeCommand("workbench.action.revertAndCloseActiveEditor");
    }
    this.lensesChanged.fire();
    this.updateContext();
  }

  private forget(document: vscode.TextDocument): void {
    if (this.open.delete(document.uri.toString())) {
      this.updateContext();
    }
  }

  private updateContext(): void {
    void vscode.commands.executeCommand("setContext", "pi.draftActive", this.find() !== undefined);
  }

  dispose(): void {
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.lensesChanged.dispose();
  }
}
