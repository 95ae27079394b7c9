"""The step vocabulary every app shares: who acted (an agent, the user, a tool), under
which agent name, and whether a tool call changes the world's state. One home for these
rules: the attribution signals, the misbehaviour selection and the repair exports all ask
here, so they cannot drift apart.

Example:
    >>> is_mutating_tool("book_reservation"), is_mutating_tool("get_user_details")
    (True, False)
    >>> from ingest.core.records import StepRecord
    >>> is_agent_action(StepRecord(index=3, role="user", agent="Verification_Expert"))
    True
"""

from __future__ import annotations

import json
import re
from typing import Any

# Roles of turns the agent did not choose: the system prompt and tools' results ("function"
# is the older OpenAI name of a tool's result).
NON_ACTION_ROLES = frozenset({"system", "tool", "function"})
NON_ACTION_KINDS = frozenset({"system", "tool_result"})
# Roles and agent names that mean the human user (or nobody in particular).
USER_ROLES = frozenset({"user", "human"})
_ROLE_SUFFIX = re.compile(r"\s*\(.*\)\s*$")

# Verbs that change the world's state. Matched on the first word of a snake_case or
# camelCase tool name, so "update_reservation_flights" and "cancelOrder" both count.
MUTATING_VERBS = frozenset(
    {
        "add",
        "apply",
        "book",
        "cancel",
        "change",
        "charge",
        "create",
        "delete",
        "edit",
        "exchange",
        "insert",
        "modify",
        "move",
        "pay",
        "post",
        "purchase",
        "put",
        "refund",
        "remove",
        "rename",
        "reset",
        "return",
        "send",
        "set",
        "submit",
        "transfer",
        "update",
        "upgrade",
        "upsert",
        "write",
    }
)
READ_ONLY_VERBS = frozenset(
    {
        "browse",
        "calculate",
        "cat",
        "check",
        "compute",
        "describe",
        "fetch",
        "find",
        "get",
        "goto",
        "grep",
        "inspect",
        "list",
        "lookup",
        "ls",
        "preview",
        "query",
        "read",
        "scroll",
        "search",
        "show",
        "test",
        "tests",
        "think",
        "validate",
        "verify",
        "view",
    }
)
_FIRST_WORD = re.compile(r"[A-Za-z][a-z]*")
# "open" reads a file or a page but opens an account or a ticket: read-only only before one
# of these (a coding agent's open_file, a browser's open_url).
_OPENS_TO_READ = frozenset({"file", "files", "page", "url", "link", "tab", "document", "doc"})
_OPENS_TO_READ |= frozenset({"folder", "directory", "dir", "path", "image", "pdf"})


# Tools that hand the conversation to another agent or a person ("transfer_to_billing",
# "handoffToRefunds", "escalate_to_human"): they change who acts next, not a state the user
# must agree to first. A money transfer ("transfer_funds") is no handoff.
_HANDOFF = re.compile(r"^(transfer_?to|hand_?off|escalate|delegate|route_?to)", re.IGNORECASE)


def is_handoff_tool(name: str) -> bool:
    """Whether a tool hands the conversation over.

    >>> is_handoff_tool("transfer_to_agent"), is_handoff_tool("handoffToBilling")
    (True, True)
    >>> is_handoff_tool("transfer_funds"), is_handoff_tool("book_reservation")
    (False, False)
    """
    return bool(_HANDOFF.match(name.strip()))


def mutating_verbs_of(name: str) -> set[str]:
    """The state-changing verbs a tool's name holds ("issue_refund" -> {"refund"}).

    >>> sorted(mutating_verbs_of("issue_refund")), sorted(mutating_verbs_of("cancelOrder"))
    (['refund'], ['cancel'])
    """
    words = re.findall(r"[A-Za-z][a-z]*", name)
    return {word.lower() for word in words} & MUTATING_VERBS


