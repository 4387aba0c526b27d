/**
 * The masking tier in VS Code: **Mask Old Tool Output** (a dry run, a question with its count
 * and tokens, then `pi/mask`), **Mask This Tool Output**, **Unmask** (one result or all masked
 * ones of the leaf's context, `pi/unmask`) and **Show Original** (a read-only document of the
 * stored tool result, fetched from the daemon each time it is shown).
 */
import * as vscode from "vscode";
import type { PiClient } from "../core/client";
import { describeError, type ErrorAction } from "../core/errors";
import { maskedMessage, maskQuestion, NOTHING_TO_MASK } from "../core/masking";
import type { MaskResult } from "../protocol";
import { PiDocuments } from "./documents";
import type { CurrentSession } from "./session";

export class MaskCommands {
  constructor(
    private readonly session: CurrentSession,
    private readonly documents: PiDocuments,
    /** Reveals and selects an entry in the side bar's tree. */
    private readonly reveal: (entryId: string) => Promise<void> = async () => {},
  ) {}

  /** The commands, each given `(pi, sessionId, entryId?)` by the caller. */
  table(): Record<string, (pi: PiClient, sessionId: string, entryId?: string) => Promise<void>> {
    return {
      "pi.maskToolOutput": (pi, id) => this.maskOld(pi, id),
      "pi.tree.mask": (pi, id, entry) =>
        entry === undefined ? Promise.resolve() : this.write(pi, "mask", () => pi.mask(id, { entryIds: [entry] })),
      "pi.unmask": (pi, id, entry) => this.unmask(pi, id, entry),
      "pi.unmaskAll": (pi, id) => this.unmaskAll(pi, id),
      "pi.tree.showOriginal": (pi, id, entry) => this.showOriginal(pi, id, entry),
    };
  }

  /** The tool result an entry stands for: a context edit's target, else the entry itself. */
  target(entryId: string): string {
    const node = this.session.tree.node(entryId);
    if (node?.type !== "context_edit") {
      return entryId;
    }
    const preview = node.preview ?? "";
    return preview.slice(0, Math.max(0, preview.indexOf(": "))) || entryId;
  }

  private async maskOld(pi: PiClient, sessionId: string): Promise<void> {
    const dry = await pi.mask(sessionId, { dryRun: true }).catch((error: unknown) => this.fail("mask", error));
    if (dry === undefined) {
      return;
    }
    if ((dry.edits ?? []).length === 0) {
      void vscode.window.showInformationMessage(`Pi: ${NOTHING_TO_MASK}`);
      return;
    }
    const choice = await vscode.window.showInformationMessage(`Pi: ${maskQuestion(dry)}`, { modal: true }, "Mask");
    if (choice === "Mask") {
      await this.write(pi, "mask", () => pi.mask(sessionId));
    }
  }

  private async unmask(pi: PiClient, sessionId: string, entryId?: string): Promise<void> {
    let target = entryId === undefined ? undefined : this.target(entryId);
    if (target === undefined) {
      const items = [...this.session.masked.values()].map((edit) => ({
        label: this.session.tree.view(edit.id).label,
        description: edit.targetId,
        target: edit.targetId,
      }));
      if (items.length === 0) {
        void vscode.window.showInformationMessage("Pi: no tool result is masked in the context of the leaf.");
        return;
      }
      target = (await vscode.window.showQuickPick(items, { title: "Pi: Unmask which tool result?" }))?.target;
    }
    if (target !== undefined) {
      const chosen = target;
      await this.write(pi, "unmask", () => pi.unmask(sessionId, [chosen]));
    }
  }

  private async unmaskAll(pi: PiClient, sessionId: string): Promise<void> {
    const targets = [...this.session.masked.keys()];
    if (targets.length === 0) {
      void vscode.window.showInformationMessage("Pi: no tool result is masked in the context of the leaf.");
      return;
    }
    await this.write(pi, "unmask", () => pi.unmask(sessionId, targets));
  }

  private async showOriginal(pi: PiClient, sessionId: string, entryId?: string): Promise<void> {
    const id = entryId === undefined ? undefined : this.target(entryId);
    if (id === undefined || this.session.tree.node(id)?.role !== "toolResult") {
      void vscode.window.showInformationMessage("Pi: that entry is not a tool result.");
      return;
    }
    await this.session.reload(pi); // the masked flag of the header follows the file as it is now
    const masked = this.session.masked.has(id) ? "1" : "0";
    const uri = PiDocuments.uri("original", sessionId, `Original ${id}`, id, { masked });
    this.documents.refresh(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document, { preview: true });
  }

  /** Runs one `pi/mask` / `pi/unmask`, reloads the tree and says what changed. */
  private async write(pi: PiClient, kind: "mask" | "unmask", run: () => Promise<MaskResult>): Promise<void> {
    let result: MaskResult;
    try {
      result = await run();
    } catch (error) {
      this.fail(kind, error);
      return;
    }
    await this.session.reload(pi);
    const last = result.edits?.[result.edits.length - 1] as { id?: unknown } | undefined;
    if (typeof last?.id === "string") {
      await this.reveal(last.id); // the edits just written, at the leaf
    }
    void vscode.window.showInformationMessage(maskedMessage(kind, result));
  }

  private fail(action: ErrorAction, error: unknown): undefined {
    void vscode.window.showErrorMessage(`Pi: ${action} failed: ${describeError(error, action)}`);
    return undefined;
  }
}
