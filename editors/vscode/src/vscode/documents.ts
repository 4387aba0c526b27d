/** Read-only virtual markdown documents (`pi-sessiond:` URIs): context, stats, summaries. */
import * as vscode from "vscode";
import type { PiClient } from "../core/client";
import { contextMarkdown, statsMarkdown, summaryMarkdown } from "../core/render";
import { PI_KEYS, sourceRow, sourcesMarkdown } from "../core/sources";

export const SCHEME = "pi-sessiond";

export class PiDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly client: () => Promise<PiClient | undefined>) {}

  /** The URI of one document; `kind` is `context`, `stats`, `summary` or `sources`. */
  static uri(kind: string, sessionId: string, title: string, entryId = ""): vscode.Uri {
    const query = new URLSearchParams({ kind, session: sessionId, entry: entryId }).toString();
    return vscode.Uri.from({ scheme: SCHEME, path: `/${title.replace(/[\\/]/g, "_")}.md`, query });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const query = new URLSearchParams(uri.query);
    const session = query.get("session") ?? "";
    const title = uri.path.slice(1, -3);
    const pi = await this.client();
    if (query.get("kind") === "sources") {
      const daemon = session && pi ? await pi.getSettings(session).catch(() => undefined) : undefined;
      return settingsSources(daemon);
    }
    if (pi === undefined) {
      return "pi-sessiond is not running.";
    }
    switch (query.get("kind")) {
      case "context":
        return contextMarkdown(await pi.getContext(session), title);
      case "stats":
        return statsMarkdown(await pi.getStats(session), title);
      default: {
        const [entry] = await pi.getEntries(session, [query.get("entry") ?? ""]);
        if (entry?.type !== "compaction" && entry?.type !== "branch_summary") {
          return "That entry is not a compaction or a branch summary.";
        }
        return summaryMarkdown(entry);
      }
    }
  }
}

/** The **Pi: Show Settings Sources** document: the `pi.*` rows, then the daemon's layers. */
function settingsSources(daemon: Parameters<typeof sourcesMarkdown>[2]): string {
  const config = vscode.workspace.getConfiguration("pi");
  const remote = vscode.env.remoteName;
  const rows = PI_KEYS.map(({ key, machine }) => sourceRow(key, machine, config.inspect(key), remote));
  return sourcesMarkdown(rows, remote, daemon);
}

/**
 * Shows a virtual document rendered (VS Code's built-in Markdown preview); falls back to a
 * read-only markdown editor where the preview is unavailable.
 */
export async function showDocument(uri: vscode.Uri): Promise<void> {
  const document = await vscode.workspace.openTextDocument(uri);
  await vscode.languages.setTextDocumentLanguage(document, "markdown");
  try {
    await vscode.commands.executeCommand("markdown.showPreview", uri);
  } catch {
    await vscode.window.showTextDocument(document, { preview: true });
  }
}