def is_mutating_tool(name: str) -> bool | None:
    """True for a state-changing tool, False for a read-only one, None when unsure.

    The first word decides when it is a known verb; else a known verb later in the name
    does ("issue_refund", "process_payment_update" change state; "order_status_lookup"
    reads), a state-changing one first.

    >>> is_mutating_tool("issue_refund"), is_mutating_tool("order_status_lookup")
    (True, False)
    >>> is_mutating_tool("get_refund_status"), is_mutating_tool("weather")
    (False, None)
    >>> is_mutating_tool("open_file"), is_mutating_tool("open_ticket")
    (False, None)
    """
    match = _FIRST_WORD.match(name.strip())
    if not match:
        return None
    verb = match.group(0).lower()
    if verb == "open":
        following = [word.lower() for word in re.findall(r"[A-Za-z][a-z]*", name)[1:2]]
        return False if following and following[0] in _OPENS_TO_READ else None
    if verb in MUTATING_VERBS:
        return True
    if verb in READ_ONLY_VERBS:
        return False
    words = {word.lower() for word in re.findall(r"[A-Za-z][a-z]*", name)}
    if words & MUTATING_VERBS:
        return True
    if words & READ_ONLY_VERBS:
        return False
    return None


def step_mutates(step: Any) -> bool | None:
    """Whether a tool call changes state: the step's own flag when its reader set one,
    else what its tool's name says (None: unknown, a tool that may write).

    >>> from types import SimpleNamespace as S
    >>> step_mutates(S(is_mutating=None, tool_name="open_file")), step_mutates(S(tool_name="run"))
    (False, None)
    >>> step_mutates(S(is_mutating=True, tool_name="get_quote"))
    True
    """
    flag = getattr(step, "is_mutating", None)
    return flag if flag is not None else is_mutating_tool(getattr(step, "tool_name", "") or "")


def is_user_turn(step: Any) -> bool:
    """A turn of the human user: the role "user"/"human" from the user or nobody named.

    In multi-agent chats (Who&When) other agents' messages arrive with the role "user" but
    a named agent ("Verification_Expert"): those are not user turns.

    >>> from ingest.core.records import StepRecord
    >>> is_user_turn(StepRecord(index=0, role="user", agent="")), is_user_turn(
    ...     StepRecord(index=0, role="user", agent="Verification_Expert"))
    (True, False)
    """
    role = (step.role or "").lower()
    return role in USER_ROLES and (step.agent or "").lower() in USER_ROLES | {""}


def is_agent_action(step: Any) -> bool:
    """An agent's own step: not the system prompt, a user turn or a tool's result.

    >>> from ingest.core.records import StepRecord
    >>> is_agent_action(StepRecord(index=0, role="user", agent="user"))
    False
    >>> is_agent_action(StepRecord(index=1, role="assistant", kind="tool_call"))
    True
    """
    if step.kind in NON_ACTION_KINDS:
        return False
    if (step.role or "").lower() in NON_ACTION_ROLES:
        return False
    return not is_user_turn(step)


def base_agent(agent: str) -> str:
    """The agent's name without a role suffix.

    >>> base_agent("Orchestrator (-> WebSurfer)")
    'Orchestrator'
    """
    return _ROLE_SUFFIX.sub("", agent or "").strip()


def acting_agent(step: Any) -> str:
    """Who acted at this step: the agent's base name, else its role.

    >>> from ingest.core.records import StepRecord
    >>> acting_agent(StepRecord(index=0, role="assistant", agent="WebSurfer (thought)"))
    'WebSurfer'
    """
    return base_agent(step.agent) or step.role or "assistant"


#: A message of at most this many words that names another agent only passes the turn.
ROUTING_WORDS = 5
_WORD = re.compile(r"\w+")


def agent_names(steps: Any) -> frozenset[str]:
    """The base names of the agents of a rollout's steps, in lower case.

    >>> from ingest.core.records import StepRecord as S
    >>> sorted(agent_names([S(index=0, role="assistant", agent="WebSurfer (thought)")]))
    ['websurfer']
    """
    return frozenset(base_agent(step.agent).lower() for step in steps) - {""}


