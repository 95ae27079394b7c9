"""The LLM judge against a tiny fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from attribution.core.scorers.judge import MSG_NOT_CONFIGURED, JudgeError, LLMJudgeScorer
from tests.attribution.core.conftest import make_trajectory


class FakeJudge:
    """Scores every requested step 0.9 if its text holds "wrong", else 0.1."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.failures_left = 0
        self.failure_status = 500
        self.delay_event: threading.Event | None = None
        self.answer_garbage = False


@pytest.fixture
def judge_server() -> Iterator[tuple[str, FakeJudge]]:
    state = FakeJudge()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            return

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            if state.delay_event is not None:
                state.delay_event.wait(2.0)
            if state.failures_left:
                state.failures_left -= 1
                self.send_response(state.failure_status)
                self.end_headers()
                return
            prompt = body["messages"][-1]["content"]
            wanted = [int(i) for i in prompt.rsplit("Score these steps: ", 1)[1].split(", ")]
            scores = []
            for i in wanted:
                text = re.search(
                    rf"### Step {i} \(.*?\)\n(.*?)(?=\n### Step|\n\nScore these|\Z)", prompt, re.S
                )
                scores.append(
                    {"step": i, "score": 0.9 if text and "wrong" in text.group(1) else 0.1}
                )
            content = (
                "not json" if state.answer_garbage else "Here: " + json.dumps({"scores": scores})
            )
            payload = json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": content}}]}
            ).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the timeout tests hang up on purpose before the answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        if state.delay_event is not None:
            state.delay_event.set()
        server.shutdown()
        server.server_close()


def _trajectory():
    return make_trajectory(["plan", "search", "the wrong answer", "report", "stop"])


def test_it_scores_steps_through_the_endpoint(judge_server):
    url, state = judge_server
    judge = LLMJudgeScorer(url=url, model="judge-1", key="sk-test", batch_size=8, backoff=0)
    probs = judge.step_probabilities(_trajectory())
    assert int(np.argmax(probs)) == 2 and probs.sum() == pytest.approx(1.0)
    assert state.requests[0]["path"] == "/v1/chat/completions"
    assert state.requests[0]["body"]["model"] == "judge-1"
    assert state.requests[0]["auth"] == "Bearer sk-test"


def test_it_sends_steps_in_batches(judge_server):
    url, state = judge_server
    LLMJudgeScorer(url=url, model="m", batch_size=2, backoff=0).step_probabilities(_trajectory())
    assert len(state.requests) == 3


def test_it_caches_scores_per_step_content(judge_server):
    url, state = judge_server
    judge = LLMJudgeScorer(url=url, model="m", batch_size=8, backoff=0)
    first = judge.step_probabilities(_trajectory())
    second = judge.step_probabilities(_trajectory())
    assert len(state.requests) == 1
    assert np.array_equal(first, second)


def test_it_retries_after_a_server_error(judge_server):
    url, state = judge_server
    state.failures_left = 2
    judge = LLMJudgeScorer(url=url, model="m", max_retries=2, backoff=0)
    assert int(np.argmax(judge.step_probabilities(_trajectory()))) == 2
    assert len(state.requests) == 3


def test_it_gives_up_after_the_last_retry(judge_server):
    url, state = judge_server
    state.failures_left = 10
    with pytest.raises(JudgeError, match="HTTP 500"):
        LLMJudgeScorer(url=url, model="m", max_retries=1, backoff=0).step_probabilities(
            _trajectory()
        )
    assert len(state.requests) == 2


def test_it_does_not_retry_a_client_error(judge_server):
    url, state = judge_server
    state.failures_left, state.failure_status = 10, 401
    with pytest.raises(JudgeError, match="HTTP 401"):
        LLMJudgeScorer(url=url, model="m", max_retries=3, backoff=0).step_probabilities(
            _trajectory()
        )
    assert len(state.requests) == 1


def test_it_times_out_a_slow_endpoint(judge_server):
    url, state = judge_server
    state.delay_event = threading.Event()
    with pytest.raises(JudgeError, match="network"):
        LLMJudgeScorer(
            url=url, model="m", timeout=0.2, max_retries=1, backoff=0
        ).step_probabilities(_trajectory())


def test_it_retries_an_unreadable_answer(judge_server):
    url, state = judge_server
    state.answer_garbage = True
    with pytest.raises(JudgeError, match="unreadable"):
        LLMJudgeScorer(url=url, model="m", max_retries=1, backoff=0).step_probabilities(
            _trajectory()
        )
    assert len(state.requests) == 2


def test_it_needs_a_url_and_a_model():
    with pytest.raises(JudgeError) as error:
        LLMJudgeScorer().step_probabilities(_trajectory())
    assert str(error.value) == MSG_NOT_CONFIGURED


def test_it_keeps_the_key_out_of_a_stored_blob(judge_server):
    from attribution.core.scorers import dump_scorer, load_scorer

    url, _ = judge_server
    restored = load_scorer(dump_scorer(LLMJudgeScorer(url=url, model="m", key="sk-secret")))
    assert restored.key == "" and "key" not in restored.get_params()
