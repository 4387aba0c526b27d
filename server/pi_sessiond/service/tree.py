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

from typing import Any

from pi_protocol import NavigateResult, methods
from pi_protocol.params import NavigateTreeParams
from pi_protocol.results import SessionChanged, TreeNavigated
from pi_protocol.settings import Settings
from pi_sessiond.pipeline.navigation import BranchSummary, NavigationPlan, navigate_tree, plan_navigation
from pi_sessiond.pipeline.navigation import NavigateResult as Navigated
from pi_sessiond.service import hooks, livewriter
from pi_sessiond.service.compaction import Report, with_progress
from pi_sessiond.service.core import Core, apply_durability
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.service.livewriter import check_live_writer
from pi_sessiond.service.registry import OpenSession
from pi_sessiond.service.views import require_entry

JsonDict = dict[str, Any]


async def navigate(
    core: Core, opened: OpenSession, params: NavigateTreeParams, progress: ProgressFactory
) -> NavigateResult:
    """``pipeline.navigation.navigate_tree`` with the hooks, a job and a progress bar when summarizing."""
    session = opened.session
    session.refresh()  # lines another program appended: the leaf follows those that continue it
    held = livewriter.live_pi(session.path)
    if held is not None:  # Pi's extension API cannot move Pi's leaf outside a command
        raise livewriter.refuse(held, "navigate", f"/tree (then pick {params.target_id})")
    old_leaf = session.leaf_id
    if params.target_id == old_leaf:
        return NavigateResult(leaf_id=old_leaf)
    target = require_entry(session, params.target_id, "targetId")
    if params.summarize or params.label:
        check_live_writer(core, opened, force=params.force, action="navigate with a summary or label")
    settings = core.settings_for(opened)
    plan = plan_navigation(session, target.id)
    answer = await hooks.before_tree(core, opened, settings, params, plan)
    if answer is not None and answer.cancel:
        return NavigateResult(leaf_id=old_leaf, cancelled=True)
    supplied = hooks.supplied_summary(answer)
    apply_durability(session, settings)
    if params.summarize and supplied is None and plan.collected(session).entries:
        session.check_writable()  # before a (paid) summary is asked for
        async def work() -> Navigated:
            return await with_progress(progress, "Summarizing branch", params.work_done_token,
                                       lambda report: _navigate(core, opened, settings, params, plan, None, report))

        done = await core.jobs.run(opened.key, "branchSummary", "navigate", work)
    else:
        done = await _navigate(core, opened, settings, params, plan, supplied, None)
    entry = done.entry.data if done.entry is not None else None
    core.notify(methods.TREE_NAVIGATED, TreeNavigated(session_id=opened.key, old_leaf_id=old_leaf,
                                                      leaf_id=session.leaf_id, entry=entry))
    core.notify(methods.SESSION_CHANGED, SessionChanged(session_id=opened.key, leaf_id=session.leaf_id,
                                                        reason="navigate"))
    return NavigateResult(leaf_id=session.leaf_id, entry=entry, editor_text=done.editor_text)


async def _navigate(
    core: Core, opened: OpenSession, settings: Settings, params: NavigateTreeParams, plan: NavigationPlan,
    supplied: BranchSummary | None, report: Report | None,
) -> Navigated:
    summarizer = core.summarizer(settings) if params.summarize and supplied is None else None
    try:
        return await navigate_tree(
            opened.session,
            params.target_id,
            summarizer=summarizer,
            summarize=params.summarize,
            custom_instructions=params.custom_instructions,
            replace_instructions=params.replace_instructions,
            label=params.label,
            reserve_tokens=settings.branch_summary.reserve_tokens,
            progress=report,
            supplied=supplied,
            review=hooks.reviewer(core, opened, settings, "branchSummary"),
            plan=plan,
            options=core.run_options(settings, report),
        )
    finally:
        if summarizer is not None:
            await summarizer.aclose()
