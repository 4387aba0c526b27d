"""Tree navigation with an optional branch summary: Pi's ``navigateTree``.

Contracts:
- Navigating to the current leaf does nothing.
- A generated branch summary (preamble, text and file lists) is at most
  :func:`branch_bound` tokens: ``max(1,000, 0.5 × the tokens it
  summarizes)``; a longer answer loses its oldest items first
  (:func:`~pi_sessiond.summarizers.fit.fit_text`), after the fidelity gate.
- The entries between the old leaf and the common ancestor with the target
  are summarized only when asked (and only if there are any); the summary is
  Pi's preamble + the summarizer's text + the file lists, and becomes a
  ``branch_summary`` entry *under the new leaf*.
- The new leaf is the target, except for a user message or custom message
  target: then it is the target's parent and the target's text goes back to
  the editor (``editorText``).
- ``fromId`` is the abandoned leaf (or ``"root"``), as newer Pi writes it;
  0.73.1 wrote the new position. Deliberate fix.
- Without a summary or label nothing is written (Pi never stores the leaf).
- The branch is collected once per navigation (:func:`plan_navigation`); a
  caller that already planned (the daemon, to show the branch to its
  ``pi/beforeTree`` hook) passes the plan in.
- The leaf is re-checked before anything is written, after the lines other
  programs appended were folded in (the leaf follows those that continue it);
  if it is no longer the planned old leaf, the summary is dropped with
  ``Conflict`` (it would leave the new turns unsummarized on the old branch).
- Hook points for the daemon: ``supplied`` is a finished summary (a
  ``pi/beforeTree`` hook; stored with ``fromHook: true``, used only when a
  summary was asked for) and ``review`` may edit or reject a generated one.
- The branch-summary request carries the session's thinking level
  (``reasoning``) and the summarizer's output limit, like a compaction's
  (Pi 1.6.0; 0.73.1 sent neither and capped the output at 2048 tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from pi_protocol import BranchSummaryEntry, FileDetails, LabelEntry, Usage, unstructure
from pi_protocol.base import JsonDict
from pi_sessiond.compaction.branch import BranchCollection, collect_entries_for_branch_summary, prepare_branch_entries
from pi_sessiond.compaction.convert import entry_message
from pi_sessiond.compaction.fileops import compute_file_lists, format_file_operations
from pi_sessiond.compaction.prompts import BRANCH_SUMMARY_PREAMBLE
from pi_sessiond.compaction.tokens import estimate_context_tokens, estimate_tokens
from pi_sessiond.errors import Conflict
from pi_sessiond.pipeline.compaction import Progress, Reviewer, session_reasoning, streamed_percentage
from pi_sessiond.pipeline.filelists import branch_files
from pi_sessiond.pipeline.requests import branch_job
from pi_sessiond.pipeline.summaries import RunOptions, run_job
from pi_sessiond.store.context import context_from_path
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import content_text
from pi_sessiond.store.layout import now_iso
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.base import Summarizer
from pi_sessiond.summarizers.fit import fit_text
from pi_sessiond.summarizers.fit import tokens as fit_tokens

NO_CONTENT = "No content to summarize"
NO_SUMMARY = "No summary generated"


@attrs.frozen(kw_only=True)
class BranchSummary:
    """A finished branch summary (text as stored) and its file lists."""

    summary: str
    read_files: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()
    usage: Usage | None = attrs.field(factory=Usage)
    details: Any = None  # a hook's own details; else the file lists
    from_hook: bool = False

    def stored_details(self) -> Any:
        """``details`` as written to the entry."""
        if self.from_hook:
            return self.details
        return FileDetails(read_files=list(self.read_files), modified_files=list(self.modified_files))


@attrs.frozen
class NavigationPlan:
    """Where a navigation starts and, when it was collected, the branch it abandons."""

    old_leaf_id: str | None
    target_id: str
    branch: BranchCollection | None = None

    def collected(self, session: Session) -> BranchCollection:
        """The abandoned branch (collected now if the plan has none)."""
        if self.branch is not None:
            return self.branch
        return collect_entries_for_branch_summary(session.tree.get, self.old_leaf_id, self.target_id)


def plan_navigation(session: Session, target_id: str) -> NavigationPlan:
    """The plan of a navigation from the current leaf, with its branch collected."""
    plan = NavigationPlan(session.leaf_id, target_id)
    return attrs.evolve(plan, branch=plan.collected(session))


@attrs.frozen(kw_only=True)
class Navigated:
    """A navigation done: the old and new leaf, the entry written (if any) and the editor text."""

    old_leaf_id: str | None
    leaf_id: str | None
    entry: Entry | None = None
    editor_text: str | None = None
    cancelled: bool = False


async def generate_branch_summary(
    entries: Sequence[Entry],
    summarizer: Summarizer,
    *,
    reserve_tokens: int = 16384,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    progress: Progress | None = None,
    reasoning: str | None = None,
    options: RunOptions | None = None,
    abandoned: Sequence[JsonDict] = (),
) -> BranchSummary:
    """Summarize abandoned entries (oldest first) as Pi's ``generateBranchSummary``.

    ``reserve_tokens`` (``branchSummary.reserveTokens``) sizes the input
    budget; the output limit is the summarizer's (``pipeline.requests``);
    ``reasoning`` is the session's thinking level; ``abandoned``: the user message the navigation
    goes back to (its text returns to the editor, the summary keeps its facts: the gate requires them).
    """
    options = options or RunOptions()
    budget = summarizer.context_window - reserve_tokens
    prep = prepare_branch_entries(entries, max(budget, 0))
    if not prep.messages:
        return BranchSummary(summary=NO_CONTENT)
    on_tokens = (lambda n: progress(f"{n} tokens streamed", streamed_percentage(n))) if progress else None
    job = branch_job(
        prep.messages,
        limit=options.limit_for(summarizer),
        instructions=custom_instructions,
        replace_instructions=replace_instructions,
        reasoning=reasoning,
        facts_from=(*abandoned, *branch_messages(entries)),
    )
    text = await run_job(summarizer, job, on_tokens, options)
    lists = branch_files(compute_file_lists(prep.file_ops), prep.messages)
    files = format_file_operations(lists.read_files, lists.modified_files)
    body = bounded_body(text.text, files, (*abandoned, *prep.messages))
    return BranchSummary(
        summary=body or NO_SUMMARY,
        read_files=lists.read_files,
        modified_files=lists.modified_files,
        usage=text.usage,
    )


BRANCH_FLOOR_TOKENS = 1000
BRANCH_SHARE = 0.5


def branch_bound(summarized_tokens: int) -> int:
    """A branch summary's size bound: ``max(1,000, 0.5 × the tokens it summarizes)`` tokens."""
    return max(BRANCH_FLOOR_TOKENS, int(BRANCH_SHARE * summarized_tokens))


