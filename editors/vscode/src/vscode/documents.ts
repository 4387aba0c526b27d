/** Read-only virtual documents (`pi-sessiond:` URIs): context, stats, summaries (markdown), originals of masked tool output (text). */
import * as vscode from "vscode";
import type { PiClient } from "../core/client";
import { originalDocument, toolCallArguments } from "../core/masking";
import { contextMarkdown, statsMarkdown, summaryMarkdown } from "../core/render";
import { PI_KEYS, sourceRow, sourcesMarkdown } from "../core/sources";

export const SCHEME = "pi-sessiond";

export class PiDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly client: () => Promise<PiClient | undefined>) {}

  /** The URI of one document; `kind` is `context`, `stats`, `summary`, `sources` or `original` (`.txt`). */
  static uri(kind: string, sessionId: string, title: string, entryId = "", extra: Record<string, string> = {}): vscode.Uri {
    const query = new URLSearchParams({ kind, session: sessionId, entry: entryId, ...extra }).toString();
    const ext = kind === "original" ? "txt" : "md";
    return vscode.Uri.from({ scheme: SCHEME, path: `/${title.replace(/[\\/]/g, "_")}.${ext}`, query });
  }

  /** Makes VS Code ask for `uri`'s content again (an open document is otherwise reused as it was). */
  refresh(uri: vscode.Uri): void {
    this.changed.fire(uri);
  }

  dispose(): void {
    this.changed.dispose();
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const query = new URLSearchParams(uri.query);
    const session = query.get("session") ?? "";
    const title = uri.path.slice(1, uri.path.lastIndexOf("."));
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
      case "original":
        return original(pi, session, query.get("entry") ?? "", query.get("masked") === "1");
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

/** The **Show Original** document: the tool result as stored (`pi/getEntries`, asked each time), with its call's arguments. */
async function original(pi: PiClient, sessionId: string, entryId: string, masked: boolean): Promise<string> {
  const [entry] = (await pi.getEntries(sessionId, [entryId])) as unknown as Array<Record<string, unknown>>;
  const message = entry?.message as { toolCallId?: unknown } | undefined;
  let args: unknown;
  let parent = entry?.parentId;
  for (let hops = 0; args === undefined && typeof parent === "string" && hops < 64; hops++) {
    const [up] = (await pi.getEntries(sessionId, [parent])) as unknown as Array<Record<string, unknown>>;
    const role = (up?.message as { role?: unknown } | undefined)?.role;
    args = role === "assistant" ? (toolCallArguments(up, message?.toolCallId) ?? null) : undefined;
    parent = role === "assistant" ? undefined : up?.parentId;
  }
  const text = entry === undefined ? undefined : originalDocument(entry, args ?? undefined, masked);
  return text ?? `Entry ${entryId} is not a tool result.`;
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
