"""Human decisive-step labels: stored, checked against the set the user saw before them
(the coverage monitor), and followed by a recalibration once they commit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from attribution.core.metrics import covers
from attribution.core.view import agent_base_name
from attribution.labelling_queue_store import take_labelled_out
from attribution.models import CoverageCheck, TrajectoryAttribution
from ingest.core.records import LabelSource, Outcome, StepKind
from ingest.core.vocabulary import acting_agent, base_agent, is_agent_action, is_user_turn
from ingest.models import Label, Step, Trajectory
from projects.models import ApiToken

logger = logging.getLogger(__name__)
MSG_STEP_OUT_OF_RANGE = "Step {step} does not exist: this rollout has steps 0 to {last}."
MSG_NOT_FAILED = "Only failed rollouts have a decisive step to label."
MSG_NOT_YOURS = "Only its author or a project owner can remove a label."
MSG_NOT_HUMAN = "Only a person's label can be removed; a rule's label follows its rule."
MSG_NOT_AN_ACTION = (
    "Step {step} is {what}, not an agent's action: a decisive error is a step an agent took. "
    "Mark the agent's step that led to it (the call a tool result answers, the message "
    "before the user's reply)."
)
MSG_UNKNOWN_AGENT = "No agent {agent!r} acts in this rollout; its agents are: {agents}."
MSG_NOT_THIS_TOKENS = (
    "An API token can remove only the labels it wrote; a person's label is removed on the "
    "rollout page, by its author or a project owner."
)


class LabelError(ValueError):
    """A label that cannot be saved; ``field`` names the input at fault."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


# Who recalibrates after a label. The pipeline registers its refresh request at start-up
# (pipeline.apps): called inside the label's transaction, so the request is a row that
# commits with the label and the sweeper sends it if the broker is down. Without it
# (this app alone) the attribution task is sent once the label commits.
RecalibrationRequest = Callable[[int], object]
_recalibration_request: list[RecalibrationRequest] = []


def recalibration_request_register(request: RecalibrationRequest) -> None:
    """Make ``request(project_id)`` the way a new label asks for its recalibration."""
    _recalibration_request[:] = [request]


class LabelSaved(NamedTuple):
    label: Label
    moved_from: int | None  # the step the person's label had been on, if they had one
    step_agent: str = ""  # who took the labelled step (acting_agent), to say so beside it

    @property
    def blames_another_agent(self) -> bool:
        """Whether the label names an agent other than the one who took its step."""
        return blames_another_agent(self.label.agent, self.step_agent)


def blames_another_agent(label_agent: str, step_agent: str) -> bool:
    """Whether a label's agent is not the one who took its step (``step_agent``, as
    :func:`ingest.core.vocabulary.acting_agent` names it, "" when unknown); a role suffix
    does not count.

    >>> blames_another_agent("researcher", "writer"), blames_another_agent("", "writer")
    (True, False)
    >>> blames_another_agent("Orchestrator (thought)", "Orchestrator")
    False
    """
    return bool(label_agent and step_agent) and base_agent(label_agent) != step_agent


def human_label_add(
    *,
    trajectory: Trajectory,
    step_index: int,
    reason: str,
    agent: str = "",
    author: AbstractBaseUser | AnonymousUser | None = None,
    token: ApiToken | None = None,
) -> LabelSaved:
    """Record a human decisive-step label, check it against the set shown before it, and
    queue a recalibration once the transaction commits.

    One person (or one API token) has one say per rollout: labelling again (a slip of the
    keyboard, a second look, a script run twice) moves their label instead of adding a
    rival one (``moved_from`` is where it was). Labels with neither (an import's) are each
    kept. The agent must be one that acts in the rollout; without one, the step's own.
    An agent named beside another agent's step is kept (a person may know better) and
    ``step_agent`` says whose step it is, so that the caller can say both.
    Raises :class:`LabelError`."""
    if trajectory.outcome != Outcome.FAILURE:
        raise LabelError(MSG_NOT_FAILED, field="outcome")
    if not 0 <= step_index < trajectory.step_count:
        raise LabelError(
            MSG_STEP_OUT_OF_RANGE.format(step=step_index, last=max(trajectory.step_count - 1, 0)),
            field="step",
        )
    step = Step.objects.filter(trajectory=trajectory, index=step_index).first()
    _must_be_an_action(step_index, step)
    agent = _label_agent(trajectory, step, agent.strip())
    # Typed loosely: AUTH_USER_MODEL is whatever the project configures.
    author_row: Any = author if author is not None and author.is_authenticated else None
    with transaction.atomic():
        label = _own_label(trajectory, author_row, token, for_update=True)
        moved_from = None if label is None else label.step_index
        if label is not None:
            label.step_index, label.agent, label.reason = step_index, agent, reason
            label.save(update_fields=["step_index", "agent", "reason"])
            # The check compares the label with the set shown before it: the same set.
            check = CoverageCheck.objects.filter(label=label).first()
            if check is not None:
                lo, hi = check.set_lo, check.set_hi
                shown = None if lo is None or hi is None else (lo, hi)
                check.covered = covers(shown, step_index)
                check.save(update_fields=["covered"])
        else:
            label = Label.objects.create(
                trajectory=trajectory,
                step_index=step_index,
                agent=agent,
                reason=reason,
                source=LabelSource.HUMAN,
                author=author_row,
                token=token,
            )
            _coverage_check(trajectory, label, author_row)
            take_labelled_out(trajectory.pk)
        _recalibrate_on_commit(trajectory.project_id)
    return LabelSaved(label, moved_from, acting_agent(step) if step is not None else "")