def bounded_body(text: str, files: str, messages: Sequence[JsonDict]) -> str:
    """Preamble + ``text`` + ``files`` within :func:`branch_bound` of ``messages`` (``text`` fitted)."""
    room = branch_bound(sum(estimate_tokens(m) for m in messages)) - fit_tokens(BRANCH_SUMMARY_PREAMBLE + files)
    return BRANCH_SUMMARY_PREAMBLE + fit_text(text, max(0, room)) + files


def branch_messages(entries: Sequence[Entry]) -> list[JsonDict]:
    """Every message of ``entries`` (tool results included), oldest first: what the branch's facts come from."""
    messages = (entry_message(e, include_compaction=True) for e in entries)
    return [m for m in messages if m is not None]


def abandoned_request(session: Session, target: Entry, old_leaf: str | None) -> tuple[JsonDict, ...]:
    """The target when it is a user message on the branch left (its text goes back to the editor)."""
    if target.type != "message" or target.role != "user" or not target.message or old_leaf is None:
        return ()
    on_branch = any(e.id == target.id for e in session.path_to(old_leaf))
    return (target.message,) if on_branch else ()


def landing(target: Entry) -> tuple[str | None, str | None]:
    """The new leaf for a target and the text that goes back to the editor."""
    if target.type == "message" and target.role == "user":
        return target.parent_id, content_text((target.message or {}).get("content"))
    if target.type == "custom_message":
        return target.parent_id, content_text(target.data.get("content"))
    return target.id, None


