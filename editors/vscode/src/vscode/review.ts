/** The `pi/reviewSummary` hook in VS Code: the summary in an editor, Accept / Edit / Reject. */
import * as vscode from "vscode";
import type { CancellationToken } from "vscode-jsonrpc";
import { runReview } from "../core/review";
import type { ReviewSummaryAnswer, ReviewSummaryParams } from "../protocol";

export async function reviewSummary(params: ReviewSummaryParams, token: CancellationToken): Promise<ReviewSummaryAnswer> {
  const document = await vscode.workspace.openTextDocument({ language: "markdown", content: params.summary });
  const editor = await vscode.window.showTextDocument(document, { preview: false });
  const cancelled = new Promise<undefined>((resolve) => token.onCancellationRequested(() => resolve(undefined)));
  const answer = await runReview(
    params,
    async (prompt, buttons, state) => {
      if (state.phase === "editing") {
        await vscode.window.showTextDocument(editor.document, { preview: false });
      }
      return Promise.race([vscode.window.showInformationMessage(prompt, ...buttons), cancelled]);
    },
    () => document.getText(),
    () => token.isCancellationRequested,
  );
  await closeUnsaved(document);
  return answer ?? { action: "reject" };
}

async function closeUnsaved(document: vscode.TextDocument): Promise<void> {
  const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
  if (editor === undefined) {
    return;
  }
  await vscode.window.showTextDocument(editor.document, editor.viewColumn);
  await vscode.commands.executeCommand("workbench.action.revertAndCloseActiveEditor");
}