def is_routing(step: Any, agents: frozenset[str]) -> bool:
    """Whether a step only passes the turn: a message of at most :data:`ROUTING_WORDS`
    words, no tool call, that names another of ``agents`` (:func:`agent_names`) as words
    ("Next speaker WebSurfer", "Over to the Travel Agent"). An orchestrator says it before
    every turn: said again, it is the protocol, not a repeated action.

    >>> from ingest.core.records import StepRecord as S
    >>> agents = agent_names([S(index=0, role="assistant", agent=a)
    ...                       for a in ("Orchestrator", "WebSurfer", "Travel Agent")])
    >>> [is_routing(S(index=0, role="assistant", agent=who, content=text), agents)
    ...  for who, text in (("Orchestrator", "Next speaker WebSurfer"),
    ...                    ("WebSurfer", "scroll down"), ("WebSurfer", "Over to the Travel Agent"),
    ...                    ("Travel Agent", "Hi"))]
    [True, False, True, False]
    """
    if len(agents) < 2 or step.kind == "tool_call" or step.tool_name:
        return False
    text = (step.content or "")[:200].lower()
    if len(_WORD.findall(text)) > ROUTING_WORDS:
        return False
    own = base_agent(step.agent).lower()
    return any(
        name != own and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) for name in agents
    )


def has_one_agent(steps: Any) -> bool:
    """Whether at most one agent acts in a rollout's steps. Such an agent's name depends on
    the format that carried it (``assistant`` in a chat file, its own name in an
    OpenTelemetry trace): comparisons across rollouts go by its role instead.

    >>> from ingest.core.records import StepRecord as S
    >>> has_one_agent([S(index=0, role="user"), S(index=1, role="assistant", agent="bot")])
    True
    >>> has_one_agent([S(index=0, role="assistant", agent="a"), S(index=1, role="assistant",
    ...                agent="b (thought)")])
    False
    """
    agents = {acting_agent(step) for step in steps if is_agent_action(step)}
    return len(agents) <= 1


# A report that the work is done or passed, and the words of one that admits a failure
# (the behaviour signals' claimed success and the attribution heuristic's claim after an
# error read them alike).
CLAIMS_DONE = re.compile(
    r"\btests?\b[^.!?\n]{0,60}?\bpass(es|ed|ing)?\b|^\W*(all )?(fixed|done|resolved|completed)\b|"
    r"\b(i|we) (have )?(now )?(fixed|resolved|completed|finished)\b|\b("
    r"(is|are|has been|have been|was|were) (now )?(successfully )?(resolved|fixed|complete|"
    r"completed|done|booked|cancell?ed|updated|changed|modified|refunded|created|sent|"
    r"saved|deployed|installed|merged|processed|issued|approved|applied|submitted|"
    r"scheduled|shipped|confirmed)\b|task (is )?complete|went through|all set|"
    r"(is|are) on (its|their) way|successfully)",
    re.IGNORECASE | re.MULTILINE,
)
ADMITS_FAILURE = re.compile(
    r"\b(error|errors|sorry|apolog\w*|unfortunately|fail\w*|unable|cannot|can't|couldn't|"
    r"could not|did not|didn't|not|still|problem)\b",
    re.IGNORECASE,
)
# A tool that hands the work in: what its call says is the agent's closing report.
HAND_IN_TOOL = re.compile(r"submit|finish|final_answer|complete_task|task_done", re.IGNORECASE)


def hand_in_report(step: Any) -> str:
    """What a hand-in call (:data:`HAND_IN_TOOL`) reports: the call's own text (OpenHands'
    ``finish`` keeps its closing message there) and its arguments (SWE-agent's ``submit``
    summary); "" for any other step.

    >>> from ingest.core.records import StepRecord as S
    >>> hand_in_report(S(index=0, kind="tool_call", tool_name="finish", content="Done.",
    ...                  tool_args={"summary": "all tests pass"}))
    'Done. {"summary": "all tests pass"}'
    >>> hand_in_report(S(index=0, kind="tool_call", tool_name="search", content="x"))
    ''
    """
    if not (step.tool_name and HAND_IN_TOOL.search(step.tool_name)):
        return ""
    args = step.tool_args
    written = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    return f"{step.content or ''} {written if args is not None else ''}".strip()


