/**
 * Where each effective `pi.*` value came from (the **Pi: Show Settings Sources** document), and
 * the remote-window rule: VS Code applies machine-scoped settings of a remote window (code-server,
 * Remote-SSH, WSL, containers) from its Remote settings only, so a user-level value of such a key
 * is silently ignored there. The scopes stay machine (a workspace must not pick the daemon or
 * redirect the key); instead this says so and points to Remote settings.
 */
import type { InspectedSetting } from "./settings";

/** Every `pi.*` key the extension contributes; `machine` marks the machine(-overridable) scoped ones. */
export const PI_KEYS: ReadonlyArray<{ key: string; machine: boolean }> = [
  { key: "daemon.command", machine: true },
  { key: "daemon.python", machine: true },
  { key: "sessionsDir", machine: true },
  { key: "summarizer.provider", machine: true },
  { key: "summarizer.model", machine: true },
  { key: "summarizer.baseUrl", machine: true },
  { key: "summarizer.apiKeyEnv", machine: true },
  { key: "compaction.enabled", machine: false },
  { key: "compaction.reserveTokens", machine: false },
  { key: "compaction.keepRecentTokens", machine: false },
  { key: "compaction.masking.enabled", machine: false },
  { key: "compaction.masking.tools", machine: false },
  { key: "compaction.masking.minTokens", machine: false },
  { key: "compaction.masking.olderThanTokens", machine: false },
  { key: "compaction.prepareAt", machine: false },
  { key: "contextWindow", machine: false },
  { key: "tokenizer", machine: false },
  { key: "reviewSummaries", machine: false },
  { key: "trace.server", machine: false },
];

export const REMOTE_SETTINGS_HINT =
  "in a remote window VS Code ignores user-level values of machine-scoped settings: " +
  "set it in Remote settings (**Preferences: Open Remote Settings**)";

/** One row: the effective value of `pi.<key>` and where it came from. */
export interface SourceRow {
  key: string;
  value: unknown;
  source: string;
  note: string;
}

/** `inspect()` plus the default, as VS Code reports it. */
export interface Inspected extends InspectedSetting {
  defaultValue?: unknown;
}

/**
 * The row for `pi.<key>`. `remoteName` is `vscode.env.remoteName` (`undefined` in a local window).
 * `summarizer.*` takes the user (or Remote) value only: a workspace value is listed as ignored.
 */
export function sourceRow(key: string, machine: boolean, inspected: Inspected | undefined, remoteName?: string): SourceRow {
  const user = remoteName && machine ? "Remote settings" : "user settings";
  const i = inspected ?? {};
  const userOnly = key.startsWith("summarizer.");
  const layers: Array<[string, unknown]> = userOnly
    ? [[user, i.globalValue]]
    : [
        ["workspace folder settings", i.workspaceFolderValue],
        ["workspace settings", i.workspaceValue],
        [user, i.globalValue],
      ];
  const found = layers.find(([, value]) => value !== undefined);
  const notes: string[] = [];
  if (userOnly && (i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined)) {
    notes.push("the workspace value is ignored (a workspace cannot redirect your key)");
  }
  if (found === undefined && remoteName && machine) {
    notes.push(`unset: ${REMOTE_SETTINGS_HINT}`);
  }
  return {
    key,
    value: found === undefined ? i.defaultValue : found[1],
    source: found === undefined ? "default" : found[0],
    note: notes.join("; "),
  };
}

function cell(value: unknown): string {
  const text = value === undefined ? "—" : JSON.stringify(value);
  return `\`${text.replace(/`/g, "'").replace(/\|/g, "\\|")}\``;
}

/**
 * The document: the extension's `pi.*` rows, then the daemon's effective SETTINGS with the layer
 * each came from (`pi/getSettings` `sources`: default, global, project, initialize, session).
 */
export function sourcesMarkdown(
  rows: SourceRow[],
  remoteName: string | undefined,
  daemon?: { settings?: Record<string, unknown>; sources?: Record<string, string> | null },
): string {
  const lines = ["# Pi settings: where each value comes from", ""];
  lines.push(
    remoteName
      ? `This is a **remote window** (\`${remoteName}\`): machine-scoped \`pi.*\` settings come from Remote settings only.`
      : "This is a local window.",
    "",
    "| Setting | Value | From | Note |",
    "| --- | --- | --- | --- |",
  );
  for (const row of rows) {
    lines.push(`| \`pi.${row.key}\` | ${cell(row.value)} | ${row.source} | ${row.note} |`);
  }
  const sources = daemon?.sources ?? {};
  const keys = Object.keys(sources).sort();
  if (keys.length > 0) {
    lines.push("", "## The daemon's effective settings", "", "| Setting | Value | Layer |", "| --- | --- | --- |");
    for (const key of keys) {
      lines.push(`| \`${key}\` | ${cell(lookup(daemon?.settings ?? {}, key))} | ${sources[key]} |`);
    }
  }
  return `${lines.join("\n")}\n`;
}

function lookup(settings: Record<string, unknown>, dotted: string): unknown {
  let value: unknown = settings;
  for (const part of dotted.split(".")) {
    value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[part] : undefined;
  }
  return value;
}

/**
 * Before a summary in a remote window: when `pi.summarizer.provider` has no value here and the
 * daemon's provider is still its default (no `~/.pi/agent/settings.json` either), the offline
 * summarizer runs although the person may have set one in user settings, which VS Code ignores in
 * this window. Says so (`undefined`: nothing to say). `daemonSources` is `pi/getSettings` `sources`.
 */
export function remoteSummarizerWarning(
  remoteName: string | undefined,
  provider: Inspected | undefined,
  daemonSources: Record<string, string> | null | undefined,
): string | undefined {
  if (!remoteName || provider?.globalValue !== undefined || provider?.workspaceValue !== undefined) {
    return undefined;
  }
  const layer = daemonSources?.["summarizer.provider"] ?? daemonSources?.summarizer ?? "default";
  if (layer !== "default") {
    return undefined;
  }
  return (
    `Pi: summarizing with the offline summarizer: pi.summarizer.* is unset for this remote window (${remoteName}); ` +
    `${REMOTE_SETTINGS_HINT.replace(/\*\*/g, "")}.`
  );
}
