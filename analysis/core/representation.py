"""What a wrong step is clustered and named as: masked text, signals, error template.

:class:`StepRepresenter` is fitted once per full clustering on all the project's steps:
it learns which task words are entities (:class:`analysis.core.masking.TaskVocabulary`)
and the project's error templates (:class:`analysis.core.error_templates.ErrorTemplates`).
Then each step becomes

- a text to embed: who acted and how (kind, tool, each argument shown by where its value
  came from, ``user_id=<user>``, or masked), the masked content, its signals in words,
  the error template it drew, and the masked request before and observation after it.
  Two calls that differ only in argument values get the same text, so they are one
  misbehaviour. A decisive label's reason is not in it: only labelled steps have one, so
  it split each behaviour into its labelled and its unlabelled steps (a project with half
  its rollouts labelled showed every misbehaviour twice); the reason names the
  misbehaviour instead (:meth:`StepRepresenter.naming_text`, the diagnosis aside);
- a signal vector (:func:`analysis.core.behaviour.step_vector`), scaled so that, over the
  project, it holds as much variance as the text embedding: neither the words nor the
  behaviour decide the reduction alone.

Example:
    >>> from analysis.core.steps import WrongStep
    >>> step = WrongStep(key="1", rollout="r", index=2, agent="assistant", role="assistant",
    ...     kind="tool_call", tool_name="book_reservation",
    ...     tool_args={"user_id": "mia_li_3668", "cabin": "economy"},
    ...     arg_sources=(("cabin", "user"), ("user_id", "user")),
    ...     signals=("drew_error", "unconfirmed_mutation"),
    ...     error="Error: not enough seats on flight HAT290", task_text="I am Mia Li")
    >>> representer = StepRepresenter().fit([step])
    >>> representer.text(step)
    'assistant/assistant tool_call book_reservation(cabin=<user>, user_id=<user>) | signals: drew error, unconfirmed mutation | error: Error: not enough seats on flight <id>'
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from analysis.core.behaviour import CLUSTERED_SIGNALS, VECTOR_SIZE, step_vector
from analysis.core.error_templates import ErrorTemplates
from analysis.core.masking import PLACEHOLDERS, TaskVocabulary, mask_text
from analysis.core.phrases import NameVocabulary
from analysis.core.steps import (
    ARGS_CHARS,
    CONTENT_CHARS,
    CONTEXT_CHARS,
    WrongStep,
    actor,
    args_text,
    clean,
    truncate,
)

#: The signal block's total variance relative to the text embedding's (see module doc).
SIGNAL_WEIGHT = 1.0
#: The same for the structural block (one-hot of who acted, step kind and tool), by the
#: same rule: as much variance as the text (docs/clustering.md, "Variants tried").
STRUCTURE_WEIGHT = 1.0
REASON_CHARS = 300


#: Masking runs on this many times a part's budget before the cut to it: a value's
#: length (a long cabin name, a longer id) must not decide which words survive the cut,
#: or two steps that differ only by values get different texts (they did: two
#: "Calls get_reservation_details" clusters split by where the previous result was cut).
MASK_WINDOW = 4


# A list of masked values says how many there were, a value too: one placeholder stands
# for the run ("<quoted>, <quoted>, <quoted>" -> "<quoted>, …").
_PLACEHOLDER_RUN = re.compile(r"(<[a-z-]+>)(?:,\s*\1)+")


def masked(text: str, limit: int, task_words: Collection[str] = ()) -> str:
    """The text cleaned, masked, then cut to ``limit`` characters (head and tail).

    >>> masked('{"cabin": "basic_economy", "id": "X1"} and more', 24)
    '{"cabin": <quoted>, … more'
    >>> masked('ids: ["A", "B", "C"]', 40)
    'ids: [<quoted>, …]'
    """
    window = truncate(clean(text), limit * MASK_WINDOW)
    masked_text = _PLACEHOLDER_RUN.sub(r"\1, …", mask_text(window, task_words=task_words))
    return truncate(masked_text, limit)


def _masked_args(step: WrongStep, task_words: set[str]) -> str:
    sources = dict(step.arg_sources)
    if isinstance(step.tool_args, dict) and sources:
        parts = []
        for name in sorted(step.tool_args):
            source = sources.get(str(name))
            if source is None:  # not traced (free text, flags): its value, masked
                value = step.tool_args[name]
                shown = mask_text(args_text({name: value}), task_words=task_words)
                parts.append(shown)
            else:
                parts.append(f"{name}=<{source}>")
        return ", ".join(parts)
    return mask_text(args_text(step.tool_args), task_words=task_words)


def error_text(step: WrongStep) -> str:
    """The error a step drew: its stored ``error``, else nothing."""
    return step.error or ""


#: An agent's name enters the structural block only when it acts in this many rollouts
#: (the three of "generalises"); otherwise its role does. A column for an agent seen once
#: (CaptainAgent names a new expert in almost every run) can only isolate its steps.
MIN_AGENT_ROLLOUTS = 3


def structure_key(step: WrongStep, recurring: Collection[str] | None = None) -> str:
    """Who acted and how: the agent when it recurs (all agents when ``recurring`` is
    None), else its role; the step kind and the tool."""
    who = actor(step)
    if recurring is not None and who not in recurring:
        who = step.role or "agent"
    return f"{who}|{step.kind}|{step.tool_name}"


def _scale(weight: float, text_variance: float, block: np.ndarray | None) -> float:
    variance = float(np.var(block, axis=0).sum()) if block is not None and len(block) else 0.0
    if weight <= 0 or variance <= 0 or text_variance <= 0:
        return 0.0
    return float(np.sqrt(weight * text_variance / variance))


class StepRepresenter:
    """Masking vocabulary and error templates of one project, and the step texts they give."""

    # While remembering (a full run: it embeds, names and phrases the same steps), each
    # step's action text and each task text's words are masked once. Keyed by the step
    # object, so only while the run holds its steps; never pickled with a fitted model.
    _memo: dict[Any, Any] | None = None

    def __init__(
        self, signal_weight: float = SIGNAL_WEIGHT, structure_weight: float = STRUCTURE_WEIGHT
    ) -> None:
        self.signal_weight = signal_weight
        self.structure_weight = structure_weight

    def remember(self) -> None:
        """Mask each step's action and each task's words once until :meth:`forget`."""
        self._memo = {}

    def forget(self) -> None:
        self._memo = None

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def fit(self, steps: Sequence[WrongStep]) -> StepRepresenter:
        task_of: dict[str, str] = {}
        for step in steps:
            if step.task_text:
                task_of.setdefault(step.task or step.rollout, step.task_text)
        self.vocabulary_ = TaskVocabulary.from_texts(task_of[key] for key in sorted(task_of))
        self.name_vocabulary_ = NameVocabulary.from_texts(task_of.values())
        self.templates_ = ErrorTemplates().fit(error_text(step) for step in steps)
        self.signal_scale_ = 0.0
        self.structure_scale_ = 0.0
        rollouts_of: dict[str, set[str]] = {}
        for step in steps:
            rollouts_of.setdefault(actor(step), set()).add(step.rollout)
        self.recurring_agents_ = {
            agent for agent, seen in rollouts_of.items() if len(seen) >= MIN_AGENT_ROLLOUTS
        }
        self.structures_ = sorted({structure_key(s, self.recurring_agents_) for s in steps})
        return self

    def task_words(self, step: WrongStep) -> set[str]:
        if not step.task_text:
            return set()
        if self._memo is None:
            return self.vocabulary_.entities(step.task_text)
        key = ("task", step.task_text)
        if key not in self._memo:
            self._memo[key] = self.vocabulary_.entities(step.task_text)
        return set(self._memo[key])

    def template(self, step: WrongStep) -> str:
        return self.templates_.template(error_text(step))

    def action(self, step: WrongStep, task_words: set[str] | None = None) -> str:
        """Agent, kind, tool call with traced arguments and the masked content."""
        if self._memo is None or task_words is not None:
            return self._action(step, self.task_words(step) if task_words is None else task_words)
        key = ("action", id(step))
        if key not in self._memo:
            self._memo[key] = (step, self._action(step, self.task_words(step)))
        return str(self._memo[key][1])

    def _action(self, step: WrongStep, words: set[str]) -> str:
        parts = [f"{actor(step)}/{step.role}".strip("/"), step.kind]
        if step.tool_name:
            parts.append(f"{step.tool_name}({truncate(_masked_args(step, words), ARGS_CHARS)})")
        content = masked(step.content, CONTENT_CHARS, words)
        return f"{' '.join(part for part in parts if part)} {content}".strip()

    def text(self, step: WrongStep) -> str:
        """The text embedded for a step (see the module docstring)."""
        words = self.task_words(step)
        text = self.action(step)
        clustered = [s for s in step.signals if s in CLUSTERED_SIGNALS]
        if clustered:
            text += " | signals: " + ", ".join(s.replace("_", " ") for s in clustered)
        template = self.template(step)
        if template:
            text += f" | error: {template}"
        before = masked(step.before, CONTEXT_CHARS, words)
        if before:
            text += f" | request: {before}"
        if step.after and not template:  # the template already says what came back
            after = masked(step.after, CONTEXT_CHARS, words)
            text += f" | observation: {after}"
        return text

    def reason_text(self, step: WrongStep) -> str:
        """A decisive label's reason, masked."""
        return masked(step.reason, REASON_CHARS, self.task_words(step))

    def naming_text(self, step: WrongStep) -> str:
        """The masked words a name may come from, placeholders dropped.

        The action, a tool call's result and a label's reason: a human's diagnosis is the
        best description of a behaviour there is.
        """
        words = self.task_words(step)
        text = self.action(step)
        if step.kind == "tool_call" and step.after:
            text += " " + masked(step.after, 160, words)
        if step.reason:
            text += " " + masked(step.reason, REASON_CHARS, words)
        for placeholder in (*PLACEHOLDERS, "<*>"):
            text = text.replace(placeholder, " ")
        for source in ("user", "observation", "context", "derived", "invented"):
            text = text.replace(f"=<{source}>", "= ")
        return clean(text)

    def phrase_text(self, step: WrongStep) -> str:
        """What a key phrase may come from: the masked content and a tool call's masked
        result (placeholders kept: phrases stop at them). Not a label's reason: a name
        quotes its key phrase as what the agent says ("Orchestrator plans “…”"), so a
        phrase of the reasons would put a reviewer's words in the agent's mouth ("An
        expert gets an error (sometimes “expert is incorrect”)"); the reasons name a
        misbehaviour as its diagnosis (``analysis.core.diagnoses``)."""
        words = self.task_words(step)
        parts = [masked(step.content, CONTENT_CHARS, words)]
        if step.kind == "tool_call" and step.after:
            parts.append(masked(step.after, 160, words))
        return " . ".join(part for part in parts if part)

    def forbidden(
        self, steps: Sequence[WrongStep], vocabulary: NameVocabulary | None = None
    ) -> set[str]:
        """Words a name of these steps must not contain (issue 12's rule, literally), by
        ``vocabulary`` (the project's task texts), else the task texts fitted on."""
        if vocabulary is None:
            vocabulary = getattr(self, "name_vocabulary_", None) or NameVocabulary()
        return vocabulary.forbidden(step.task_text for step in steps if step.task_text)

    def signal_matrix(self, steps: Sequence[WrongStep]) -> np.ndarray:
        if not steps:
            return np.zeros((0, VECTOR_SIZE), dtype=np.float32)
        return np.vstack([step_vector(step) for step in steps]).astype(np.float32)

    def structure_matrix(self, steps: Sequence[WrongStep]) -> np.ndarray:
        """One-hot rows of (role, step kind, tool), over the structures seen at fit."""
        known = {key: column for column, key in enumerate(getattr(self, "structures_", []))}
        recurring = getattr(self, "recurring_agents_", None)
        matrix = np.zeros((len(steps), len(known)), dtype=np.float32)
        for row, step in enumerate(steps):
            column = known.get(structure_key(step, recurring))
            if column is not None:
                matrix[row, column] = 1.0
        return matrix

    def fit_scale(
        self,
        text_vectors: np.ndarray,
        signal_vectors: np.ndarray,
        steps: Sequence[WrongStep] = (),
    ) -> float:
        """The factor that gives the signal block ``signal_weight`` times the text's
        variance (and the structural block ``structure_weight`` times it)."""
        text_variance = float(np.var(text_vectors, axis=0).sum()) if len(text_vectors) else 0.0
        self.signal_scale_ = _scale(self.signal_weight, text_variance, signal_vectors)
        structure = self.structure_matrix(steps) if self.structure_weight and steps else None
        self.structure_scale_ = (
            _scale(self.structure_weight, text_variance, structure)
            if structure is not None
            else 0.0
        )
        return self.signal_scale_

    def combine(self, text_vectors: np.ndarray, steps: Sequence[WrongStep]) -> np.ndarray:
        """Text embedding and the scaled signal (and structural) blocks, one row per step."""
        blocks = [
            np.asarray(text_vectors, dtype=np.float32),
            self.signal_matrix(steps) * getattr(self, "signal_scale_", 0.0),
        ]
        if getattr(self, "structure_scale_", 0.0):
            blocks.append(self.structure_matrix(steps) * self.structure_scale_)
        return np.hstack(blocks)
