"""Issue 12's name check on the demo data: no misbehaviour name carries a task entity.

The product runs through the Django side (ingest, gather with signals, full clustering,
the profile refresh from the stored rows) on the demo project's files: every Who&When run
(both subsets) and the 200 tau-bench airline rollouts, as ``make run`` loads them.

The issue's check, literally: no misbehaviour name contains a word that occurs in fewer
than 5% of the project's task texts but in the task text of one of its members. No word
is excused, not even the product's fixed wording or an error template's words.
"""

from __future__ import annotations

import re

import pytest

from analysis.clustering import project_misbehaviours_refresh
from analysis.models import Misbehaviour, WrongStepMembership
from ingest.models import Trajectory
from tests.conftest import SHARED_DATA, ingest_file, shared_file

pytestmark = pytest.mark.django_db

RARE_SHARE = 0.05
# A name's words are its tokens; a tool name (snake_case) stays one word, as the user reads it.
_NAME_WORD = re.compile(r"[A-Za-z0-9_']+")
_TASK_WORD = re.compile(r"[A-Za-z0-9_']+")
# "verify, number, data" or "WebSurfer message: page, screenshot": what names used to be.
WORD_LIST = re.compile(r"(?:[^,:]*: )?[\w'-]+(?:, [\w'-]+)+")


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
    flagged = task_entities_in_names(full_demo_project)
    assert {Misbehaviour.objects.get(pk=pk).name: words for pk, words in flagged.items()} == {}


def test_it_names_every_misbehaviour_with_a_sentence_not_a_word_list(full_demo_project):
    project_misbehaviours_refresh(project_id=full_demo_project.pk)
    names = list(
        Misbehaviour.objects.filter(project=full_demo_project, is_active=True).values_list(
            "name", flat=True
        )
    )
    assert names
    word_lists = [name for name in names if WORD_LIST.fullmatch(name) or ": " in name]
    assert word_lists == []
    assert all(name[:1].isupper() and len(name.split()) >= 2 for name in names), names


def test_it_gives_no_two_misbehaviours_the_same_name_on_the_demo_data(full_demo_project):
    project_misbehaviours_refresh(project_id=full_demo_project.pk)
    names = list(
        Misbehaviour.objects.filter(project=full_demo_project, is_active=True).values_list(
            "name", flat=True
        )
    )
    assert len(names) >= 3
    assert sorted(name for name in set(names) if names.count(name) > 1) == []
