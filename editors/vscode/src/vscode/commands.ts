/** The `Pi: …` commands: quick picks and input boxes around `PiClient` calls. */
import * as vscode from "vscode";
import { type PiClient, progressReporter, type SummaryOptions } from "../core/client";
import { undoneMessage, undoTarget } from "../core/drafts";
import { describeError, isCancelled } from "../core/errors";
import { NAVIGATE_CHOICES, type NavigateChoice, navigatedMessage, navigateOptions, sessionPicks } from "../core/picks";
import { remoteSummarizerWarning } from "../core/sources";
import { formatTokens } from "../core/status";
import type { Daemon } from "./daemon";
import type { DraftEditors } from "./drafts";
import { PiDocuments, showDocument } from "./documents";
import type { MaskCommands } from "./masking";
import type { CurrentSession } from "./session";

export class Commands {
  private warnedRemote = false;

  constructor(
    private readonly daemon: Daemon,
    private readonly session: CurrentSession,
    private readonly output: vscode.LogOutputChannel,
    private readonly drafts: DraftEditors,
    private readonly masking: MaskCommands,
    /** Reveals and selects an entry in the side bar's tree (expanding its branch). */
    private readonly reveal: (entryId: string) => Promise<void> = async () => {},
  ) {}

  register(): vscode.Disposable[] {
    const entry = (run: (pi: PiClient, sessionId: string, entryId: string) => Promise<void>) => (id?: string) =>
      this.withSession(async (pi, sessionId) => {
        const entryId = id ?? (await this.pickEntry("Which entry?"));
        if (entryId !== undefined) {
          await run(pi, sessionId, entryId);
        }
      });
    const table: Record<string, (...args: never[]) => unknown> = {
      "pi.openSession": () => this.openSession(),
      "pi.compact": () => this.withSession((pi, id) => this.compact(pi, id)),
      "pi.previewCompaction": () => this.withSession((pi, id) => this.preview(pi, id)),
      "pi.commitDraft": (uri?: vscode.Uri) => this.withSession((pi) => this.drafts.commit(pi, uri)),
      "pi.discardDraft": (uri?: vscode.Uri) => this.drafts.discard(uri),
      "pi.undo": (entryId?: string) => this.withSession((pi, id) => this.undo(pi, id, entryId)),
      "pi.navigateTree": entry((pi, id, target) => this.navigate(pi, id, target)),
      "pi.setLabel": entry((pi, id, target) => this.setLabel(pi, id, target)),
      "pi.fork": entry((pi, id, target) => this.fork(pi, id, target)),
      "pi.tree.navigate": entry((pi, id, target) => this.navigate(pi, id, target)),
      "pi.tree.setLabel": entry((pi, id, target) => this.setLabel(pi, id, target)),
      "pi.tree.fork": entry((pi, id, target) => this.fork(pi, id, target)),
      "pi.tree.openSummary": entry(async (_pi, id, target) => {
        await showDocument(PiDocuments.uri("summary", id, `Summary ${target}`, target));
      }),
      "pi.showContext": () =>
        this.withSession((_pi, id) => showDocument(PiDocuments.uri("context", id, this.session.title))),
      "pi.showStats": () => this.withSession((_pi, id) => showDocument(PiDocuments.uri("stats", id, this.session.title))),
      "pi.showSettingsSources": () =>
        showDocument(PiDocuments.uri("sources", this.session.info?.sessionId ?? "", "Pi settings sources")),
      "pi.refreshTree": () => this.withSession((pi) => this.session.reload(pi)),
      "pi.restartDaemon": () => this.restart(),
      "pi.showLog": () => this.output.show(),
    };
    for (const [name, run] of Object.entries(this.masking.table())) {
      table[name] = (id?: string) => this.withSession((pi, sessionId) => run(pi, sessionId, id));
    }
    return Object.entries(table).map(([name, run]) => vscode.commands.registerCommand(name, run));
  }

