/**
 * VS Code settings (`pi.*`) → the daemon's SETTINGS, the same tree as Pi's `settings.json`.
 *
 * Only values the user set explicitly are sent: a default sent at
 * `initialize` would override the user's own `~/.pi/agent/settings.json`.
 */
import type { InitializationOptions, SettingsResult } from "../protocol";

/** The `pi.*` keys that map into SETTINGS, with their dotted SETTINGS path. */
export const SETTINGS_KEYS: Readonly<Record<string, string>> = {
  "summarizer.provider": "summarizer.provider",
  "summarizer.model": "summarizer.model",
  "summarizer.baseUrl": "summarizer.baseUrl",
  "summarizer.apiKeyEnv": "summarizer.apiKeyEnv",
  "compaction.enabled": "compaction.enabled",
  "compaction.reserveTokens": "compaction.reserveTokens",
  "compaction.keepRecentTokens": "compaction.keepRecentTokens",
  "compaction.masking.enabled": "compaction.masking.enabled",
  "compaction.masking.tools": "compaction.masking.tools",
  "compaction.masking.minTokens": "compaction.masking.minTokens",
  "compaction.masking.olderThanTokens": "compaction.masking.olderThanTokens",
  "compaction.prepareAt": "compaction.prepareAt",
  contextWindow: "contextWindow",
  tokenizer: "tokenizer",
};

/** Keys whose explicit `null` is a value ("from the session's model", "off"), sent as such. */
const NULLABLE = new Set(["contextWindow", "compaction.prepareAt"]);

/** Keys whose change needs a new daemon (command) or a new `initialize` (hooks). */
export const RESTART_KEYS = ["daemon.command", "daemon.python", "sessionsDir", "reviewSummaries"] as const;

/** Reads one `pi.<key>` setting: its explicitly set value, or `undefined` when left at the default. */
export type ExplicitSetting = (key: string) => unknown;

/** The nested SETTINGS object built from the explicitly set `pi.*` values. */
export function piSettings(get: ExplicitSetting): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (const [key, path] of Object.entries(SETTINGS_KEYS)) {
    const value = get(key);
    if (value === undefined || value === "" || (value === null && !NULLABLE.has(key))) {
      continue;
    }
    setPath(settings, path.split("."), value);
  }
  return settings;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  const [head, ...rest] = path;
  if (head === undefined) {
    return;
  }
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  if (typeof target[head] !== "object" || target[head] === null) {
    target[head] = {};
  }
  setPath(target[head] as Record<string, unknown>, rest, value);
}

/** `initializationOptions` for the daemon: `{settings, sessionsDir?}`. */
export function initializationOptions(get: ExplicitSetting): InitializationOptions {
  const options: InitializationOptions = { settings: piSettings(get) };
  const sessionsDir = get("sessionsDir");
  if (typeof sessionsDir === "string" && sessionsDir !== "") {
    options.sessionsDir = sessionsDir;
  }
  return options;
}

/** The client capabilities that declare the hooks (`capabilities.experimental.pi.hooks`). */
export function piCapabilities(reviewSummaries: boolean): { pi: { hooks: string[] } } {
  return { pi: { hooks: reviewSummaries ? ["reviewSummary"] : [] } };
}

/** What a configuration change asks of the daemon. */
export function changeAction(affects: (key: string) => boolean): "restart" | "notify" | "none" {
  if (RESTART_KEYS.some((key) => affects(`pi.${key}`))) {
    return "restart";
  }
  return Object.keys(SETTINGS_KEYS).some((key) => affects(`pi.${key}`)) ? "notify" : "none";
}

/** The effective `compaction.reserveTokens` from `pi/getSettings` (Pi's default when absent). */
export function effectiveReserve(result: SettingsResult | undefined): number {
  const compaction = result?.settings?.compaction as { reserveTokens?: unknown } | undefined;
  const value = compaction?.reserveTokens;
  return typeof value === "number" && value >= 0 ? value : 16384;
}

/** What `WorkspaceConfiguration.inspect` reports for one key. */
export interface InspectedSetting {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * The explicitly set value of `pi.<key>`: the most specific scope, except
 * `summarizer.*`, which only user settings may set (a cloned workspace must
 * not redirect the key, as `security.allowProjectSummarizerSettings`).
 */
export function explicitValue(key: string, inspected: InspectedSetting | undefined): unknown {
  if (inspected === undefined) {
    return undefined;
  }
  if (key.startsWith("summarizer.")) {
    return inspected.globalValue;
  }
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}
