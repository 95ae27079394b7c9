"""Where a step sits in its rollout's structure, not only in its position.

Three landmarks that any rollout has, whatever its agent system: the first error, the
final answer (and the agent that wrote it), and the first step that brings in content the
final answer carries. The columns say where each step is relative to them. Like the other
feature modules, a function of one label-free view; nothing is fitted on a corpus.

Worked example: the Coder's first step (1) starts the stretch that writes the answer, the
error shows at step 2.

    >>> from types import SimpleNamespace as NS
    >>> traj = NS(task_text="what is x", steps=[NS(role="user", agent="user", content="what is x"),
    ...     NS(role="assistant", agent="Coder", content="x is 42"),
    ...     NS(role="assistant", agent="Critic", content="Error: check it"),
    ...     NS(role="assistant", agent="Coder", content="answer 42")])
    >>> matrix = structure_features(traj)
    >>> matrix[:, STRUCTURE_FEATURES.index("answer_agent_first")].tolist()
    [0.0, 1.0, 0.0, 0.0]
    >>> matrix[:, STRUCTURE_FEATURES.index("to_first_error")].tolist()
    [-0.5, -0.25, 0.0, 0.25]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from attribution.core.content_features import CONTENT_FEATURES, content_features
from attribution.core.view import agent_base_name, scoring_view

STRUCTURE_FEATURES = (
    "to_first_error",
    "no_error",
    "answer_agent_first",
    "answer_agent_share",
    "answer_first_entry",
    "before_answer_entry",
)
_CONTENT = {name: k for k, name in enumerate(CONTENT_FEATURES)}


def structure_features(trajectory: Any) -> NDArray[np.float64]:
    """The (n_steps, len(STRUCTURE_FEATURES)) matrix of one trajectory; linear in steps.

    ``to_first_error`` is the signed distance to the first error over the length (0 at it);
    ``answer_agent_first`` marks the first step of the agent that wrote the last step;
    ``answer_first_entry`` the first step whose content the final answer carries, and
    ``before_answer_entry`` the steps before it.
    """
    view = scoring_view(trajectory)
    n = view.n_steps
    out = np.zeros((n, len(STRUCTURE_FEATURES)))
    if n == 0:
        return out
    column = {name: k for k, name in enumerate(STRUCTURE_FEATURES)}
    content = content_features(view)
    index = np.arange(n, dtype=np.float64)
    after_error = content[:, _CONTENT["after_first_error"]]
    if after_error.any():
        first_error = int(np.argmax(after_error))
        out[:, column["to_first_error"]] = (index - first_error) / n
    else:
        out[:, column["no_error"]] = 1.0
    agents = [agent_base_name(step.agent) for step in view.steps]
    answering = agents[-1]
    out[agents.index(answering), column["answer_agent_first"]] = 1.0
    out[:, column["answer_agent_share"]] = sum(a == answering for a in agents) / n
    entry = content[:, _CONTENT["answer_first_entry"]]
    out[:, column["answer_first_entry"]] = entry
    if entry.any():
        out[: int(np.argmax(entry)), column["before_answer_entry"]] = 1.0
    return out
