"""decisive_label_rows is decisive_labels as a query: the same one label per rollout."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from ingest.core.records import LabelSource
from ingest.models import Label
from ingest.selectors import decisive_label_rows, decisive_labels
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def test_it_picks_the_same_label_as_decisive_labels(project):
    rng = random.Random(7)
    upload = make_upload(project)
    now = timezone.now()
    for n in range(30):
        rollout = make_rollout(project, upload=upload, length=8, label=False)
        for _ in range(rng.randint(0, 4)):
            Label.objects.create(
                trajectory=rollout,
                step_index=rng.randint(0, 9),  # 8 and 9 lie past the end: not usable
                source=rng.choice(LabelSource.ALL),
                created_at=now - timedelta(minutes=rng.choice([0, 1, 2])),
            )
    labels = Label.objects.filter(trajectory__project=project)
    expected = {r: label.pk for r, label in decisive_labels(labels).items()}
    rows = decisive_label_rows(labels)
    assert {label.trajectory_id: label.pk for label in rows} == expected
    assert rows.count() == len(expected) > 10
    assert len(expected) < labels.values("trajectory").distinct().count()  # some unusable