  async openSession(): Promise<void> {
    const pi = await this.daemon.ensure();
    if (pi === undefined) {
      return;
    }
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const sessions = await pi.listSessions(cwd);
    const browse = { label: "$(folder-opened) Open a session file…", description: "", detail: "", path: "" };
    const picked = await vscode.window.showQuickPick([...sessionPicks(sessions, new Date()), browse], {
      title: "Pi: Open Session",
      placeHolder: sessions.length ? "Sessions of this workspace, newest first" : "No sessions here yet",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    const path = picked === browse ? await this.browse() : picked?.path;
    if (path) {
      await this.report(async () => {
        const info = await pi.openSession(path);
        for (const warning of info.warnings ?? []) {
          this.output.warn(`${path}:${warning.line}: ${warning.message}`);
        }
        await this.session.open(pi, info);
      });
    }
  }

  private async browse(): Promise<string | undefined> {
    const uris = await vscode.window.showOpenDialog({ filters: { "Pi sessions": ["jsonl"] }, canSelectMany: false });
    return uris?.[0]?.fsPath;
  }

  private async compact(pi: PiClient, sessionId: string): Promise<void> {
    const instructions = await vscode.window.showInputBox({
      title: "Pi: Compact Session",
      prompt: "Custom instructions for the summary (optional; Enter to compact)",
      placeHolder: "e.g. focus on the API decisions",
    });
    if (instructions === undefined) {
      return;
    }
    void this.warnRemoteSummarizer(pi, sessionId);
    const result = await this.summarizing("Pi: compacting", (options) => pi.compact(sessionId, instructions, options));
    if (result !== undefined) {
      const saved = `${formatTokens(result.tokensBefore)} → ${formatTokens(result.tokensAfter)} tokens`;
      void this.drafts.offerUndo(`Pi: compacted (${saved}).`, result);
    }
  }

  /** **Pi: Preview Compaction**: a draft (nothing written) opened for editing, then Commit or Discard. */
  private async preview(pi: PiClient, sessionId: string): Promise<void> {
    const instructions = await vscode.window.showInputBox({
      title: "Pi: Preview Compaction",
      prompt: "Custom instructions for the summary (optional; Enter to prepare the draft)",
      placeHolder: "e.g. focus on the API decisions",
    });
    if (instructions === undefined) {
      return;
    }
    void this.warnRemoteSummarizer(pi, sessionId);
    const draft = await this.summarizing("Pi: preparing a draft", (options) =>
      pi.compactDraft(sessionId, instructions, options),
    );
    if (draft !== undefined) {
      await this.drafts.show(draft);
    }
  }

  /** **Pi: Undo**: takes back the compaction or branch summary at the leaf (`entryId`: the one just written). */
  private async undo(pi: PiClient, sessionId: string, entryId?: string): Promise<void> {
    const target = undoTarget(this.session.tree.leafId, (id) => this.session.tree.node(id));
    const id = entryId ?? target?.entryId;
    if (id === undefined) {
      void vscode.window.showInformationMessage("Pi: the leaf is not a compaction or a branch summary; nothing to undo.");
      return;
    }
    const kind = this.session.tree.node(id)?.type === "branch_summary" ? "branch summary" : "compaction";
    try {
      const result = await pi.undo(sessionId, id);
      await this.session.reload(pi);
      if (typeof result.leafId === "string") {
        await this.reveal(result.leafId);
      }
      void vscode.window.showInformationMessage(undoneMessage(kind, result));
    } catch (error) {
      this.output.error(String(error));
      void vscode.window.showErrorMessage(`Pi: undo failed: ${describeError(error, "undo")}`);
    }
  }

  private async navigate(pi: PiClient, sessionId: string, targetId: string): Promise<void> {
    if (targetId === this.session.tree.leafId) {
      void vscode.window.showInformationMessage("Pi: that entry is already the leaf.");
      return;
    }
    const choice = await vscode.window.showQuickPick<NavigateChoice & vscode.QuickPickItem>([...NAVIGATE_CHOICES], {
      title: "Pi: Navigate Tree — summarize the branch you leave?",
    });
    if (choice === undefined) {
      return;
    }
    let instructions: string | undefined;
    if (choice.askInstructions) {
      instructions = await vscode.window.showInputBox({ title: "Pi: Summary instructions", prompt: "Focus of the summary" });
      if (instructions === undefined) {
        return;
      }
    }
    const options = navigateOptions(choice, instructions);
    const result = await this.summarizing("Pi: summarizing the branch", (watch) =>
      pi.navigateTree(sessionId, targetId, options, options.summarize ? watch : {}),
    );
    if (result === undefined) {
      return;
    }
    if (result.editorText) {
      await vscode.env.clipboard.writeText(result.editorText);
    }
    if (!result.cancelled && typeof result.leafId === "string") {
      // The tree keeps the collapsed state it had: reload, then reveal the new leaf explicitly.
      await this.session.reload(pi);
      await this.reveal(result.leafId);
    }
    if (result.entry?.type === "branch_summary") {
      void this.drafts.offerUndo(navigatedMessage(result), result);
    } else {
      void vscode.window.showInformationMessage(navigatedMessage(result));
    }
  }

  /** In a remote window whose pi.summarizer.* was dropped, says so once (see `remoteSummarizerWarning`). */
  private async warnRemoteSummarizer(pi: PiClient, sessionId: string): Promise<void> {
    if (this.warnedRemote || vscode.env.remoteName === undefined) {
      return;
    }
    const provider = vscode.workspace.getConfiguration("pi").inspect("summarizer.provider");
    const daemon = await pi.getSettings(sessionId).catch(() => undefined);
    const message = remoteSummarizerWarning(vscode.env.remoteName, provider, daemon?.sources);
    if (message === undefined) {
      return;
    }
    this.warnedRemote = true;
    const choice = await vscode.window.showWarningMessage(message, "Open Remote Settings", "Show Settings Sources");
    if (choice === "Open Remote Settings") {
      await vscode.commands.executeCommand("workbench.action.openRemoteSettings");
    } else if (choice === "Show Settings Sources") {
      await vscode.commands.executeCommand("pi.showSettingsSources");
    }
  }

  private async setLabel(pi: PiClient, sessionId: string, entryId: string): Promise<void> {
    const label = await vscode.window.showInputBox({
      title: "Pi: Set Label",
      prompt: "Label for this entry (empty clears it)",
      value: this.session.tree.node(entryId)?.label ?? "",
    });
    if (label !== undefined) {
      await this.report(() => pi.setLabel(sessionId, entryId, label.trim() === "" ? null : label.trim()));
    }
  }

  private async fork(pi: PiClient, sessionId: string, entryId: string): Promise<void> {
    await this.report(async () => {
      const info = await pi.fork(sessionId, entryId);
      await this.session.open(pi, info);
      void vscode.window.showInformationMessage(`Pi: forked into ${info.path ?? info.sessionId}.`);
    });
  }

  private async restart(): Promise<void> {
    const path = this.session.info?.path;
    const pi = await this.daemon.restart();
    if (pi !== undefined && path) {
      await this.report(async () => this.session.open(pi, await pi.openSession(path)));
    }
  }

  /** Runs a summarizer request under a cancellable progress notification. */
  private async summarizing<R>(title: string, run: (options: SummaryOptions) => Promise<R>): Promise<R | undefined> {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        try {
          return await run({ token, onProgress: progressReporter((update) => progress.report(update)) });
        } catch (error) {
          if (isCancelled(error)) {
            void vscode.window.showInformationMessage(`${title}: cancelled; nothing was written.`);
          } else {
            void vscode.window.showErrorMessage(`${title}: ${describeError(error)}`);
          }
          return undefined;
        }
      },
    );
  }

