// The review-before-write flow (pi/reviewSummary): accept / edit / reject as a state machine.
import assert from "node:assert/strict";
import { test } from "node:test";
import core from "../out/core.cjs";

const params = { sessionId: "s", kind: "compaction", summary: "## Goal\nX", tokensBefore: 50000, estimatedTokensAfter: 9000 };
const { reviewStep, startReview, BUTTONS } = core;

test("accept with the text unchanged answers accept", () => {
  const state = reviewStep(startReview(params), { type: "accept", text: params.summary });
  assert.deepEqual(state, { phase: "done", answer: { action: "accept" } });
});

test("accept with a changed text answers edit with that text", () => {
  const state = reviewStep(startReview(params), { type: "accept", text: "## Goal\nY" });
  assert.deepEqual(state, { phase: "done", answer: { action: "edit", summary: "## Goal\nY" } });
});

test("edit waits for the person; an empty text is refused", () => {
  let state = reviewStep(startReview(params), { type: "edit" });
  assert.equal(state.phase, "editing");
  assert.deepEqual(core.reviewButtons(state), [BUTTONS.accept, BUTTONS.reject]);
  assert.match(core.reviewPrompt(state, params), /^Edit the summary in the editor, then Accept\. Pi: review the compaction summary \(50,000 → ~9,000 tokens\)/);
  state = reviewStep(state, { type: "accept", text: "  \n" });
  assert.equal(state.phase, "editing");
  assert.match(core.reviewPrompt(state, params), /^The summary is empty/);
  state = reviewStep(state, { type: "accept", text: "better" });
  assert.deepEqual(state.answer, { action: "edit", summary: "better" });
});

test("reject and dismiss answer reject; a daemon cancel ends without an answer", () => {
  assert.deepEqual(reviewStep(startReview(params), { type: "reject" }).answer, { action: "reject" });
  assert.deepEqual(reviewStep(startReview(params), { type: "dismiss" }).answer, { action: "reject" });
  const cancelled = reviewStep(startReview(params), { type: "cancelled" });
  assert.deepEqual(cancelled, { phase: "done", answer: undefined });
  assert.equal(reviewStep(cancelled, { type: "accept", text: "x" }), cancelled);
  assert.deepEqual(core.reviewButtons(cancelled), []);
});

test("buttons map to events; a dismissed prompt is a dismiss", () => {
  assert.deepEqual(core.reviewButtons(startReview(params)), ["Accept", "Edit", "Reject"]);
  assert.deepEqual(core.eventForButton("Accept", "t"), { type: "accept", text: "t" });
  assert.deepEqual(core.eventForButton("Edit", "t"), { type: "edit" });
  assert.deepEqual(core.eventForButton("Reject", "t"), { type: "reject" });
  assert.deepEqual(core.eventForButton(undefined, "t"), { type: "dismiss" });
  const branch = { ...params, kind: "branchSummary" };
  assert.match(core.reviewPrompt(startReview(branch), branch), /branch summary/);
});

test("runReview drives the flow: Edit, change the text, Accept", async () => {
  let text = params.summary;
  const asked = [];
  const answers = ["Edit", "Accept"];
  const answer = await core.runReview(
    params,
    async (_prompt, buttons, state) => {
      asked.push([state.phase, buttons]);
      const button = answers.shift();
      if (button === "Accept") text = "edited by a person";
      return button;
    },
    () => text,
    () => false,
  );
  assert.deepEqual(answer, { action: "edit", summary: "edited by a person" });
  assert.deepEqual(asked, [["reviewing", ["Accept", "Edit", "Reject"]], ["editing", ["Accept", "Reject"]]]);
});

test("runReview stops when the daemon cancels the request", async () => {
  const answer = await core.runReview(params, async () => "Accept", () => "x", () => true);
  assert.equal(answer, undefined);
});
