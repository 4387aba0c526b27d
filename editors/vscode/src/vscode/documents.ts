/** Read-only virtual markdown documents (`pi-sessiond:` URIs): context, stats, summaries. */
import * as vscode from "vscode";
import type { PiClient } from "../core/client";
import { contextMarkdown, statsMarkdown, summaryMarkdown } from "../core/render";

export const SCHEME = "pi-sessiond";

export class PiDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly client: () => Promise<PiClient | undefined>) {}

  /** The URI of one document; `kind` is `context`, `stats` or `summary`. */
  static uri(kind: string, sessionId: string, title: string, entryId = ""): vscode.Uri {
    const query = new URLSearchParams({ kind, session: sessionId, entry: entryId }).toString();
    return vscode.Uri.from({ scheme: SCHEME, path: `/${title.replace(/[\\/]/g, "_")}.md`, query });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const query = new URLSearchParams(uri.query);
    const session = query.get("session") ?? "";
    const title = uri.path.slice(1, -3);
    const pi = await this.client();
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

/** Opens a virtual document as a markdown editor (read-only by construction). */
export async function showDocument(uri: vscode.Uri): Promise<void> {
  const document = await vscode.workspace.openTextDocument(uri);
  await vscode.languages.setTextDocumentLanguage(document, "markdown");
  await vscode.window.showTextDocument(document, { preview: true });
}
