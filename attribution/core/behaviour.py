"""Behaviour signals: what an agent step did wrong, read from the rollout around it.

The misbehaviour clustering (``analysis.core.behaviour``) and the label-free ranking
(``attribution.core.scorers.baselines``) both read them, so they live here, below both.

Each agent action of a rollout gets a small set of named signals:

- ``invented_argument``: a tool-argument value that no user turn, earlier observation or
  system prompt holds, nor a sum, difference, product or quotient of two numbers seen
  (``arg_sources`` tells, per argument, ``user``, ``observation``, ``context``,
  ``derived`` or ``invented``);
- ``repeated_action``: the same call (tool and arguments) or message the agent made before;
- ``ignored_error``: the last observation was an error and the agent repeats its call
  unchanged, or answers without acknowledging it;
- ``unconfirmed_mutation``: a state-changing call in a conversation whose latest user
  turn gives no confirmation (only when the user speaks more than once, or the system
  prompt asks for the user's confirmation: an autonomous agent has nobody to ask); a
  reply to the agent's question that names the call's verb ("Refund please.") confirms,
  and a handoff to another agent or a person (``is_handoff_tool``) needs no confirmation;
- ``unsupported_claim``: a final answer whose facts (numbers, ids, names, quoted values)
  mostly appear in no earlier observation, user turn or task text;
- ``claimed_success``: ends the rollout right after an error with a report of success
  ("all tests pass", "has been updated") that admits no failure: its report contradicts
  what it last saw;
- ``reported_unmade_change``: a message reporting a state change as made ("I've issued
  the refund", "your booking has been cancelled") while no call that could have made it
  has succeeded so far (every earlier successful call read, or handed over), in a
  rollout whose agents do use tools; a change an earlier tool result already reports
  ("status": "cancelled") is no such claim;
- ``gave_up_after_failure``: terminates, gives up or hands over right after an error
  (a terminal report of success there is ``claimed_success`` instead);
- ``made_up_data``: works on values it made up in place of the real ones: simulated,
  hypothetical, placeholder, dummy, mock, sample or synthetic data, or an assumption
  stated as such ("let's assume the ...");
- ``off_gold_arguments`` / ``unneeded_mutation`` / ``missed_gold_action``: deviations
  from the gold actions, as :func:`attribution.core.gold_actions.diff_actions` finds them
  (a missed action marks the last agent action);
- ``skipped_gold_action``: the step where a missed mutating gold action was due, by the
  gold-action label rule's missing-action point: the agent did something else there;
- ``unchecked_approval``: in a crew whose agents use tools, an agent approves another's
  work ("Looks good, approved", "verified, the figures match") without having made a
  single call since the others last acted: a review that checked nothing (MAST's "no or
  incomplete verification");
- ``drew_error``: the step's own result was an error (its text is kept in ``error``).

Steps are read by attribute (``index``, ``role``, ``agent``, ``kind``, ``content``,
``tool_name``, ``tool_args``, ``tool_call_id``, ``is_error`` and, when present,
``is_mutating``), so ingest's ``StepRecord`` and the Django ``Step`` both work.

Example:
    >>> from ingest.core.records import StepRecord as S
    >>> steps = [S(0, "user", content="Book flight HAT001 for me, user mia_1"),
    ...          S(1, "assistant", "tool_call", tool_name="book_reservation",
    ...            tool_args={"user_id": "mia_1", "flight": "HAT999"}, tool_call_id="c"),
    ...          S(2, "tool", "tool_result", "Error: flight not found", tool_call_id="c",
    ...            is_error=True)]
    >>> found = rollout_signals(steps)[1]
    >>> sorted(found.names)
    ['drew_error', 'invented_argument']
    >>> dict(found.arg_sources)
    {'flight': 'invented', 'user_id': 'user'}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attribution.core.gold_actions import GoldAction, ToolCall, diff_actions
from attribution.core.label_sources import gold_action_deviations, missing_action_point
from attribution.core.provenance import (
    FROM_CONTEXT,
    FROM_OBSERVATION,
    FROM_USER,
    INVENTED,
    SeenSoFar,
    arguments,
    identifier,
    leaves,
    normal,
    observe,
    source_of_step,
    traceable,
)
from ingest.core.tool_results import call_results
from ingest.core.vocabulary import (
    HAND_IN_TOOL,
    PROPER_NOUN,
    agent_names,
    claims_success,
    hand_in_report,
    is_agent_action,
    is_handoff_tool,
    is_routing,
    is_user_turn,
    mutating_verbs_of,
    step_mutates,
)

INVENTED_ARGUMENT = "invented_argument"
REPEATED_ACTION = "repeated_action"
IGNORED_ERROR = "ignored_error"
UNCONFIRMED_MUTATION = "unconfirmed_mutation"
UNSUPPORTED_CLAIM = "unsupported_claim"
GAVE_UP_AFTER_FAILURE = "gave_up_after_failure"
CLAIMED_SUCCESS = "claimed_success"
REPORTED_UNMADE_CHANGE = "reported_unmade_change"
MADE_UP_DATA = "made_up_data"
OFF_GOLD_ARGUMENTS = "off_gold_arguments"
UNNEEDED_MUTATION = "unneeded_mutation"
MISSED_GOLD_ACTION = "missed_gold_action"
SKIPPED_GOLD_ACTION = "skipped_gold_action"
DREW_ERROR = "drew_error"
UNREAD_EDIT = "unread_edit"
EDITED_FAILING_TEST = "edited_failing_test"
UNCHECKED_APPROVAL = "unchecked_approval"
#: Every signal, in the order of the vector encoding.
SIGNALS = (
    INVENTED_ARGUMENT,
    REPEATED_ACTION,
    IGNORED_ERROR,
    UNCONFIRMED_MUTATION,
    UNSUPPORTED_CLAIM,
    GAVE_UP_AFTER_FAILURE,
    MADE_UP_DATA,
    OFF_GOLD_ARGUMENTS,
    UNNEEDED_MUTATION,
    MISSED_GOLD_ACTION,
    DREW_ERROR,
    SKIPPED_GOLD_ACTION,
    CLAIMED_SUCCESS,
    REPORTED_UNMADE_CHANGE,
    UNREAD_EDIT,
    EDITED_FAILING_TEST,
    UNCHECKED_APPROVAL,
)

ERROR_HEAD = 300
# A message is compared with earlier ones on this many characters (a repeat starts alike).
KEY_CHARS = 2000

# Searched in lower-cased text: a case-insensitive alternation is several times slower.
_ERROR = re.compile(
    r"exitcode: [1-9]|traceback|\berror\b|\bexception\b|execution failed|\bfailed\b|"
    r"\binvalid\b|\bnot found\b"
)
_AFFIRMATION = re.compile(
    r"\b(yes|yeah|yep|confirm\w*|go ahead|proceed|sure|ok|okay|please do|correct|"
    r"that's right|do it|sounds good)\b",
    re.IGNORECASE,
)
_ACKNOWLEDGE = re.compile(
    r"\b(error|sorry|apolog\w*|unfortunately|fail\w*|unable|cannot|can't|couldn't|not|"
    r"issue|problem|instead|retry|again|fix\w*|insufficient|declined|denied|rejected|"
    r"different|another)\b|n't\b",
    re.IGNORECASE,
)
_GIVE_UP = re.compile(
    r"\bterminate\b|\bgive up\b|\bgiving up\b|\bunable to\b|\bcannot proceed\b|"
    r"\btransfer\w* (you )?to a human\b|\bi'm sorry, but\b",
    re.IGNORECASE,
)
# Made-up values standing in for real ones (in lower-cased text).
_MADE_UP = re.compile(
    r"\bsimulat(?:e|ed|es|ing|ion)\b|\bhypothetical\b|\bplaceholders?\b|\bdummy\b|"
    r"\bmock(?:ed)? (?:data|values?|responses?|results?)\b|\bmade[- ]up\b|\bfictional\b|"
    r"\b(?:sample|synthetic|fake) (?:data|dataset|values?)\b|\bassum(?:e|ing) (?:the|that|a|some)\b"
)
# A system prompt that makes the user's confirmation a rule ("obtain explicit user
# confirmation", "confirm with the customer", "ask for permission"): there an agent that
# acts on the first request without asking skipped the confirmation, even though the
# user never spoke again. Plain "confirm" is not enough: autonomous agents are told to
# confirm that a fix works.
_CONFIRMATION_RULE = re.compile(
    r"\b(?:(?:user|customer|their|explicit|written)(?:'s)?\s+(?:\w+\s+)?"
    r"(?:confirmation|consent|approval|permission)|"
    r"confirm\w*\s+with\s+the\s+(?:user|customer)|"
    r"ask(?:ing)?\s+(?:the\s+(?:user|customer)\s+)?(?:for\s+)?"
    r"(?:confirmation|permission|approval|consent)|"
    r"(?:get|obtain|request)\s+(?:\w+\s+){0,3}(?:confirmation|consent|approval|permission))",
    re.IGNORECASE,
)
# A reviewer's sign-off, and the words that make one a refusal or a doubt.
_VERDICT = (
    r"(?:approved?|lgtm|verified|signed off|all good|looks (?:good|correct|right|fine)"
    r"|(?:all|the) (?:figures|numbers|values|facts|results) (?:match|check out|are correct))"
)
# As a verdict: a sentence of its own or its opening ("Looks good, approved."), or "I
# approve"; "saving the approved report" only names a state.
_APPROVES = re.compile(
    rf"(?:^|[.!?:;]\s+)\W*{_VERDICT}\b|\b{_VERDICT}\W*$|\bi (?:approve|sign off)\b",
    re.IGNORECASE,
)
_DOUBTS = re.compile(
    r"\b(not|never|no|cannot|can't|isn't|aren't|doesn't|don't|reject\w*|wrong|incorrect"
    r"|mismatch\w*|however|but|unless|fix|revise|change)\b",
    re.IGNORECASE,
)
_GIVE_UP_TOOL = re.compile(r"transfer|terminate|finish|submit|exit|stop|give_up", re.IGNORECASE)
_CONCLUDE = re.compile(
    r"\bfinal answer\b|\bthe answer is\b|\bterminate\b|\bin conclusion\b|"
    r"\bhas been (booked|cancelled|canceled|updated|changed|modified|refunded)\b",
    re.IGNORECASE,
)
# Participles of state changes an agent reports as made, in lower-cased text.
_CHANGES = (
    "booked|rebooked|reserved|cancell?ed|refunded|credited|charged|issued|processed|"
    "updated|changed|modified|upgraded|downgraded|exchanged|returned|replaced|reset|"
    "submitted|scheduled|rescheduled|placed|sent|transferred|applied|removed|deleted|added"
)
_FILLERS = r"(?:(?:now|also|just|already|successfully|gone ahead and) )*"
# "I've issued ...", "we have cancelled ...", "... has been refunded", "... is now booked".
# Also "you're booked", "everything is confirmed", "you're all set" and a reference given
# as made ("your booking reference is XK42P9"): a travel agent's made-up confirmations.
_REPORTS_CHANGE = re.compile(
    rf"\b(?:(?:i|we)(?:'ve| have)? |(?:has|have) {_FILLERS}been |(?:is|are) now )"
    rf"{_FILLERS}({_CHANGES})\b"
    rf"|\b(?:you're|you are) {_FILLERS}(?:all )?(booked|reserved|confirmed|set)\b"
    r"|\b(?:is|are) (?:all )?(confirmed|booked|reserved)\b"
    r"|\b(?:booking|confirmation|reservation) (reference|number|code)(?: is|:)"
)
_NEGATED = re.compile(
    r"\b(?:not|never|unable|cannot|can't|couldn't|won't|once|if|when|after)\b|n't\b"
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
# Facts a claim makes: numbers, codes and quoted values (names come from PROPER_NOUN).
_FACT = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b|\b[A-Z0-9]{5,}\b|\"[^\"\n]{1,60}\"")
# A web address cited in a conclusion, without the punctuation that closes its sentence.
_CITED_URL = re.compile(r"https?://[^\s<>\"'()\[\]]+")


@dataclass(frozen=True)
class StepSignals:
    """The behaviour signals of one agent action (``index`` is the step's index)."""

    index: int
    names: frozenset[str]
    role: str = ""
    arg_sources: tuple[tuple[str, str], ...] = ()
    error: str = ""


def _args_text(raw: Any) -> str:
    """A call's arguments as one text, to look a path up in."""
    return json.dumps(arguments(raw), ensure_ascii=False, sort_keys=True, default=str)


def _says(text: str, value: Any) -> bool:
    """Whether normalised ``text`` holds ``value`` as a whole word or phrase (so 25 is
    not found in 2025)."""
    return re.search(rf"(?<!\w){re.escape(normal(str(value)))}(?!\w)", text) is not None


def _drew_error(step: Any) -> bool:
    """Whether the step reports an error: its flag, or error words at its head or its tail
    (a test runner, a compiler or a shell ends with the summary: "1 failed, 47 passed",
    which a coding harness does not flag)."""
    excerpt = _error_excerpt(step.content or "")
    return bool(step.is_error) or bool(_ERROR.search(excerpt.lower()))


# Argument names that hold the file a call works on.
_PATH_ARGUMENT = re.compile(r"^(path|file|file_?path|file_?name|target_?file|filename)$", re.I)
_CREATES = re.compile(r"^(create|write|new|touch|save)", re.IGNORECASE)


def _file_argument(step: Any) -> str:
    """The file a tool call names in a path argument ("" if none)."""
    for path, value in leaves(arguments(step.tool_args)):
        if isinstance(value, str) and _PATH_ARGUMENT.match(path.rsplit(".", 1)[-1] or ""):
            return value.strip()
    return ""


def _unread_edit(step: Any, read_text: str, observed: Sequence[str]) -> bool:
    """Whether a state-changing call changes a file that existed (see
    :func:`_changes_existing_file`) and that no earlier call read or mentioned (a ``cat``
    or ``grep`` of it counts)."""
    target = _file_argument(step) if _mutating(step) else ""
    if not target or target.lower() in read_text:
        return False
    return _changes_existing_file(step, target, observed)


def _changes_existing_file(step: Any, target: str, observed: Sequence[str]) -> bool:
    """Whether a state-changing call on ``target`` changes a file that existed: an edit
    always; a create only over a file an earlier observation listed (a new file is none)."""
    if _CREATES.match(step.tool_name or ""):
        name = target.lower().rsplit("/", 1)[-1]
        return any(name in result for result in observed)
    return True


# A test file by its name or folder (pytest, unittest, Go, JavaScript conventions).
_TEST_FILE = re.compile(
    r"(^|/)(tests?|spec|__tests__)/|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$", re.I
)


def _edits_failing_test(step: Any, observed: Sequence[str], failed_tests: bool) -> bool:
    """Whether a state-changing call changes an existing test file after a test run failed:
    an agent that skips, loosens or deletes the test that shows its bug makes the suite
    pass without fixing anything. Adding a new test file (a create of a file no
    observation listed) is no such change."""
    target = _file_argument(step) if failed_tests and _mutating(step) else ""
    if not target or not _TEST_FILE.search(target):
        return False
    return _changes_existing_file(step, target, observed)


def _error_excerpt(content: str) -> str:
    """The part of an observation that reports its error: its head, else its tail."""
    head = content[:ERROR_HEAD]
    if len(content) <= ERROR_HEAD or _ERROR.search(head.lower()):
        return head
    return content[-ERROR_HEAD:]


def _closing_claim(step: Any) -> str:
    """What a closing step reports: a message's text, or what a hand-in call says
    (:func:`ingest.core.vocabulary.hand_in_report`; "" for any other tool call)."""
    return hand_in_report(step) if step.tool_name else step.content or ""


def _result_of(steps: Sequence[Any], position: int, answers: Mapping[int, int]) -> int:
    """Where the observation an action drew is: a call's result (``answers``, from
    :func:`ingest.core.tool_results.call_results`), or the next other speaker's step after
    a message (-1 when there is none)."""
    step = steps[position]
    if step.kind == "tool_call":
        return answers.get(position, -1)
    for later_position in range(position + 1, len(steps)):
        later = steps[later_position]
        if is_user_turn(later) or (later.agent or "") == (step.agent or ""):
            return -1
        return later_position
    return -1


def _own_text(step: Any) -> str:
    """What the agent wrote in a step: its message, and a tool call's arguments (code)."""
    return f"{step.content or ''} {_args_text(step.tool_args)}"


def _consented(user_text: str, step: Any, *, answering: bool) -> bool:
    """Whether the user's latest turn agrees to this state-changing call: a plain yes, or,
    answering the agent's question, a turn that names the call's own verb ("Shall I
    refund the $40?" "Refund please."). A request that names the verb before anything was
    proposed is no confirmation of the details."""
    if _AFFIRMATION.search(user_text):
        return True
    if not answering:
        return False
    lowered = user_text.lower()
    return any(
        re.search(rf"\b{verb}\w*", lowered) for verb in mutating_verbs_of(step.tool_name or "")
    )


def _reported_change(text: str, observed: Sequence[str]) -> bool:
    """Whether a message reports a state change as made, in a sentence that neither
    negates, conditions nor asks it, and that no earlier tool result (``observed``,
    lower-cased) already reports: "your flight has been cancelled" after a lookup showing
    it cancelled repeats a fact.

    >>> _reported_change("Done! I've issued a $40 refund to your card.", [])
    True
    >>> _reported_change("I could not cancel it. Your order is now booked?", [])
    False
    >>> _reported_change("Your reservation has been cancelled.", ['{"status": "cancelled"}'])
    False
    >>> [_reported_change(t, []) for t in ("You're booked. Booking reference: XK42P9.",
    ...  "Everything is confirmed.", "All set, you're all set.", "Is it booked?")]
    [True, True, True, False]
    """
    lowered = text.lower().replace("\u2019", "'")
    for sentence in _SENTENCE.findall(lowered):
        match = _REPORTS_CHANGE.search(sentence)
        if match is None:
            continue
        word = next(group for group in match.groups() if group)
        if (
            not sentence.endswith("?")
            and not _NEGATED.search(sentence)
            and not any(word in result for result in observed)
        ):
            return True
    return False


def _may_have_changed(
    steps: Sequence[Any], drew: Sequence[bool], answers: Mapping[int, int], position: int
) -> bool:
    """Whether the tool call at ``position`` may have changed state: it is not known to
    only read (an unknown tool may write), is no handoff, and drew no error."""
    step = steps[position]
    if is_handoff_tool(step.tool_name or "") or step_mutates(step) is False:
        return False
    result = _result_of(steps, position, answers)
    return result < 0 or not drew[result]


def _mutating(step: Any) -> bool:
    return bool(step_mutates(step))


def _approves_unseen(text: str) -> bool:
    """Whether a message signs off on work without a doubt in it.

    >>> approval = "The draft matches the analyst's figure. Approved."
    >>> _approves_unseen(approval), _approves_unseen("Not approved: the figure is wrong.")
    (True, False)
    >>> _approves_unseen("Looks good, approved."), _approves_unseen("Saving the approved report.")
    (True, False)
    """
    return bool(_APPROVES.search(text)) and not _DOUBTS.search(text)


def _action_key(step: Any, agents: frozenset[str]) -> tuple[str, str, str] | None:
    """What makes an action the same as an earlier one (None: nothing to repeat): a call's
    tool and arguments, a message's text; a message of under 20 characters, or one that
    only passes the turn to another of ``agents`` (``vocabulary.is_routing``), is none."""
    if is_routing(step, agents):
        return None
    if step.tool_name:
        canonical = json.dumps(arguments(step.tool_args), sort_keys=True, default=str)
        return (step.agent or step.role or "", step.tool_name, canonical)
    content = normal((step.content or "")[:KEY_CHARS])
    if len(content) < 20:
        return None
    return (step.agent or step.role or "", "", content)


def _gold_signals(steps: Sequence[Any], gold: Sequence[GoldAction]) -> dict[int, set[str]]:
    calls = [
        ToolCall(int(s.index), s.tool_name, arguments(s.tool_args), getattr(s, "is_mutating", None))
        for s in steps
        if s.kind == "tool_call" and s.tool_name
    ]
    diff = diff_actions(calls, gold)
    gold_names = {action.name for action in gold}
    found: dict[int, set[str]] = {}
    for extra in diff.extra:
        if extra["tool"] in gold_names:
            found.setdefault(int(extra["step"]), set()).add(OFF_GOLD_ARGUMENTS)
        elif extra["mutating"]:
            found.setdefault(int(extra["step"]), set()).add(UNNEEDED_MUTATION)
    if any(missing["mutating"] for missing in diff.missing):
        last = next((s for s in reversed(steps) if is_agent_action(s)), None)
        if last is not None:
            found.setdefault(int(last.index), set()).add(MISSED_GOLD_ACTION)
        # Where the action was due: the gold-action label's missing-action point (one
        # home for where that is). A label there made its step a wrong step that said
        # only "An agent replies right after the user" (31 of the demo's largest 49).
        point = _missing_action_point(steps, gold)
        if point is not None:
            found.setdefault(point, set()).add(SKIPPED_GOLD_ACTION)
    return found


def _missing_action_point(steps: Sequence[Any], gold: Sequence[GoldAction]) -> int | None:
    """The index of the first step at which the first missing mutating gold action could
    have been made, by the gold-action label rule (None when that rule finds none)."""
    rollout = _Steps(list(steps))
    deviations = gold_action_deviations(rollout, gold)
    if not deviations.missing_mutating:
        return None
    missing = deviations.missing_mutating[0]
    point = missing_action_point(rollout, gold, missing, deviations.matched)
    return None if point is None else int(steps[point].index)


@dataclass(frozen=True)
class _Steps:
    """A rollout as the label rule reads it: something with ``steps``."""

    steps: list[Any]


def rollout_signals(
    steps: Sequence[Any], *, task_text: str = "", gold: Sequence[GoldAction] | None = None
) -> dict[int, StepSignals]:
    """The signals of every agent action of one rollout, keyed by step index.

    ``gold`` is the rollout's gold action list (tau-bench's ``info.task.actions`` through
    :func:`attribution.core.gold_actions.gold_actions`), or None when it has none.
    """
    seen = SeenSoFar(task_text)
    drew = [_drew_error(step) for step in steps]
    answers = call_results(steps)
    # Distinct texts: a crew that hands every member the same task is not a conversation.
    user_turns = len({normal(step.content or "") for step in steps if is_user_turn(step)})
    confirmation_rule = any(
        _CONFIRMATION_RULE.search(step.content or "")
        for step in steps
        if source_of_step(step) == FROM_CONTEXT
    )
    gold_found = _gold_signals(steps, gold) if gold is not None else {}
    actions = [position for position, step in enumerate(steps) if is_agent_action(step)]
    last_action = actions[-1] if actions else -1
    done: set[tuple[str, str, str]] = set()
    previous_action: dict[str, Any] = {}  # agent -> its last action
    pending_error: dict[str, str] = {}  # agent -> error seen since its last action
    last_user = ""
    # Whether the user's latest turn answers an agent's question ("Shall I refund it?").
    answered_question = False
    last_agent_text = ""
    uses_tools = any(step.kind == "tool_call" for step in steps)
    agents = agent_names(steps)
    calls: list[int] = []  # positions of the tool calls so far
    observed: list[str] = []  # every tool result so far, lower-cased
    read_text = ""  # the arguments of every call so far that only reads, lower-cased
    failed_tests = False  # whether a tool result so far reported failing tests
    found: dict[int, StepSignals] = {}
    # Per agent, where it last acted and where it last made a call (a check of the work).
    last_action_at: dict[str, int] = {}
    last_call_at: dict[str, int] = {}
    for position, step in enumerate(steps):
        agent = step.agent or step.role or ""
        if not is_agent_action(step):
            source = source_of_step(step)
            if source == FROM_USER:
                last_user = step.content or ""
                answered_question = "?" in last_agent_text
            if step.kind == "tool_result":
                observed.append((step.content or "").lower())
                failed_tests = failed_tests or (drew[position] and "test" in observed[-1])
            if source == FROM_OBSERVATION and drew[position]:
                for other in previous_action:
                    pending_error[other] = step.content or ""
            observe(seen, step)
            continue
        names: set[str] = set(gold_found.get(int(step.index), ()))
        sources: list[tuple[str, str]] = []
        if step.kind == "tool_call":
            asked_for = False  # a value of the call stated in the user's latest turn
            latest = normal(last_user)
            for path, value in leaves(arguments(step.tool_args)):
                if traceable(value, path):
                    source = seen.source_of(value, agent, derivable=not identifier(path))
                    sources.append((path, source))
                    asked_for = asked_for or (source == FROM_USER and _says(latest, value))
            if any(source == INVENTED for _, source in sources):
                names.add(INVENTED_ARGUMENT)
            # Where no rule demands a confirmation, the user's own request for this very
            # action ("write the totals to out.parquet") is their consent.
            unasked = confirmation_rule or (user_turns >= 2 and not asked_for)
            if (
                _mutating(step)
                and not is_handoff_tool(step.tool_name or "")
                and unasked
                and not _consented(last_user, step, answering=answered_question)
            ):
                names.add(UNCONFIRMED_MUTATION)
        key = _action_key(step, agents)
        if key is not None and key in done:
            names.add(REPEATED_ACTION)
        prior_error = pending_error.pop(agent, "")
        if prior_error:
            before = previous_action.get(agent)
            unchanged = (
                before is not None and key is not None and _action_key(before, agents) == key
            )
            silent = not step.tool_name and not _ACKNOWLEDGE.search(step.content or "")
            if unchanged or silent:
                names.add(IGNORED_ERROR)
            terminal = (
                position == last_action
                or bool(_GIVE_UP.search(step.content or ""))
                or bool(step.tool_name and _GIVE_UP_TOOL.search(step.tool_name))
            )
            # Ending right after an error: either it gives up, or it reports success, in
            # its last message or in what it hands in ("submit": "fixed; all tests pass").
            claimed = (
                position == last_action or bool(HAND_IN_TOOL.search(step.tool_name or ""))
            ) and claims_success(_closing_claim(step))
            if claimed:
                names.add(CLAIMED_SUCCESS)
            elif terminal:
                names.add(GAVE_UP_AFTER_FAILURE)
        if _MADE_UP.search(_own_text(step).lower()):
            names.add(MADE_UP_DATA)
        if not step.tool_name and (position == last_action or _CONCLUDE.search(step.content or "")):
            content = step.content or ""
            facts = [f for f in _FACT.findall(content) + PROPER_NOUN.findall(content) if len(f) > 1]
            if facts and sum(seen.supports(fact, agent) for fact in facts) < 0.5 * len(facts):
                names.add(UNSUPPORTED_CLAIM)
            # A source cited that nothing the agent saw gave, and no call of the rollout
            # read, is made up however many of the other facts hold: one is enough.
            cited = [url.rstrip(".,;:!?") for url in _CITED_URL.findall(content)]
            if any(not seen.supports(url, agent) and url.lower() not in read_text for url in cited):
                names.add(UNSUPPORTED_CLAIM)
        if (
            uses_tools
            and not step.tool_name
            and _reported_change(step.content or "", observed)
            and not any(_may_have_changed(steps, drew, answers, call) for call in calls)
        ):
            names.add(REPORTED_UNMADE_CHANGE)
        if step.kind == "tool_call" and _unread_edit(step, read_text, observed):
            names.add(UNREAD_EDIT)
        if step.kind == "tool_call" and _edits_failing_test(step, observed, failed_tests):
            names.add(EDITED_FAILING_TEST)
        others_work = max((at for who, at in last_action_at.items() if who != agent), default=-1)
        if (
            uses_tools
            and step.kind != "tool_call"
            and others_work >= 0
            and last_call_at.get(agent, -1) < others_work
            and _approves_unseen(step.content or "")
        ):
            names.add(UNCHECKED_APPROVAL)
        last_action_at[agent] = position
        if step.kind == "tool_call":
            last_call_at[agent] = position
        error = ""
        result = _result_of(steps, position, answers)
        if result >= 0 and drew[result]:
            names.add(DREW_ERROR)
            error = _error_excerpt(steps[result].content or "")
        found[int(step.index)] = StepSignals(
            index=int(step.index),
            names=frozenset(names),
            role=agent,
            arg_sources=tuple(sources),
            error=error,
        )
        if key is not None:
            done.add(key)
        if step.kind == "tool_call":
            calls.append(position)
            if not _mutating(step):
                read_text += " " + _args_text(step.tool_args).lower()
            # After a call that may have changed the state, the same call again checks the
            # new state: a test run after an edit is verification, not repetition.
            if _may_have_changed(steps, drew, answers, position):
                done = {key} if key is not None else set()
        previous_action[agent] = step
        if step.kind != "tool_call" and step.content:
            last_agent_text = step.content
        # What another agent says is an observation for everyone else.
        if step.kind != "tool_call":
            for other in previous_action:
                if other != agent and drew[position]:
                    pending_error[other] = step.content or ""
            observe(seen, step)
    return found
