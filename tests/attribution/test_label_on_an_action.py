"""A decisive-step label goes on a step an agent took."""

from __future__ import annotations

import pytest

from attribution.labels import LabelError, human_label_add
from ingest.models import Label, Step
from tests.attribution.conftest import make_rollout

pytestmark = pytest.mark.django_db


def test_a_label_on_a_tool_result_or_the_users_turn_is_refused(project, owner):
    # A keyboard's d on a tool result saved a label there: the scorers rank agents'
    # steps, and the clustering makes no misbehaviour of such a label.
    rollout = make_rollout(project, length=6, label=False)
    Step.objects.filter(trajectory=rollout, index=3).update(
        role="tool", kind="tool_result", agent="tool"
    )
    with pytest.raises(LabelError) as refused:
        human_label_add(trajectory=rollout, step_index=3, reason="", author=owner)
    assert refused.value.field == "step"
    assert "Step 3 is a tool's result, not an agent's action" in str(refused.value)
    with pytest.raises(LabelError, match="Step 0 is the user's turn"):
        human_label_add(trajectory=rollout, step_index=0, reason="", author=owner)
    assert not Label.objects.filter(trajectory=rollout).exists()
    # The agent's step before it takes the label.
    assert human_label_add(trajectory=rollout, step_index=2, reason="", author=owner)
    assert Label.objects.get(trajectory=rollout).step_index == 2
