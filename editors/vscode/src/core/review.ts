/**
 * The review-before-write flow of the `pi/reviewSummary` hook, as a pure
 * state machine: the adapter shows the summary in an editor and a prompt
 * with the buttons of the current state, feeds the person's choice (with the
 * editor's current text) in, and answers the daemon when the state is `done`.
 *
 * Invariants: an answer is `accept` only when the text is unchanged, `edit`
 * only with a non-empty changed text; dismissing the prompt rejects (nothing
 * is written), and a daemon-side cancellation ends the flow with no answer.
 */
import type { ReviewSummaryAnswer, ReviewSummaryParams } from "../protocol";

export type ReviewState =
  | { phase: "reviewing" | "editing"; original: string; problem?: string }
  | { phase: "done"; answer: ReviewSummaryAnswer | undefined };

export type ReviewEvent =
  | { type: "accept"; text: string }
  | { type: "edit" }
  | { type: "reject" }
  | { type: "dismiss" }
  | { type: "cancelled" };

export const BUTTONS = { accept: "Accept", edit: "Edit", reject: "Reject" } as const;

const KIND: Record<ReviewSummaryParams["kind"], string> = {
  compaction: "compaction summary",
  branchSummary: "branch summary",
};

export function startReview(params: ReviewSummaryParams): ReviewState {
  return { phase: "reviewing", original: params.summary };
}

/** The next state after `event`. */
export function reviewStep(state: ReviewState, event: ReviewEvent): ReviewState {
  if (state.phase === "done") {
    return state;
  }
  switch (event.type) {
    case "accept":
      return accept(state.original, event.text);
    case "edit":
      return { phase: "editing", original: state.original };
    case "reject":
    case "dismiss":
      return { phase: "done", answer: { action: "reject" } };
    case "cancelled":
      return { phase: "done", answer: undefined };
  }
}

function accept(original: string, text: string): ReviewState {
  if (text.trim() === "") {
    return { phase: "editing", original, problem: "The summary is empty: write one, or reject." };
  }
  if (text === original) {
    return { phase: "done", answer: { action: "accept" } };
  }
  return { phase: "done", answer: { action: "edit", summary: text } };
}

/** The prompt's text for a state that is still waiting for the person. */
export function reviewPrompt(state: ReviewState, params: ReviewSummaryParams): string {
  if (state.phase === "done") {
    return "";
  }
  const what = `Pi: review the ${KIND[params.kind]} (${params.tokensBefore.toLocaleString("en-US")} → ~${params.estimatedTokensAfter.toLocaleString("en-US")} tokens) before it is written.`;
  if (state.problem) {
    return `${state.problem} ${what}`;
  }
  return state.phase === "editing" ? `Edit the summary in the editor, then Accept. ${what}` : what;
}

/** The prompt's buttons for a state. */
export function reviewButtons(state: ReviewState): string[] {
  if (state.phase === "done") {
    return [];
  }
  return state.phase === "editing" ? [BUTTONS.accept, BUTTONS.reject] : [BUTTONS.accept, BUTTONS.edit, BUTTONS.reject];
}

/** The event for a clicked button (`undefined`: the prompt was dismissed). */
export function eventForButton(button: string | undefined, text: string): ReviewEvent {
  switch (button) {
    case BUTTONS.accept:
      return { type: "accept", text };
    case BUTTONS.edit:
      return { type: "edit" };
    case BUTTONS.reject:
      return { type: "reject" };
    default:
      return { type: "dismiss" };
  }
}

/** Runs the flow to its end with `ask` standing for the person (the adapter passes VS Code's UI). */
export async function runReview(
  params: ReviewSummaryParams,
  ask: (prompt: string, buttons: string[], state: ReviewState) => Promise<string | undefined>,
  currentText: () => string,
  isCancelled: () => boolean,
): Promise<ReviewSummaryAnswer | undefined> {
  let state = startReview(params);
  while (state.phase !== "done") {
    const button = await ask(reviewPrompt(state, params), reviewButtons(state), state);
    const event: ReviewEvent = isCancelled() ? { type: "cancelled" } : eventForButton(button, currentText());
    state = reviewStep(state, event);
  }
  return state.answer;
}
