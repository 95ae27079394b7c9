"""An optional LLM-judge scorer for any OpenAI-compatible chat endpoint.

Nothing requires it. Steps are sent in batches of ``batch_size``; each step's score is
cached under a hash of the model, the task, the step and its next observation, so a
trajectory scored twice (or two trajectories sharing steps) costs one request per new
step only. Requests time out after ``timeout`` seconds and are retried ``max_retries``
times on network errors, HTTP 429/5xx and unreadable answers, waiting
``backoff * 2**attempt`` seconds between attempts.

The judge answers with JSON ``{"scores": [{"step": 3, "score": 0.8}, ...]}``; scores are
clipped to [0, 1] and normalised within the trajectory.

Example:
    >>> judge = LLMJudgeScorer(url="http://127.0.0.1:9/v1", model="m")
    >>> judge.endpoint
    'http://127.0.0.1:9/v1/chat/completions'
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import MutableMapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from attribution.core.scorers.base import StepScorer
from attribution.core.view import StepView, TrajectoryView

MSG_NOT_CONFIGURED = (
    "The LLM judge needs a URL and a model (FAULTLINE_JUDGE_URL, FAULTLINE_JUDGE_MODEL)."
)
MSG_GAVE_UP = "The LLM judge did not answer usefully after {attempts} attempts: {reason}"
RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
SYSTEM_PROMPT = (
    "You audit failed runs of LLM agents. For each numbered step you are shown, give the "
    "probability (0 to 1) that it is the decisive error that made the run fail. Answer with "
    'JSON only: {"scores": [{"step": <number>, "score": <0..1>}, ...]}.'
)


class JudgeError(RuntimeError):
    """The judge endpoint failed or answered nonsense after every retry."""


class LLMJudgeScorer(StepScorer):
    kind: ClassVar[str] = "llm_judge"

    def __init__(
        self,
        url: str = "",
        model: str = "",
        key: str = "",
        timeout: float = 30.0,
        batch_size: int = 8,
        max_retries: int = 2,
        backoff: float = 0.5,
        context_chars: int = 1500,
        cache: MutableMapping[str, float] | None = None,
    ) -> None:
        self.url = url
        self.model = model
        self.key = key
        self.timeout = timeout
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff = backoff
        self.context_chars = context_chars
        self.cache = cache

    def get_params(self) -> dict[str, Any]:
        # The key is a secret: never part of stored parameters.
        return {
            "url": self.url,
            "model": self.model,
            "timeout": self.timeout,
            "batch_size": self.batch_size,
            "max_retries": self.max_retries,
        }

    @property
    def endpoint(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    @property
    def step_cache(self) -> MutableMapping[str, float]:
        if self.cache is not None:
            return self.cache
        if not hasattr(self, "cache_"):
            self.cache_: dict[str, float] = {}
        return self.cache_

    def __getstate__(self) -> dict[str, Any]:
        # Neither the key nor the cache go into a stored blob.
        state = dict(self.__dict__)
        state["key"] = ""
        state.pop("cache_", None)
        state["cache"] = None
        return state

    def _cache_key(self, view: TrajectoryView, index: int) -> str:
        step = view.steps[index]
        following = view.steps[index + 1].content if index + 1 < view.n_steps else ""
        material = json.dumps(
            [
                self.model,
                view.task_text,
                step.agent,
                step.role,
                step.content,
                step.tool_name,
                step.tool_args,
                following,
            ]
        )
        return hashlib.sha256(material.encode("utf-8")).hexdigest()

    def _describe(self, step: StepView) -> str:
        body = step.content[: self.context_chars]
        if step.tool_name:
            body += f"\n[tool call {step.tool_name} {step.tool_args[: self.context_chars // 3]}]"
        return f"### Step {step.index} ({step.agent or step.role})\n{body}"

    def _prompt(self, view: TrajectoryView, batch: list[int]) -> str:
        lines = [f"Task: {view.task_text[: self.context_chars]}", "", "Run so far (abridged):"]
        last = max(batch)
        for step in view.steps[: last + 2]:
            lines.append(self._describe(step))
        lines += ["", "Score these steps: " + ", ".join(str(i) for i in batch)]
        return "\n".join(lines)

    def _post(self, prompt: str) -> str:
        body = json.dumps(
            {
                "model": self.model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": prompt},
                ],
            }
        ).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (configured URL)
            payload = json.loads(response.read().decode("utf-8"))
        return str(payload["choices"][0]["message"]["content"])

    @staticmethod
    def _parse(content: str, batch: list[int]) -> dict[int, float]:
        match = _JSON_OBJECT.search(content)
        if not match:
            raise ValueError("no JSON object in the answer")
        items = json.loads(match.group(0))["scores"]
        scores = {int(item["step"]): float(item["score"]) for item in items}
        missing = [i for i in batch if i not in scores]
        if missing:
            raise ValueError(f"no score for steps {missing}")
        return {i: min(max(scores[i], 0.0), 1.0) for i in batch}

    def _score_batch(self, view: TrajectoryView, batch: list[int]) -> dict[int, float]:
        reason = ""
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._parse(self._post(self._prompt(view, batch)), batch)
            except urllib.error.HTTPError as error:
                reason = f"HTTP {error.code}"
                if error.code not in RETRY_STATUSES:
                    break
            except (urllib.error.URLError, TimeoutError, OSError) as error:
                reason = f"network: {error}"
            except (ValueError, KeyError, IndexError, TypeError) as error:
                reason = f"unreadable answer: {error}"
            if attempt + 1 < attempts and self.backoff > 0:
                time.sleep(self.backoff * 2**attempt)
        raise JudgeError(MSG_GAVE_UP.format(attempts=attempts, reason=reason))

    def _scores(self, view: TrajectoryView) -> NDArray[np.float64]:
        if not self.url or not self.model:
            raise JudgeError(MSG_NOT_CONFIGURED)
        cache = self.step_cache
        keys = [self._cache_key(view, i) for i in range(view.n_steps)]
        todo = [i for i, key in enumerate(keys) if key not in cache]
        for start in range(0, len(todo), max(self.batch_size, 1)):
            batch = todo[start : start + max(self.batch_size, 1)]
            for index, score in self._score_batch(view, batch).items():
                cache[keys[index]] = score
        # A floor keeps every step possible, so conformal sets can still grow to cover it.
        return np.array([cache[key] for key in keys]) + 1e-3