def _must_be_an_action(step_index: int, step: Step | None) -> None:
    """Refuse a label on a step no agent took (a tool's result, a user turn, the system
    prompt): the scorers rank agents' steps, the clustering takes no misbehaviour from such
    a label, and a keyboard's d on a tool result saved one."""
    if step is None or is_agent_action(step):
        return
    if step.kind == StepKind.TOOL_RESULT:
        what = "a tool's result"
    elif is_user_turn(step):
        what = "the user's turn"
    elif step.kind == StepKind.SYSTEM or step.role == "system":
        what = "a system prompt"
    else:
        what = "a step no agent took"
    raise LabelError(MSG_NOT_AN_ACTION.format(step=step_index, what=what), field="step")


def _label_agent(trajectory: Trajectory, step: Step | None, agent: str) -> str:
    """The label's agent: one that acts in the rollout (by its name, or without a role
    suffix such as "(thought)"), or the step's own when none is given."""
    agents = set(Step.objects.filter(trajectory=trajectory).values_list("agent", flat=True))
    agents.discard("")
    if not agent:
        return step.agent if step is not None else ""
    if agent in agents or agent in {agent_base_name(a) for a in agents}:
        return agent
    if step is not None and step.agent and agent == step.role:
        # The step's role for its agent ("assistant"): a chat file's name for what an
        # OpenTelemetry trace of the same agent names "travel-concierge".
        return step.agent
    shown = ", ".join(sorted(agents)) or "none named"
    raise LabelError(MSG_UNKNOWN_AGENT.format(agent=agent, agents=shown), field="agent")


def _own_label(
    trajectory: Trajectory, author_row: Any, token: ApiToken | None, *, for_update: bool
) -> Label | None:
    """The human label ``author_row`` (or, from the API, ``token``) gave this rollout."""
    if author_row is None and token is None:
        return None
    rows = Label.objects.select_for_update() if for_update else Label.objects
    mine = {"author": author_row} if author_row is not None else {"token": token}
    return (
        rows.filter(trajectory=trajectory, source=LabelSource.HUMAN, **mine)
        .order_by("-created_at", "-id")
        .first()
    )


def may_remove(label: Label, *, user_id: int | None, is_owner: bool) -> bool:
    """Whether a member may remove the label: a person's label, by its author or an owner
    (the one home of the rule: the panel's button and the removal both ask it)."""
    if label.source != LabelSource.HUMAN:
        return False
    return is_owner or (label.author_id is not None and label.author_id == user_id)


def token_label_delete(*, label: Label, token: ApiToken) -> None:
    """Remove a label an API token wrote, by that token; a person's label stays theirs."""
    if label.source != LabelSource.HUMAN:
        raise ValueError(MSG_NOT_HUMAN)
    if label.token_id is None or label.token_id != token.pk:
        raise PermissionError(MSG_NOT_THIS_TOKENS)
    _delete(label)


def human_label_delete(*, label: Label, by: Any, is_owner: bool) -> None:
    """Remove a person's label (its author, or an owner, may); its coverage check goes
    with it, and the project is recalibrated without it."""
    if label.source != LabelSource.HUMAN:
        raise ValueError(MSG_NOT_HUMAN)
    if not may_remove(label, user_id=getattr(by, "pk", None), is_owner=is_owner):
        raise PermissionError(MSG_NOT_YOURS)
    _delete(label)


def _delete(label: Label) -> None:
    project_id = label.trajectory.project_id
    with transaction.atomic():
        label.delete()
        _recalibrate_on_commit(project_id)


def _coverage_check(trajectory: Trajectory, label: Label, author_row: Any) -> None:
    current = TrajectoryAttribution.objects.filter(trajectory=trajectory).first()
    first_check = not CoverageCheck.objects.filter(trajectory=trajectory).exists()
    # Only a calibrated set made before this rollout had any human label says anything
    # about the promise; later labels of the same rollout would count it twice.
    if current is not None and current.is_calibrated and first_check:
        CoverageCheck.objects.create(
            label=label,
            trajectory=trajectory,
            project_id=trajectory.project_id,
            set_lo=current.lo,
            set_hi=current.hi,
            alpha=current.alpha or trajectory.project.miscoverage,
            covered=covers(current.interval, label.step_index),
            calibration_id=current.calibration_id,
            group=current.group,
            author=author_row,
        )


def _recalibrate_on_commit(project_id: int) -> None:
    if _recalibration_request:
        _recalibration_request[0](project_id)
    else:
        transaction.on_commit(lambda: _queue_refresh(project_id))


def _queue_refresh(project_id: int) -> None:
    """Recalibrate with the new label. With the broker down the label is kept and the
    request still succeeds; the sweeper (pipeline.jobs) sees a human label newer than the
    project's last refresh and queues one once the broker is back."""
    from attribution.tasks import attribution_refresh

    try:
        attribution_refresh.delay(project_id)
    except Exception:  # kombu's OperationalError: the broker is down
        logger.warning("broker unavailable: recalibration of project %s waits", project_id)
