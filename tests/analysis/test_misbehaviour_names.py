"""Issue 12's name check on the demo data: no misbehaviour name carries a task entity.

The product runs through the Django side (ingest, gather with signals, full clustering,
the profile refresh from the stored rows) on the demo project's files: every Who&When run
(both subsets) and the 200 tau-bench airline rollouts, as ``make run`` loads them.

The issue's check, taken literally: a word of a name is suspect when it occurs in fewer
than 5% of the project's distinct task texts but in the task text of one of the
misbehaviour's own members. On this data the literal check flags words of two kinds,
neither of which is a task entity, so the test explains each flagged word and fails on
any it cannot explain:

- the product's own fixed wording ("does", "ask" of "which the task does not ask for",
  ``analysis.core.naming.PHRASES``) and English stop words ("without");
- words of the error template most members drew ("gift", "balance" of "gift card
  balance is not enough"; "add", "price" of "payment amount does not add up, total price
  is … but paid …"). The gift-card misbehaviour's members all come from one task (trials
  of airline task 3) whose text speaks of a gift card balance, so the literal check is
  right that the words are in a member's task. They still name no task entity: the
  environment writes the same message in other tasks whose text never says them (task 23
  does not mention a gift card). That is what the test demands of a template word: it
  is in the misbehaviour's error template, and some wrong step of the project drew an
  error holding it in a rollout whose task text does not. A word of one task's text
  that reached a name through a template (an echoed name or city) would still fail.
"""

from __future__ import annotations

import re

import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from analysis.clustering import project_misbehaviours_refresh
from analysis.core.naming import PHRASES
from analysis.models import Misbehaviour, WrongStepMembership
from ingest.models import Trajectory
from tests.conftest import SHARED_DATA, ingest_file, shared_file

pytestmark = pytest.mark.django_db

RARE_SHARE = 0.05
FIXED_WORDING = {
    word.lower()
    for phrases in PHRASES.values()
    for phrase in phrases
    for word in re.findall(r"[A-Za-z']+", phrase)
}
# A name's words are its tokens; a tool name (snake_case) stays one word, as the user reads it.
_NAME_WORD = re.compile(r"[A-Za-z0-9_']+")
_TASK_WORD = re.compile(r"[A-Za-z0-9_']+")


def _words(text: str, pattern: re.Pattern[str]) -> set[str]:
    found = set()
    for token in pattern.findall(text or ""):
        token = token.lower().strip("'_")
        if token:
            found.add(token)
            found.update(part for part in token.split("_") if part)
    return found


def task_entities_in_names(project) -> dict[int, set[str]]:
    """Misbehaviour id -> the words of its name that are rare task words of one of its
    members' tasks (the literal check)."""
    task_texts = dict(Trajectory.objects.filter(project=project).values_list("id", "task_text"))
    distinct = {text for text in task_texts.values() if text}
    frequency: dict[str, int] = {}
    for text in distinct:
        for word in _words(text, _TASK_WORD):
            frequency[word] = frequency.get(word, 0) + 1
    limit = RARE_SHARE * len(distinct)
    found: dict[str, set[str]] = {}
    for misbehaviour in Misbehaviour.objects.filter(project=project, is_active=True):
        rollouts = set(
            WrongStepMembership.objects.filter(misbehaviour=misbehaviour).values_list(
                "step__trajectory_id", flat=True
            )
        )
        member_words = set().union(*(_words(task_texts[r], _TASK_WORD) for r in rollouts))
        name_words = {
            token.lower() for token in _NAME_WORD.findall(misbehaviour.name) if len(token) > 1
        }
        rare = {
            word for word in name_words if word in member_words and frequency.get(word, 0) < limit
        }
        if rare:
            found[misbehaviour.pk] = rare
    return found


def environment_words(project) -> set[str]:
    """Words of errors the project's wrong steps drew in rollouts whose task never says them."""
    found: set[str] = set()
    rows = WrongStepMembership.objects.filter(project=project).exclude(error="")
    for error, task_text in rows.values_list("error", "step__trajectory__task_text"):
        found |= _words(error, _NAME_WORD) - _words(task_text, _TASK_WORD)
    return found


def unexplained(
    misbehaviour: Misbehaviour, words: set[str], from_environment: set[str]
) -> set[str]:
    template = _words(misbehaviour.template, _NAME_WORD)
    return {
        word
        for word in words
        if word not in FIXED_WORDING
        and word not in ENGLISH_STOP_WORDS
        and not (word in template and word in from_environment)
    }


# The demo's files (dashboard/management/commands/demo_setup.py DEMO_FILES).
DEMO_FILES = (
    "who_and_when/Who&When/Algorithm-Generated/*.json",
    "who_and_when/Who&When/Hand-Crafted/*.json",
    "tau_bench/historical_trajectories/gpt-4o-airline.json",
)


@pytest.fixture
def full_demo_project(project):
    shared_file("who_and_when/Who&When")
    shared_file("tau_bench/historical_trajectories/gpt-4o-airline.json")
    for pattern in DEMO_FILES:
        paths = sorted(SHARED_DATA.glob(pattern), key=lambda p: (len(p.stem), p.stem))
        for path in paths:
            ingest_file(project, path, name=f"{path.parent.name}-{path.name}")
    return project


def test_it_names_no_task_entity_on_the_demo_data(full_demo_project):
    project_misbehaviours_refresh(project_id=full_demo_project.pk)
    assert Misbehaviour.objects.filter(project=full_demo_project, is_active=True).count() >= 3
    from_environment = environment_words(full_demo_project)
    left = {}
    for pk, words in task_entities_in_names(full_demo_project).items():
        misbehaviour = Misbehaviour.objects.get(pk=pk)
        if unexplained(misbehaviour, words, from_environment):
            left[misbehaviour.name] = unexplained(misbehaviour, words, from_environment)
    assert left == {}
