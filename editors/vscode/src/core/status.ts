/**
 * The status bar item: context usage against the window, e.g. `Pi 71% · 142k/200k`,
 * with a warning level when the context nears the auto-compaction threshold
 * (`contextWindow - compaction.reserveTokens`, as Pi's `shouldCompact`).
 */
import type { StatsResult } from "../protocol";

export type StatusLevel = "normal" | "warning" | "error";

export interface StatusView {
  text: string;
  tooltip: string;
  level: StatusLevel;
}

/** How far below the threshold (as a fraction of the window) the warning starts. */
export const WARNING_MARGIN = 0.1;

/** `142000` → `142k`, `1500` → `1.5k`, `1250000` → `1.25M`, `999` → `999`. */
export function formatTokens(tokens: number): string {
  const n = Math.max(0, Math.round(tokens));
  if (n < 1000) {
    return String(n);
  }
  if (n < 999_500) {
    return `${trim(n / 1000, n < 10_000 ? 1 : 0)}k`;
  }
  return `${trim(n / 1_000_000, 2)}M`;
}

function trim(value: number, digits: number): string {
  return String(Number(value.toFixed(digits)));
}

/** The level for `tokens` in a `window` with `reserveTokens` kept free. */
export function usageLevel(tokens: number, window: number, reserveTokens: number): StatusLevel {
  const threshold = window - reserveTokens;
  if (tokens > threshold) {
    return "error";
  }
  return tokens >= threshold - WARNING_MARGIN * window ? "warning" : "normal";
}

/** The item for a session's stats (`reserveTokens` from `pi.compaction.reserveTokens`). */
export function statusView(stats: StatsResult, reserveTokens: number): StatusView {
  const window = stats.contextWindow ?? 0;
  const known = stats.contextTokens;
  // Right after a compaction Pi's contextTokens is null until real usage arrives: show the estimate as ~N.
  const estimated = known === null || known === undefined;
  const tokens = estimated ? stats.estimatedContextTokens : known;
  if (!window || tokens === null || tokens === undefined) {
    const of = window ? `?/${formatTokens(window)}` : "?";
    return { text: `Pi ${of}`, tooltip: "Context size unknown until the next assistant message", level: "normal" };
  }
  const approx = estimated ? "~" : "";
  const percent = Math.round((tokens / window) * 100);
  const level = usageLevel(tokens, window, reserveTokens);
  const threshold = Math.max(0, window - reserveTokens);
  const what = estimated ? "Context estimated at" : "Context";
  const tooltip =
    `${what} ${tokens.toLocaleString("en-US")} of ${window.toLocaleString("en-US")} tokens` +
    `${estimated ? " (exact after the next assistant message)" : ""}; ` +
    `auto-compaction above ${threshold.toLocaleString("en-US")}. Click for stats.`;
  const text = `Pi ${approx}${percent}% · ${approx}${formatTokens(tokens)}/${formatTokens(window)}`;
  return { text, tooltip, level };
}

/** The item while a compaction runs. */
/** `view` marked live: a running Pi holds the session (`pi/sessionLive`), so Pi carries out compactions. */
export function liveView(view: StatusView, holder: { pid: number; program: string }): StatusView {
  const who = holder.program === "pi" ? "Pi" : holder.program;
  return {
    text: `$(terminal) ${view.text}`,
    tooltip: `${view.tooltip}\nLive in ${who} (pid ${holder.pid}): compactions run in ${who}; navigate there with /tree`,
    level: view.level,
  };
}

export function compactingView(reason: string): StatusView {
  return { text: "$(sync~spin) Pi compacting…", tooltip: `Compacting the session (${reason})`, level: "normal" };
}
