"""The owner's calibration choices: whether gold-action labels calibrate, and which agent
systems may borrow another system's calibration. Both change what the sets promise, so a
save queues a refresh."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction

from attribution.core.conformal import POOLED
from attribution.core.system_calibration import system_key
from attribution.system_selectors import project_systems
from projects.models import Project

MSG_UNKNOWN_SYSTEM = "There is no agent system {system!r} in this project."
MSG_BAD_LENDER = "{system} cannot borrow from {lender!r}: choose another system or all labels."


def calibration_settings_save(
    *, project: Project, gold_actions_calibrate: bool, borrow: Mapping[str, str]
) -> Project:
    """Store the choices (``borrow`` maps a system to a lender, "" for none) and queue a
    refresh. Raises ValueError with a user-facing message on an unknown system."""
    systems = set(project_systems(project))
    chosen: dict[str, str] = {}
    for raw_system, raw_lender in borrow.items():
        system = system_key(raw_system)
        if system not in systems:
            raise ValueError(MSG_UNKNOWN_SYSTEM.format(system=raw_system))
        if not raw_lender:
            continue
        lender = POOLED if raw_lender == POOLED else system_key(raw_lender)
        if lender == system or (lender != POOLED and lender not in systems):
            raise ValueError(MSG_BAD_LENDER.format(system=system, lender=raw_lender))
        chosen[system] = lender
    project.gold_actions_calibrate = gold_actions_calibrate
    project.calibration_borrow = chosen
    project.save(update_fields=["gold_actions_calibrate", "calibration_borrow"])
    project_id = project.pk
    transaction.on_commit(lambda: _queue_refresh(project_id))
    return project


def _queue_refresh(project_id: int) -> None:
    from attribution.tasks import attribution_refresh

    attribution_refresh.delay(project_id)