  private async pickEntry(title: string): Promise<string | undefined> {
    const rows = this.session.tree.pickRows();
    const items = rows.map((row) => ({ label: row.label, description: row.description, id: row.id }));
    const active = items.find((item) => item.id === this.session.tree.leafId);
    const pick = vscode.window.createQuickPick<(typeof items)[number]>();
    pick.title = `Pi: ${title}`;
    pick.items = items;
    pick.matchOnDescription = true;
    pick.activeItems = active ? [active] : [];
    return new Promise((resolve) => {
      pick.onDidAccept(() => {
        resolve(pick.selectedItems[0]?.id);
        pick.hide();
      });
      pick.onDidHide(() => {
        resolve(undefined);
        pick.dispose();
      });
      pick.show();
    });
  }

  private async withSession(run: (pi: PiClient, sessionId: string) => Promise<unknown>): Promise<void> {
    const pi = await this.daemon.ensure();
    if (pi === undefined) {
      return;
    }
    if (this.session.info === undefined) {
      await this.openSession();
    }
    const sessionId = this.session.info?.sessionId;
    if (sessionId !== undefined) {
      await this.report(() => run(pi, sessionId));
    }
  }

  private async report(run: () => Promise<unknown>): Promise<void> {
    try {
      await run();
    } catch (error) {
      this.output.error(String(error));
      void vscode.window.showErrorMessage(`Pi: ${describeError(error)}`);
    }
  }
}
