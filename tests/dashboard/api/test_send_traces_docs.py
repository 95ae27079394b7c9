"""The REST snippets of docs/send-traces.md, run as written (a separate process) against a
live server: an outcome and a label attached later to a rollout by its trace id."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.models import Label, Step, Trajectory
from pipeline.models import ProjectRefresh
from projects.tokens import project_token_issue
from tests.conftest import REPO_ROOT, ingest_bytes
from tests.dashboard.api.conftest import jsonl, native

pytestmark = pytest.mark.django_db(transaction=True)

DOC = REPO_ROOT / "docs" / "send-traces.md"
SNIPPET = re.compile(r"<!-- api-snippet: (\S+) -->\n```(python|bash)\n(.*?)```", re.DOTALL)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def snippets() -> dict[str, tuple[str, str]]:
    return {name: (language, code) for name, language, code in SNIPPET.findall(DOC.read_text())}


@pytest.fixture
def live_rollout(project):
    ingest_bytes(project, jsonl([native(TRACE_ID, outcome="unknown", steps=4)]), "live.jsonl")
    rollout = Trajectory.objects.get(project=project, external_id=TRACE_ID)
    # The docs' support agent (a label must name an agent that acts in the rollout).
    Step.objects.filter(trajectory=rollout, agent="planner").update(agent="support")
    return rollout


def _run(name: str, live_server, project, tmp_path: Path) -> str:
    language, code = snippets()[name]
    script = tmp_path / f"{name}.{'py' if language == 'python' else 'sh'}"
    script.write_text(code)
    env = {
        **os.environ,
        "FAULTLINE_URL": live_server.url,
        "FAULTLINE_PROJECT": project.slug,
        "FAULTLINE_TOKEN": project_token_issue(project=project),
        "TRACE_ID": TRACE_ID,
    }
    command = [sys.executable, str(script)] if language == "python" else ["bash", str(script)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_it_documents_the_snippets_it_runs():
    assert set(snippets()) == {"rest-outcome", "rest-label", "rest-outcome-curl"}


def test_it_attaches_the_outcome_and_queues_the_attribution(
    live_server, project, live_rollout, tmp_path
):
    output = _run("rest-outcome", live_server, project, tmp_path)
    live_rollout.refresh_from_db()
    assert "attribution queued: True" in output
    assert (live_rollout.outcome, live_rollout.reward) == ("failure", 0.0)
    assert live_rollout.metadata["judge"] == "refund_policy"
    assert ProjectRefresh.objects.filter(project=project).exists()


def test_it_labels_the_decisive_step(live_server, project, live_rollout, tmp_path):
    _run("rest-outcome", live_server, project, tmp_path)
    output = _run("rest-label", live_server, project, tmp_path)
    label = Label.objects.get(trajectory=live_rollout)
    assert f"label {label.pk} stored" in output
    assert (label.step_index, label.agent, label.source) == (2, "support", "human")


def test_it_attaches_an_outcome_with_curl(live_server, project, live_rollout, tmp_path):
    output = _run("rest-outcome-curl", live_server, project, tmp_path)
    live_rollout.refresh_from_db()
    assert '"outcome":"success"' in output.replace(" ", "")
    assert (live_rollout.outcome, live_rollout.reward) == ("success", 1.0)
