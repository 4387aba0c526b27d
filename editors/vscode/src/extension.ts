/**
 * VS Code entry point: wires the daemon, the open session, the views and the
 * commands together. Everything here is adapter; logic lives in `core/`.
 */
import * as vscode from "vscode";
import type { PiClient } from "./core/client";
import { describeError } from "./core/errors";
import { changeAction, piSettings } from "./core/settings";
import { formatTokens } from "./core/status";
import { Commands } from "./vscode/commands";
import { explicitSetting } from "./vscode/config";
import { Daemon } from "./vscode/daemon";
import { undoTarget } from "./core/drafts";
import { PiDocuments, SCHEME } from "./vscode/documents";
import { DraftEditors } from "./vscode/drafts";
import { MaskCommands } from "./vscode/masking";
import { reviewSummary } from "./vscode/review";
import { CurrentSession } from "./vscode/session";
import { StatusBar } from "./vscode/statusBar";
import { SessionTreeProvider } from "./vscode/treeView";

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("Pi Sessions", { log: true });
  const daemon = new Daemon(output);
  const session = new CurrentSession();
  const tree = new SessionTreeProvider(session);
  const status = new StatusBar(session);
  const view = vscode.window.createTreeView("pi.sessionTree", { treeDataProvider: tree, showCollapseAll: true });
  const drafts = new DraftEditors(session);
  const documents = new PiDocuments(() => daemon.ensure());
  const reveal = async (id: string) => {
    if (session.tree.node(id) !== undefined) {
      await view.reveal(id, { select: true, focus: false, expand: true });
    }
  };

  session.onDidChange(() => {
    tree.refresh();
    status.update();
    view.description = session.title;
    const undoable = undoTarget(session.tree.leafId, (id) => session.tree.node(id)) !== undefined;
    void vscode.commands.executeCommand("setContext", "pi.canUndo", undoable);
  });
  daemon.onDidStart((pi) => context.subscriptions.push(...listen(pi, session, status, output, drafts)));
  context.subscriptions.push(
    output,
    daemon,
    session,
    tree,
    status,
    view,
    drafts,
    documents,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, documents),
    ...new Commands(daemon, session, output, drafts, new MaskCommands(session, documents, reveal), reveal).register(),
    vscode.workspace.onDidChangeConfiguration((event) => onConfigChange(event, daemon)),
  );
}

export function deactivate(): void {}

/** Notification and hook handlers of one daemon run. */
function listen(
  pi: PiClient,
  session: CurrentSession,
  status: StatusBar,
  output: vscode.LogOutputChannel,
  drafts: DraftEditors,
) {
  const mine = (sessionId: string) => sessionId === session.info?.sessionId;
  const handlers = [
    pi.onSessionChanged((event) => mine(event.sessionId) && session.scheduleReload(pi)),
    pi.onSessionLoaded((event) => {
      const path = mine(event.sessionId) ? session.info?.path : undefined;
      for (const warning of event.warnings ?? []) {
        output.warn(`${path ?? event.sessionId}:${warning.line}: ${warning.message}`);
      }
      if (event.error && mine(event.sessionId)) {
        void vscode.window.showErrorMessage(`Pi: the session could not be read in full: ${event.error}`);
      } else if (mine(event.sessionId)) {
        session.scheduleReload(pi);
      }
    }),
    pi.onSessionLive((event) => {
      if (event.live && event.holder) session.live.set(event.sessionId, event.holder);
      else session.live.delete(event.sessionId);
      status.update();
    }),
    pi.onCompactionStarted((event) => mine(event.sessionId) && status.compacting(event.reason)),
    pi.onCompactionEnded((event) => {
      if (!mine(event.sessionId)) {
        return;
      }
      status.update();
      if (event.error) {
        void vscode.window.showWarningMessage(`Pi: auto-compaction failed: ${event.error}`);
      } else {
        const entry = event.entry as { id?: string; type?: string; tokensBefore?: number } | undefined;
        const before = entry?.tokensBefore ? ` (${formatTokens(entry.tokensBefore)} tokens before)` : "";
        vscode.window.setStatusBarMessage(`$(archive) Pi: auto-compacted${before}`, 5000);
        if (entry?.type === "compaction" && event.reason === "threshold") {
          // Not after masking alone (a context edit, which pi/undo does not take back) nor after
          // an overflow (undoing it would overflow again).
          void drafts.offerUndo(`Pi: auto-compacted${before}.`, { entry });
        }
      }
    }),
  ];
  if (vscode.workspace.getConfiguration("pi").get<boolean>("reviewSummaries", false)) {
    handlers.push(
      pi.handleReviewSummary((params, token) =>
        reviewSummary(params, token).catch((error: unknown) => {
          output.error(`review: ${describeError(error)}`);
          return { action: "reject" as const };
        }),
      ),
    );
  }
  return handlers;
}

async function onConfigChange(event: vscode.ConfigurationChangeEvent, daemon: Daemon): Promise<void> {
  const action = changeAction((key) => event.affectsConfiguration(key));
  if (action === "restart") {
    await vscode.commands.executeCommand("pi.restartDaemon");
  } else if (action === "notify") {
    const pi = await daemon.ensure();
    await pi?.didChangeConfiguration(piSettings(explicitSetting));
  }
}