async def navigate_tree(
    session: Session,
    target_id: str,
    *,
    summarizer: Summarizer | None = None,
    summarize: bool = False,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    reserve_tokens: int = 16384,
    progress: Progress | None = None,
    supplied: BranchSummary | None = None,
    review: Reviewer | None = None,
    plan: NavigationPlan | None = None,
    options: RunOptions | None = None,
) -> Navigated:
    """Move the leaf to ``target_id`` like Pi's ``/tree``, summarizing the branch left if asked.

    ``plan`` (of this ``target_id``) fixes the old leaf and may carry the
    collected branch; without it the navigation starts at the current leaf.
    """
    plan = plan or NavigationPlan(session.leaf_id, target_id)
    old_leaf = plan.old_leaf_id
    if target_id == old_leaf:
        return Navigated(old_leaf_id=old_leaf, leaf_id=old_leaf)
    target = session.entry(target_id)
    summary: BranchSummary | None = None
    if summarize and supplied is not None:
        summary = supplied
    elif summarize:
        collected = plan.collected(session)
        if collected.entries:
            if summarizer is None:
                raise ValueError("No model available for summarization")
            summary = await generate_branch_summary(
                collected.entries,
                summarizer,
                reserve_tokens=reserve_tokens,
                custom_instructions=custom_instructions,
                replace_instructions=replace_instructions,
                progress=progress,
                reasoning=session_reasoning(session),
                options=options,
                abandoned=abandoned_request(session, target, old_leaf),
            )
            if review is not None:
                summary = attrs.evolve(summary, summary=await _reviewed(session, target, summary, review))
    session.refresh()
    if session.leaf_id != old_leaf:
        raise Conflict("the session moved to another entry while the branch summary was being made")
    new_leaf, editor_text = landing(target)
    session.set_leaf(new_leaf)
    try:
        written = _write(session, summary, old_leaf, target_id, label)
    except BaseException:
        if session.leaf_id == new_leaf:  # nothing was written: put the leaf back
            session.set_leaf(old_leaf)
        raise
    return Navigated(old_leaf_id=old_leaf, leaf_id=session.leaf_id, entry=written, editor_text=editor_text)


async def _reviewed(session: Session, target: Entry, summary: BranchSummary, review: Reviewer) -> str:
    before = estimate_context_tokens(session.context().messages).tokens
    new_leaf = landing(target)[0]
    pending = Entry.from_data(
        {"type": "branch_summary", "id": "(pending)", "parentId": new_leaf, "timestamp": now_iso(),
         "fromId": "", "summary": summary.summary}
    )
    path = session.path_to(new_leaf) if new_leaf is not None else []
    after = sum(estimate_tokens(m) for m in context_from_path([*path, pending]).messages)
    return await review(summary.summary, before, after)


def _write(
    session: Session, summary: BranchSummary | None, old_leaf: str | None, target_id: str, label: str | None
) -> Entry | None:
    written: Entry | None = None
    rows: list[JsonDict] = []
    if summary is not None:
        entry = BranchSummaryEntry(
            from_id=old_leaf or "root",
            summary=summary.summary,
            details=summary.stored_details(),
            from_hook=summary.from_hook,
            usage=summary.usage,
        )
        written = session.append([unstructure(entry)])[0]
    if label:
        target = written.id if written is not None else target_id
        rows.append(unstructure(LabelEntry(target_id=target, label=label)))
        session.append(rows)
    return written
