"""The real OpenInference instrumentation of the real OpenAI client, exporting to the
receiver: what a Phoenix user's agent sends (an agent system outside ../shared/data)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ingest.models import Trajectory
from projects.tokens import project_token_issue
from tests.ingest.otlp.exporters import REPO_ROOT, exporter_env, run_python

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = REPO_ROOT / "tests" / "ingest" / "otlp" / "openinference_agent.py"
ANSWER = "It is 4 degrees and raining in Oslo."


class FakeOpenAI(BaseHTTPRequestHandler):
    """Chat completions: a get_weather call first, the answer once the tool result is in."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body["messages"][-1]["role"] == "tool":
            message, finish = {"role": "assistant", "content": ANSWER}, "stop"
        else:
            call = {"id": "call_w", "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}  # fmt: skip
            message, finish = (
                {"role": "assistant", "content": None, "tool_calls": [call]},
                "tool_calls",
            )
        reply = json.dumps(
            {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
             "choices": [{"index": 0, "message": message, "finish_reason": finish}],
             "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}
        ).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_openai() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_it_makes_a_rollout_of_a_real_openinference_traced_agent(
    live_server, project, fake_openai, eager_celery
):
    token = project_token_issue(project=project)
    env = exporter_env(live_server.url, token, FAKE_OPENAI_URL=fake_openai)
    output = run_python([str(AGENT)], env)
    trace_id = output.split("trace ", 1)[1].split()[0]
    assert f"answer {ANSWER}" in output
    rollout = Trajectory.objects.get(project=project, external_id=trace_id)
    steps = list(rollout.steps.order_by("index"))
    # The first model call's output was only the tool call, which the TOOL span ran: one
    # step for the call, one for the run, and the result the second call repeats in its
    # input (by the announced call id) is not a second tool_result.
    assert [(s.kind, s.role, s.tool_name) for s in steps] == [
        ("message", "user", ""),
        ("message", "assistant", ""),
        ("tool_call", "assistant", "get_weather"),
        ("tool_result", "tool", "get_weather"),
        ("message", "assistant", ""),
    ]
    assert steps[0].content == "What is the weather in Oslo?" and steps[-1].content == ANSWER
    assert steps[1].metadata["tool_calls"][0]["function"]["name"] == "get_weather"
    assert steps[2].tool_args == {"city": "Oslo"} and steps[2].tool_call_id == "call_w"
    assert steps[3].content == "4 degrees, rain" and steps[3].tool_call_id == "call_w"
    assert {s.agent for s in steps if s.role == "assistant"} == {"weather agent"}
    assert rollout.policy_model == "gpt-4o-mini"
