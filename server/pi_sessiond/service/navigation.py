"""``pi/navigateTree``: Pi's ``navigateTree`` with the ``beforeTree`` and ``reviewSummary`` hooks.

Contracts (Pi's ``navigateTree``, plus the hooks):
- The target being the leaf is a no-op: nothing written, no notification.
- ``pi/beforeTree`` is asked on every other navigation (when declared):
  ``{cancel: true}`` answers ``{cancelled: true}`` and changes nothing; a
  returned summary is used only if ``summarize`` was requested, and is stored
  verbatim with ``fromHook: true`` (no preamble, no file lists).
- A generated branch summary runs as this session's job (``Busy`` beside
  another), with a progress bar, and goes through ``pi/reviewSummary``; the
  file's writability is checked first (``locked`` / ``writeFailed`` before
  any model call).
- The abandoned branch is collected once (``plan_navigation``): what
  ``pi/beforeTree`` is shown is what a generated summary summarizes.
- A summary or a label is refused by the ``liveWriter`` guard (before the
  hook is asked) when another program appended lately, unless ``force``.
- The leaf is re-checked before writing: if it moved at all while the hook
  was asked or the summary was made, the navigation is a :class:`Conflict`
  and nothing changes (the branch summary describes the branch as it was;
  entries appended meanwhile would be abandoned unsummarized).
"""

from __future__ import annotations

import asyncio

import attrs

from pi_protocol import NavigateResult, methods
from pi_protocol.params import NavigateTreeParams
from pi_protocol.results import SessionChanged, TreeNavigated
from pi_sessiond.pipeline.navigation import BranchSummary, Navigated, NavigationPlan, navigate_tree, plan_navigation
from pi_sessiond.service import hooks
from pi_sessiond.service.interface import HookClient, Notify, ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.progress import Report, with_progress
from pi_sessiond.service.sessions import livewriter
from pi_sessiond.service.sessions.livewriter import check_live_writer
from pi_sessiond.service.sessions.scope import Scope, require_entry
from pi_sessiond.service.summarizing import Summarizers, run_options


@attrs.frozen
class Navigator:
    """Moves a session's leaf, with a branch summary when asked (the seams it needs)."""

    notify: Notify
    jobs: JobManager
    hooks: HookClient
    summarizers: Summarizers

    async def navigate(self, scope: Scope, params: NavigateTreeParams, progress: ProgressFactory) -> NavigateResult:
        """``pipeline.navigation.navigate_tree`` with the hooks, a job and a progress bar when summarizing."""
        session = scope.session
        session.refresh()  # lines another program appended: the leaf follows those that continue it
        held = livewriter.live_pi(session.path)
        if held is not None:  # Pi's extension API cannot move Pi's leaf outside a command
            raise livewriter.refuse(held, "navigate", f"/tree (then pick {params.target_id})")
        old_leaf = session.leaf_id
        if params.target_id == old_leaf:
            return NavigateResult(leaf_id=old_leaf)
        target = require_entry(session, params.target_id, "targetId")
        if params.summarize or params.label:
            await asyncio.to_thread(check_live_writer, scope, force=params.force,
                                    action="navigate with a summary or label")
        plan = plan_navigation(session, target.id)
        answer = await hooks.before_tree(self.hooks, scope, params, plan)
        if answer is not None and answer.cancel:
            return NavigateResult(leaf_id=old_leaf, cancelled=True)
        supplied = hooks.supplied_summary(answer)
        scope.durable()
        if params.summarize and supplied is None and plan.collected(session).entries:
            await asyncio.to_thread(session.check_writable)  # before a (paid) summary is asked for

            async def work() -> Navigated:
                return await with_progress(progress, "Summarizing branch", params.work_done_token,
                                           lambda report: self._navigate(scope, params, plan, None, report))

            done = await self.jobs.run(scope.key, "branchSummary", "navigate", work)
        else:
            done = await self._navigate(scope, params, plan, supplied, None)
        entry = done.entry.data if done.entry is not None else None
        self.notify(methods.TREE_NAVIGATED, TreeNavigated(session_id=scope.key, old_leaf_id=old_leaf,
                                                          leaf_id=session.leaf_id, entry=entry))
        self.notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=session.leaf_id,
                                                            reason="navigate"))
        return NavigateResult(leaf_id=session.leaf_id, entry=entry, editor_text=done.editor_text)

    async def _navigate(self, scope: Scope, params: NavigateTreeParams, plan: NavigationPlan,
                        supplied: BranchSummary | None, report: Report | None) -> Navigated:
        settings = scope.settings
        summarizer = self.summarizers.open(settings) if params.summarize and supplied is None else None
        try:
            return await navigate_tree(
                scope.session,
                params.target_id,
                summarizer=summarizer,
                summarize=params.summarize,
                custom_instructions=params.custom_instructions,
                replace_instructions=params.replace_instructions,
                label=params.label,
                reserve_tokens=settings.branch_summary.reserve_tokens,
                progress=report,
                supplied=supplied,
                review=hooks.reviewer(self.hooks, scope, "branchSummary"),
                plan=plan,
                options=run_options(settings, report),
            )
        finally:
            if summarizer is not None:
                await summarizer.aclose()
