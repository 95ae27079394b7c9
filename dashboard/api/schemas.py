"""What the API reads and answers, as pydantic models: they are the OpenAPI schema, and
ninja validates every input against them (a 400 naming the field when one is wrong)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, StrictFloat, StrictInt

# Ids in paths and queries: the range of a bigint, so no value overflows the database.
ID_MAX = 2**63 - 1
TEXT_MAX = 20_000
# PostgreSQL stores no NUL character: refused by the schema (a 400 naming the field).
NO_NUL = r"^[^\x00]*$"
Id = Annotated[int, Field(ge=1, le=ID_MAX)]
ShortText = Annotated[str, Field(max_length=200, pattern=NO_NUL)]


def finite(value: float | None) -> float | None:
    """JSON has no infinity: an unbounded threshold (tau before enough labels) is null.

    Example:
        >>> finite(float("inf")) is None
        True
    """
    return None if value is None or not math.isfinite(value) else value


class ProjectCounts(Schema):
    rollouts: int
    failed: int
    succeeded: int
    labelled: int
    labelled_by_rule: int = Field(
        description="Of the labelled rollouts, those whose every label a rule derived"
        " (gold actions, a successful sibling), none given by hand or data set"
    )


class ProjectOut(Schema):
    slug: str
    name: str
    description: str
    miscoverage: float = Field(description="alpha: the promised coverage is 1 - alpha")
    created_at: datetime
    counts: ProjectCounts


class ProjectList(Schema):
    projects: list[ProjectOut]


class TokenOut(Schema):
    id: int
    name: str
    prefix: str = Field(description="The first characters of the token, to recognise it")
    active: bool
    created_by: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenList(Schema):
    tokens: list[TokenOut]


class ToolOut(Schema):
    tool: str
    calls: int = Field(description="calls (call or result steps of this name, the larger)")
    errors: int = Field(description="steps of this tool marked as an error")
    mutating: int = Field(description="calls marked as changing state")
    rollouts: int = Field(description="rollouts that call it")
    failed: int = Field(description="of those, failed")
    judged: int = Field(description="of those, with an outcome")
    lift_unadjusted: float | None = Field(
        description="failure risk ratio of rollouts calling it against those that do not"
    )
    lift_adjusted: float | None = Field(
        description="the same within environment and length bucket (Mantel-Haenszel)"
    )
    few: bool = Field(
        False, description="fewer than 5 rollouts with an outcome call it: the lifts are noise"
    )


class ToolList(Schema):
    counted_at: datetime | None = Field(
        description="when the refresh counted them; null: not counted yet"
    )
    tools: list[ToolOut]


class UploadProgress(Schema):
    done: int
    total: int
    percent: int


class UploadOut(Schema):
    id: int
    name: str
    status: Literal["queued", "running", "done", "failed"]
    progress: UploadProgress
    format: str
    agent_system: str = Field(
        description="The agent system the uploader named for every rollout of the file "
        "(empty: each rollout's own, as the file says)"
    )
    error: str
    trajectories: int
    steps: int
    labels: int
    repeated_ids: int = Field(
        description="Rollouts of this file whose id the project already had: both copies are "
        "kept and both count (set a verdict with the outcome endpoint instead)"
    )
    members: list[dict[str, Any]]
    status_url: str
    created: bool | None = None
    same_content_as: str | None = Field(
        None,
        description="When the file sent has the bytes of an earlier upload of the project: "
        "that upload's name (this answer is that upload; nothing new was stored unless it "
        "failed and is read again)",
    )
    message: str | None = Field(
        None, description="What sending the file did, when it matched an earlier upload"
    )


class AttributionBrief(Schema):
    lo: int | None = Field(description="First step of the prediction set (null: empty set)")
    hi: int | None
    rollback_step: int | None
    point_step: int
    calibrated: bool


class RolloutOut(Schema):
    id: int
    external_id: str = Field(description="The rollout's id in its source (an OTLP trace id)")
    task_id: str
    environment: str
    agent_system: str
    policy_model: str
    outcome: Literal["success", "failure", "unknown"]
    reward: float | None
    step_count: int
    labelled: bool
    upload_id: int
    created_at: datetime
    attribution: AttributionBrief | None


class RolloutPage(Schema):
    results: list[RolloutOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page")
    next: str | None = Field(description="The next page's URL (null on the last page)")


class StepOut(Schema):
    index: int
    agent: str
    role: str
    kind: str
    content: str
    tool_name: str
    tool_args: Any = None
    tool_call_id: str
    is_error: bool
    is_mutating: bool | None
    started_at: datetime | None
    ended_at: datetime | None
    metadata: dict[str, Any]


class LabelOut(Schema):
    id: int
    step: int
    agent: str
    reason: str
    source: str
    author: str = Field(description="The person who labelled it on the rollout page, or ''")
    token: str = Field(description="The name of the API token that wrote it, or ''")
    created_at: datetime
    step_agent: str | None = Field(
        None,
        description="In the answer to writing a label: who took the labelled step. When it "
        "differs from agent, the label blames another agent than the one who acted (kept: "
        "send it again without agent to blame the step's own)",
    )


class RolloutDetail(RolloutOut):
    task_text: str
    metadata: dict[str, Any]
    steps: list[StepOut]
    labels: list[LabelOut]


class LabelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    # Strict: true is not step 1, nor "2" step 2.
    step: StrictInt = Field(ge=0, le=ID_MAX, description="Index of the decisive step (0-based)")
    agent: str = Field(
        "",
        max_length=200,
        pattern=NO_NUL,
        description="The agent at fault: one that acts in the rollout (default: the step's)",
    )
    reason: str = Field(
        "", max_length=TEXT_MAX, pattern=NO_NUL, description="Why this step is decisive"
    )


class LabelList(Schema):
    labels: list[LabelOut]


class OutcomeIn(Schema):
    model_config = ConfigDict(extra="forbid")

    outcome: Literal["success", "failure", "unknown"] | None = None
    # Strict: true or "1" is no reward (lax mode read true as 1.0).
    reward: StrictFloat | None = Field(None, allow_inf_nan=False)
    metadata: dict[str, Any] | None = Field(
        None, description="Merged into the rollout's metadata (a key sent again replaces it)"
    )


#: The most rollouts one request may set the outcome of.
OUTCOMES_MAX = 1000


class OutcomeItemIn(OutcomeIn):
    id: str = Field(min_length=1, max_length=255, description="The rollout's external id")


class OutcomesIn(Schema):
    model_config = ConfigDict(extra="forbid")

    outcomes: list[OutcomeItemIn] = Field(min_length=1, max_length=OUTCOMES_MAX)


class OutcomesOut(Schema):
    updated: int = Field(description="How many rollouts the request named (all were stored)")
    attribution_queued: list[str] = Field(
        description="The rollouts whose outcome changed: one refresh was queued for them"
    )


class OutcomeOut(Schema):
    rollout: RolloutOut
    attribution_queued: bool = Field(
        description="A refresh was queued: the outcome changed (a rollout turning failed "
        "gets its attribution from it)"
    )


class AttributionOut(Schema):
    external_id: str
    lo: int | None = Field(description="Prediction set [lo, hi] (null: empty or uncalibrated)")
    hi: int | None
    set_size: int
    rollback_step: int | None = Field(description="Restart from the state before this step")
    point_step: int = Field(description="The most probable decisive step")
    point_probability: float | None
    agent: str
    probabilities: list[float] = Field(description="Per step: P(decisive)")
    alpha: float | None
    confidence: float | None
    calibrated: bool
    calibration_id: int | None
    calibration_group: str
    group: str
    scorer_version: str
    sentence: str
    updated_at: datetime


class SystemCoverage(Schema):
    system: str = Field(description="The agent system whose own promise these labels test")
    checked: int
    covered: int
    measured: float | None
    promised: float | None
    p_value: float | None
    warns: bool = Field(description="Coverage improbably low for the system's promise")


class CoverageMonitor(Schema):
    checked: int = Field(description="Human labels checked against the set shown before them")
    covered: int
    measured: float | None
    promised: float | None
    warning: str
    by_system: list[SystemCoverage] = Field(
        description="The same check per agent system: each system's sets promise coverage "
        "for its own rollouts"
    )


class SystemCalibrationOut(Schema):
    system: str = Field(description="The agent system these thresholds apply to")
    labels: int = Field(description="Its labelled rollouts that calibrate")
    calibration: str = Field(
        description="'own': its rollouts' sets use these thresholds; 'borrowed': it uses the "
        "system named in borrows_from (opt-in); 'none': too few labels, no confidence claim"
    )
    borrows_from: str = Field(description="The lender when calibration is 'borrowed', else ''")
    labels_needed: int = Field(description="Labels still needed before its own claim")
    pooled_tau: float | None = Field(
        description="The system's tau, used by its length buckets without their own"
    )
    tau_by_group: dict[str, float | None] = Field(
        description="Length buckets with enough of the system's labels for their own tau"
    )
    m_by_group: dict[str, int]
    held_out_coverage: float | None = Field(
        description="Coverage at alpha within its own labels, tau from random halves"
    )
    held_out_removal: float | None


class QueueEntryOut(Schema):
    rank: int = Field(description="Its place in the queue, from 1")
    rollout: str = Field(description="The rollout's external id")
    page_url: str = Field(description="Its rollout page, where the keyboard labels it")
    system: str
    reason: str = Field(description="Why it is at this place")
    point_step: int | None = Field(description="The scorer's most probable decisive step")
    steps: int


class SystemProgressOut(Schema):
    system: str
    rollouts: int = Field(description="Its failed rollouts with an attribution")
    labels: int = Field(description="Its labels that calibrate")
    target: int = Field(description="Labels a system needs before its sets claim confidence")
    needed: int = Field(description="Labels it still needs")
    calibrated: bool
    queued: int = Field(description="Its rollouts in the queue")
    short_by: int = Field(
        description="How many labels it would still lack after every queued rollout of it "
        "is labelled (0: the queue can calibrate it); such a system's rollouts come last"
    )
    ranked_by: str = Field(description="Which scorer ranks its steps, in words")


class LabellingQueueOut(Schema):
    rule: str = Field(description="How the queue is ordered, and why")
    labelling_rule: str = Field(description="Which labels the guarantee refers to")
    queued: int = Field(description="Rollouts in the queue")
    entries: list[QueueEntryOut] = Field(description="The first `limit` of them, in order")
    progress: list[SystemProgressOut] = Field(description="Per agent system, most needed first")


class CalibrationOut(Schema):
    calibrated: bool
    id: int | None
    alpha: float | None
    confidence: float | None
    variant: str
    grouping: str
    pooled_tau: float | None = Field(
        description="tau from every calibrating label of every system pooled: no rollout "
        "uses it unless its system is set to borrow all labels pooled (see systems)"
    )
    tau_by_group: dict[str, float | None] = Field(
        description="The same all-systems pooled calibration per length bucket"
    )
    m: int
    m_by_group: dict[str, int]
    systems: list[SystemCalibrationOut] = Field(
        description="Per agent system: the thresholds its rollouts' sets actually use"
    )
    scorer_version: str
    created_at: datetime | None
    attributed: int
    failed: int
    monitor: CoverageMonitor


class SuggestionOut(Schema):
    code: str = Field(description="The MAST mode's code, e.g. MAST-1")
    name: str
    support: float | None = Field(
        description="The share of its steps pointing to that mode (null: not measured)"
    )
    strong: bool = Field(description="Whether enough of its steps point to it to confirm it")
    basis: str = Field(description="What points to it: `signal` (a behaviour signal) or `wording`")


class MisbehaviourOut(Schema):
    id: int
    key: str
    name: str
    category: str = Field(description='The category a user gave it, by name ("": none)')
    category_code: str = Field(
        "", description='That category\'s code, e.g. MAST-1 ("" for none or a custom one)'
    )
    suggested_category: SuggestionOut | None = Field(
        None,
        description="The built-in MAST mode its signals and wording suggest, which the taxonomy"
        " page offers to confirm; null once a user set a category or when nothing suggests one",
    )
    share: float = Field(description="Share of all wrong steps, 0-1")
    size: int
    rollout_count: int
    environment_count: int
    task_count: int
    model_count: int
    recurs: dict[str, int] = Field(
        description="How many environments, tasks and policy models it recurs in: where its"
        " steps weigh at least half a wrong step (a labelled or error step, or prediction-set"
        " steps whose probabilities add up to one half). `generalises` counts these."
    )
    generalises: bool
    lift: float | None = Field(
        description="Failure rate of the rollouts containing it over the failure rate of all"
        " compared rollouts (kept for older clients; the pages show the two below)"
    )
    lift_unadjusted: float | None = Field(
        description="Failure risk ratio of rollouts containing it against rollouts without it,"
        " compared only in environments with successful rollouts; null where nothing compares"
    )
    lift_adjusted: float | None = Field(
        description="The same risk ratio with episode length held fixed (Mantel-Haenszel over"
        " length buckets per environment): near 1 for a behaviour that merely comes with long"
        " rollouts"
    )
    lift_adjusted_rollouts: int | None = Field(
        None,
        description="Rollouts with an outcome containing it by assignment (successes"
        " included, so it may exceed `rollout_count`, which counts its wrong steps' rollouts)"
        " at the lengths the adjusted lift compares (where rollouts with and without it"
        " include a success): below 5 the adjusted lift is noise; null for a misbehaviour"
        " last profiled before this was stored",
    )
    lift_gap: str = Field(
        "",
        description="Why a lift is null while successes exist: `none_shows`, `all_show`"
        " (none or all of the compared rollouts contain it), `no_success` or"
        " `no_success_or_all_show` (the adjusted lift only: no length it occurs at has both a"
        " success and a rollout without it); the crude lift's reason when that is null",
    )
    pattern: str = Field(description='The action pattern most of its steps follow ("": none)')
    loose: bool = Field(
        False,
        description="Its steps share no behaviour signal, agent, tool, error or phrase, only"
        " closeness of wording: its name describes a few of them, not all",
    )
    terms: list[Any]
    merged_into: int | None = Field(
        None,
        description="Where its wrong steps went when it was merged (its merges followed): the"
        " misbehaviour to read, filter and export by instead. A merged one counts nothing",
    )


class MisbehaviourList(Schema):
    misbehaviours: list[MisbehaviourOut]


class MisbehaviourDetail(MisbehaviourOut):
    environments: dict[str, Any]
    policy_models: dict[str, Any] = Field(
        description="Its wrong steps per policy model; a rollout that names no model counts "
        "under its agent system (the spread is over whatever drove the agent)"
    )
    exemplar_step_ids: list[int]


class MemberOut(Schema):
    id: int
    step_id: int
    step_index: int
    rollout_id: int
    rollout_external_id: str
    probability: float
    weight: float
    source: str = Field(
        description="Why it is a wrong step: `label` (the labelled decisive step), `conformal`"
        " (in the prediction set), `error` (it drew an error), `signal` (a behaviour signal,"
        " in a failed rollout with neither a label nor a set) or `failed` (every agent action"
        " of failed rollouts, with the all-failed-steps switch)"
    )
    assigned: bool


class MemberPage(Schema):
    results: list[MemberOut]
    next_cursor: str | None
    next: str | None


class ExportIn(Schema):
    kinds: list[Literal["sft", "preference", "diagnosis", "start_states"]] | None = None
    filters: dict[str, Any] | None = None


class ExportProgress(Schema):
    done: int
    total: int
    percent: int


class ExportOut(Schema):
    id: int
    status: str
    kinds: list[str]
    filters: dict[str, Any]
    progress: ExportProgress
    counts: dict[str, Any]
    error: str
    created_at: str
    finished_at: str | None
    files: dict[str, str]
    zip_url: str | None
    status_url: str
    manifest: dict[str, Any] | None = None


class ExportList(Schema):
    exports: list[ExportOut]
