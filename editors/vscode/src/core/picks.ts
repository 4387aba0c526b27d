/**
 * Quick-pick rows and choices: sessions of `pi/listSessions`, Pi's three
 * navigate choices, and what each choice sends.
 */
import type { NavigateResult, SessionSummary } from "../protocol";
import type { NavigateOptions } from "./client";
import { oneLine } from "./nodes";

export interface SessionPick {
  label: string;
  description: string;
  detail: string;
  path: string;
  sessionId: string;
}

/** `2025-01-02T03:04:05Z` relative to `now`: `just now`, `5 min ago`, `3 h ago`, `2 days ago`, or the date. */
export function relativeTime(iso: string | null | undefined, now: Date): string {
  if (!iso) {
    return "";
  }
  const then = new Date(iso);
  const seconds = (now.getTime() - then.getTime()) / 1000;
  if (Number.isNaN(seconds)) {
    return "";
  }
  if (seconds < 60) {
    return "just now";
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  const days = Math.floor(seconds / 86400);
  return days < 30 ? `${days} day${days === 1 ? "" : "s"} ago` : then.toISOString().slice(0, 10);
}

/** Sessions newest first, with the name (or first message) as label. */
export function sessionPicks(sessions: readonly SessionSummary[], now: Date): SessionPick[] {
  const sorted = [...sessions].sort((a, b) => (b.modified ?? "").localeCompare(a.modified ?? ""));
  return sorted.map((s) => {
    const first = oneLine(s.firstMessage ?? "", 120);
    const count = s.messageCount ?? 0;
    const when = relativeTime(s.modified, now);
    return {
      label: s.name ? oneLine(s.name, 80) : first || s.sessionId,
      description: [when, `${count} message${count === 1 ? "" : "s"}`].filter(Boolean).join(" · "),
      detail: s.name ? first : s.path,
      path: s.path,
      sessionId: s.sessionId,
    };
  });
}

export interface NavigateChoice {
  label: string;
  detail: string;
  summarize: boolean;
  askInstructions: boolean;
}

/** Pi's `/tree` choices when leaving a branch. */
export const NAVIGATE_CHOICES: readonly NavigateChoice[] = [
  { label: "No summary", detail: "Move the leaf; the branch left stays as it is", summarize: false, askInstructions: false },
  { label: "Summarize", detail: "Write a summary of the branch left", summarize: true, askInstructions: false },
  {
    label: "Summarize with custom instructions…",
    detail: "Write a summary, focused by your instructions",
    summarize: true,
    askInstructions: true,
  },
];

/** The `pi/navigateTree` options of a choice (and the instructions typed for it). */
export function navigateOptions(choice: NavigateChoice, instructions?: string): NavigateOptions {
  if (!choice.summarize) {
    return {};
  }
  const text = instructions?.trim();
  return text ? { summarize: true, customInstructions: text } : { summarize: true };
}

/** The message after a navigation: says when a branch summary was written and where the text went. */
export function navigatedMessage(result: NavigateResult): string {
  if (result.cancelled) {
    return "Pi: navigation cancelled; nothing was written.";
  }
  const parts = ["Pi: moved"];
  if (result.entry?.type === "branch_summary") {
    parts.push(`; a branch summary of the path you left was written (${result.entry.id})`);
  }
  parts.push(".");
  if (result.editorText) {
    parts.push(" The selected message's text is on the clipboard.");
  }
  return parts.join("");
}