def claims_success(text: str) -> bool:
    """Whether a closing report says the work is done and admits no failure.

    >>> claims_success("Fixed the parser; all tests pass."), claims_success("Tests still fail.")
    (True, False)
    """
    return bool(CLAIMS_DONE.search(text)) and not ADMITS_FAILURE.search(text)


# An error the environment caused rather than the call: a timeout, an overloaded or
# unreachable service, a rate limit. The same call may well work when tried again.
_TRANSIENT_ERROR = re.compile(
    r"\btimed? ?out\b|\btimeout|temporar(?:il)?y unavailable|service unavailable|rate.?limit"
    r"|too many requests|try again later|connection (?:reset|refused|aborted|closed)"
    r"|net::ERR_[A-Z_]+|\bERR_(?:CONNECTION|NETWORK|TIMED_OUT|NAME_NOT_RESOLVED)\w*"
    r"|bad gateway|gateway time-?out"
    # The network itself: no name lookup, no route, no connection (curl, Python, urllib3).
    r"|temporary failure in name resolution|name or service not known|could not resolve host"
    r"|network is unreachable|no route to host|failed to establish a new connection"
    r"|NewConnectionError|connection broken by"
    # A status code only as one: "HTTP 503", "status: 429" (an order 503 is no outage).
    r"|\b(?:http|status|code)\W{0,3}(?:429|50[234])\b",
    re.IGNORECASE,
)
TRANSIENT_HEAD = 500


def says_transient_error(text: str) -> bool:
    """Whether an error's text (its first :data:`TRANSIENT_HEAD` characters, where a tool
    or a harness says what failed) names a cause in the environment, not in the call.

    >>> says_transient_error("Error: query timed out after 30 s")
    True
    >>> says_transient_error("Error: page failed to load http://shop.test/item 502 Bad Gateway")
    True
    >>> says_transient_error("Error: no such column: region")
    False
    >>> says_transient_error("HTTP 503"), says_transient_error("Error: order 503 not found")
    (True, False)
    >>> says_transient_error("pip: Temporary failure in name resolution; no matching distribution")
    True
    """
    return bool(_TRANSIENT_ERROR.search((text or "")[:TRANSIENT_HEAD]))


# The provider a model name may be prefixed with ("openai/gpt-4o"): inspect_ai and
# LiteLLM name models so, OpenTelemetry and the chat formats name the model alone.
_MODEL_PROVIDER = re.compile(
    r"^(?:openai|anthropic|google|vertex(?:_ai)?|gemini|mistral|grok|xai|groq|together"
    r"|fireworks|bedrock|azure|azureai|cloudflare|perplexity|openrouter|ollama|vllm|hf"
    r"|sambanova|deepseek|cohere)/(?=\S)",
    re.IGNORECASE,
)


def model_name(name: str) -> str:
    """A policy model's name without its provider prefix, so that one model read from an
    inspect_ai log and from an OpenTelemetry trace is one model (the "generalises" mark
    counts models).

    >>> model_name("openai/gpt-4o-2024-08-06"), model_name("meta-llama/Llama-3-8B")
    ('gpt-4o-2024-08-06', 'meta-llama/Llama-3-8B')
    >>> model_name("hf/meta-llama/Llama-3-8B")
    'meta-llama/Llama-3-8B'
    """
    return _MODEL_PROVIDER.sub("", (name or "").strip(), count=1)


# Title-case words (one capital, then lower case) after a lower-case letter, a digit or
# a comma and a space: inside a sentence, so not capitalised for being first. CamelCase
# agent names (WebSurfer) and words after ". ", ": " or "| " are kept. The masking of
# task entities and the behaviour signals' facts of a claim read names by it.
PROPER_NOUN = re.compile(r"(?<=[a-z0-9,;)] )[A-Z][a-z]+(?:\s[A-Z][a-z]+)*\b")
