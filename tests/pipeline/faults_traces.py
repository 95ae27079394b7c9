"""Generated native trace files (docs/trace-format.md) as large as a fault test needs."""

from __future__ import annotations

import json
import random
from pathlib import Path


def native_jsonl(
    path: Path, *, rollouts: int, steps: int, tag: str = "r", seed: int = 7, fail_every: int = 2
) -> Path:
    """A native trace file (docs/trace-format.md): one rollout in ``fail_every`` fails,
    with a labelled decisive step."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for number in range(rollouts):
            failed = number % fail_every == 0
            rollout_steps = [{"role": "system", "kind": "system", "content": "You are an agent."}]
            for index in range(1, steps):
                if index % 2:
                    rollout_steps.append(
                        {
                            "role": "assistant",
                            "kind": "tool_call",
                            "agent": "agent",
                            "tool_name": rng.choice(["search", "update_order", "lookup"]),
                            "tool_args": {"id": f"{tag}-{number}-{index}"},
                            "tool_call_id": f"c{index}",
                        }
                    )
                else:
                    rollout_steps.append(
                        {
                            "role": "tool",
                            "kind": "tool_result",
                            "tool_call_id": f"c{index - 1}",
                            "content": f"result {rng.randint(0, 10**6)} for {tag} {number}",
                            "is_error": failed and index == steps - 1,
                        }
                    )
            record = {
                "id": f"{tag}-{number}",
                "task_id": f"task-{number % 50}",
                "task_text": f"Do task {number % 50}",
                "environment": "retail",
                "agent_system": "fault-agent",
                "policy_model": "model-a" if number % 3 else "model-b",
                "outcome": "failure" if failed else "success",
                "reward": 0 if failed else 1,
                "steps": rollout_steps,
                "labels": [
                    {"step": 1, "agent": "agent", "reason": "wrong tool", "source": "dataset"}
                ]
                if failed
                else [],
            }
            out.write(json.dumps(record) + "\n")
    return path
