"""The user's edits of the taxonomy: rename, merge and categorise misbehaviours, and the
project's own categories. Every edit survives re-clustering (rows keep stable keys)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from analysis.merges import resolve_merged
from analysis.misbehaviour_stats import misbehaviour_stats_refresh
from analysis.models import (
    Misbehaviour,
    TaxonomyCategory,
    WrongStepMembership,
)
from analysis.taxonomy import shared_modes, upsert_builtins
from projects.models import Project

MSG_MERGE_SELF = "A misbehaviour cannot be merged into itself."
MSG_MERGE_OTHER_PROJECT = "Both misbehaviours must belong to this project."
MSG_MERGE_ALREADY = (
    "This misbehaviour was already merged into “{name}”; a merge cannot be undone or moved."
)
MSG_NO_SUCH_CATEGORY = "No such category in this project's taxonomy."
MSG_MERGED_AWAY = (
    "This misbehaviour was merged into “{name}”: rename or categorise that one (a stale page "
    "named this one)."
)
MSG_CATEGORY_EXISTS = "This project already has a category with that name."
MSG_CATEGORY_BUILTIN = (
    "{code} {name} is one of MAST's built-in categories: file the misbehaviour under it "
    "rather than under a copy."
)
MSG_CATEGORY_NAME = "Give the category a name."
MSG_NO_SUGGESTION = "This misbehaviour has no suggested category to confirm."
MSG_WEAK_SUGGESTION = (
    "This misbehaviour's suggested category is only a possibility (weak support): "
    "choose its category from the list."
)
MSG_NAME_TAKEN = (
    "Another misbehaviour of this project is already called “{name}”: two rows with one name "
    "cannot be told apart. Merge them if they are the same behaviour, or choose another name."
)


def _refuse_merged(misbehaviour: Misbehaviour) -> None:
    """A merged misbehaviour is gone from every page: a name or category given to it
    would never be seen (a stale tab's form still posts to it)."""
    if misbehaviour.merged_into_id:
        by_pk = {m.pk: m for m in Misbehaviour.objects.filter(project=misbehaviour.project_id)}
        survivor = resolve_merged(misbehaviour, by_pk) or misbehaviour
        raise ValueError(MSG_MERGED_AWAY.format(name=survivor.display_name))


def misbehaviour_rename(*, misbehaviour: Misbehaviour, name: str) -> Misbehaviour:
    """Give a misbehaviour the user's name (blank: back to the generated one).

    The name must not be another active misbehaviour's (ignoring case and spacing), since
    the taxonomy, the merge choices and the exports would then show two rows as one.
    """
    _refuse_merged(misbehaviour)
    previous, misbehaviour.user_name = misbehaviour.user_name, " ".join(name.split())[:300]
    shown = misbehaviour.display_name
    others = (
        Misbehaviour.objects.filter(project_id=misbehaviour.project_id, is_active=True)
        .exclude(pk=misbehaviour.pk)
        .only("user_name", "name", "key")
    )
    if any(other.display_name.casefold() == shown.casefold() for other in others):
        misbehaviour.user_name = previous
        raise ValueError(MSG_NAME_TAKEN.format(name=shown))
    misbehaviour.save(update_fields=["user_name", "updated_at"])
    return misbehaviour


@dataclass(frozen=True)
class MergePlan:
    """What merging ``source`` into a misbehaviour does, told before it is done."""

    source: Misbehaviour
    target: Misbehaviour  # where the steps end up: the chosen one, its own merges followed
    folded: list[Misbehaviour]  # the source and the misbehaviours already merged into it
    step_count: int  # wrong steps that move to ``target``
    rollout_count: int  # the rollouts those steps are in


def _merge_parts(
    *, source: Misbehaviour, target: Misbehaviour
) -> tuple[Misbehaviour, list[Misbehaviour]]:
    """Where a merge of ``source`` into ``target`` ends (its own merges followed) and the
    misbehaviours it folds; raises ValueError where it may not be done."""
    if source.project_id != target.project_id:
        raise ValueError(MSG_MERGE_OTHER_PROJECT)
    by_pk = {m.pk: m for m in Misbehaviour.objects.filter(project_id=source.project_id)}
    if by_pk[source.pk].merged_into_id:  # a stale tab: its steps are already elsewhere
        joined = resolve_merged(by_pk[source.pk], by_pk)
        raise ValueError(MSG_MERGE_ALREADY.format(name=joined.display_name if joined else ""))
    final = resolve_merged(by_pk[target.pk], by_pk)
    if final is None or final.pk == source.pk:
        raise ValueError(MSG_MERGE_SELF)
    folded = [by_pk[source.pk]] + [
        m
        for m in by_pk.values()
        if m.pk != source.pk and resolve_merged(m, by_pk) is by_pk[source.pk]
    ]
    return final, folded


def misbehaviour_merge_plan(*, source: Misbehaviour, target: Misbehaviour) -> MergePlan:
    """The merge of ``source`` into ``target``, checked and counted but not done (the page
    asks to confirm it); raises ValueError where it may not be done.

    Example: a misbehaviour of 12 wrong steps in 5 rollouts, merged into another one,
    is ``MergePlan(source, target, [source], step_count=12, rollout_count=5)``.
    """
    final, folded = _merge_parts(source=source, target=target)
    moving = WrongStepMembership.objects.filter(misbehaviour__in=folded)
    return MergePlan(
        source=source,
        target=final,
        folded=folded,
        step_count=moving.count(),
        rollout_count=moving.values("step__trajectory_id").distinct().count(),
    )


def misbehaviour_merge(*, source: Misbehaviour, target: Misbehaviour) -> Misbehaviour:
    """Fold ``source`` into ``target``: its steps move now, and its future matches follow.
    The target keeps the name it had (a generated one becomes its given name)."""
    final, folded_rows = _merge_parts(source=source, target=target)
    folded = [m.pk for m in folded_rows]
    with transaction.atomic():
        if not final.user_name:
            # The user merged into the misbehaviour they saw by this name; regenerated from
            # the new members it changed at once ("… “let's execute”" became "… “web
            # search”"). The generated one is still shown beside it.
            final.user_name = final.display_name
            final.save(update_fields=["user_name", "updated_at"])
        Misbehaviour.objects.filter(pk__in=folded).exclude(pk=final.pk).update(
            merged_into=final, is_active=False
        )
        WrongStepMembership.objects.filter(misbehaviour_id__in=folded).update(misbehaviour=final)
        final.success_rollouts = sorted(
            set(final.success_rollouts).union(*(m.success_rollouts for m in folded_rows)),
            key=int,
        )
        final.failure_rollouts = sorted(
            set(final.failure_rollouts).union(*(m.failure_rollouts for m in folded_rows)),
            key=int,
        )
        final.save(update_fields=["success_rollouts", "failure_rollouts"])
    misbehaviour_stats_refresh(project=final.project)
    final.refresh_from_db()
    return final


def misbehaviour_categorise(*, misbehaviour: Misbehaviour, category_id: int | None) -> Misbehaviour:
    """Map a misbehaviour to a built-in or project category (None: unmap)."""
    _refuse_merged(misbehaviour)
    category = None
    if category_id is not None:
        category = TaxonomyCategory.objects.filter(pk=category_id).first()
        if category is None or category.project_id not in (None, misbehaviour.project_id):
            raise ValueError(MSG_NO_SUCH_CATEGORY)
    misbehaviour.category = category
    misbehaviour.save(update_fields=["category", "updated_at"])
    return misbehaviour


def misbehaviour_confirm_suggestion(*, misbehaviour: Misbehaviour) -> Misbehaviour:
    """Make the suggested MAST category the misbehaviour's category (the user agreed).

    Only a strong suggestion is taken in one click; a weak one is a possibility the user
    picks from the category list (``misbehaviour_categorise``).
    """
    _refuse_merged(misbehaviour)
    if misbehaviour.suggested_category_id is None:
        raise ValueError(MSG_NO_SUGGESTION)
    if not misbehaviour.suggestion_is_strong:
        raise ValueError(MSG_WEAK_SUGGESTION)
    misbehaviour.category_id = misbehaviour.suggested_category_id
    misbehaviour.save(update_fields=["category", "updated_at"])
    return misbehaviour


def category_create(
    *, project: Project, name: str, definition: str = "", group: str = ""
) -> TaxonomyCategory:
    """A project's own failure category, beside MAST's built-in ones."""
    name = " ".join(name.split())[:200]
    if not name:
        raise ValueError(MSG_CATEGORY_NAME)
    if TaxonomyCategory.objects.filter(project=project, name__iexact=name).exists():
        raise ValueError(MSG_CATEGORY_EXISTS)
    # A copy of a built-in one (its name, or its code as a name) read like it everywhere
    # (pages, API, exports) while counting apart from it.
    folded = name.casefold()
    for builtin in TaxonomyCategory.objects.filter(project__isnull=True):
        if folded in {builtin.name.casefold(), builtin.code.casefold()}:
            raise ValueError(MSG_CATEGORY_BUILTIN.format(code=builtin.code, name=builtin.name))
    position = TaxonomyCategory.objects.filter(project=project).count()
    return TaxonomyCategory.objects.create(
        project=project,
        taxonomy="custom",
        name=name,
        definition=definition.strip(),
        group=" ".join(group.split())[:100] or "Custom",
        position=position,
    )


def taxonomy_builtin_refresh(*, data_dir: str | Path) -> int:
    """Load MAST definitions from the shared data folder when it is there (else keep ours)."""
    modes = shared_modes(data_dir)
    return upsert_builtins(TaxonomyCategory, modes) if modes else 0
