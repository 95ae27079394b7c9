"""The overview's cards (rollouts, failed, succeeded, labelled), read from the overview the
refresh stored (pipeline.overview, pipeline.overview_counts) while no rollout arrived since, else counted now.

Counting a 50k-rollout project on each overview request (and for the API's project) took
about 50 ms, most of it the labelled rollouts; the stored counts cost one small read and
one index seek. Like the overview's charts, they are as of the last refresh: a late
outcome or a new label shows once the refresh it starts has run.
"""

from __future__ import annotations

from ingest.selectors import latest_rollout_id, project_counts
from pipeline.models import ProjectOverview
from projects.models import Project

CARD_KEYS = ("rollouts", "failed", "succeeded", "labelled")


def overview_cards(*, project: Project) -> dict[str, int]:
    """The project's counts, stored when they still hold every rollout, else counted."""
    stored = (
        ProjectOverview.objects.filter(project=project)
        .values_list("data__cards", flat=True)
        .first()
    )
    if (
        isinstance(stored, dict)
        and all(isinstance(stored.get(key), int) for key in CARD_KEYS)
        and stored.get("last_rollout") == latest_rollout_id(project_id=project.pk)
    ):
        return {key: int(stored[key]) for key in CARD_KEYS}
    return project_counts(project=project)
