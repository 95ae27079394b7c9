"""The overview's cards (rollouts, failed, succeeded, labelled and of them by a rule only), read from the counters the
pipeline stores (pipeline.overview_counts); the overview request never counts the project.

Counting a 50k-rollout project took about 50 ms (117 ms under load), most of it the
labelled rollouts, and under a live OTLP stream a rollout newer than the stored cards
existed at nearly every request. The counters now move when live rollouts are assembled
and when an upload finishes, so the cards hold every rollout but those written in the last
moment; those are counted alone (one range on the (project, id) index, as many rows as
there are newer rollouts) and the page says that the cards lag by them. A late outcome or a
new label shows once the refresh it starts has run, like the overview's charts.

Only a project with no stored counters at all (ingested before any refresh or counted
upload) is counted in the request: its counts are then those of the few rollouts waiting
for their first analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ingest.models import Trajectory
from ingest.selectors import latest_rollout_id, project_counts
from pipeline.models import ProjectOverview
from projects.models import Project

# "labelled_by_rule": the labelled rollouts whose every label a rule derived (gold actions, a
# successful sibling), so the card can say how many of its labels nobody gave.
CARD_KEYS = ("rollouts", "failed", "succeeded", "labelled", "labelled_by_rule")

MSG_CARDS_LAG = "Counts as of {time} UTC; {count} newer rollout{plural} {verb} being analysed."


@dataclass(frozen=True)
class OverviewCards:
    """The cards' counts, when they were stored, and how many rollouts came since."""

    counts: dict[str, int]
    as_of: datetime | None = None
    newer: int = 0

    @property
    def lag_message(self) -> str:
        """What the page says when the cards do not hold every rollout yet ("" when they do).

        Example:
            >>> from datetime import datetime
            >>> cards = OverviewCards(dict.fromkeys(CARD_KEYS, 0), datetime(2026, 1, 1, 9, 5), 2)
            >>> cards.lag_message
            'Counts as of 09:05 UTC; 2 newer rollouts are being analysed.'
        """
        if not self.newer or self.as_of is None:
            return ""
        return MSG_CARDS_LAG.format(
            time=self.as_of.strftime("%H:%M"),
            count=f"{self.newer:,}",
            plural="" if self.newer == 1 else "s",
            verb="is" if self.newer == 1 else "are",
        )


def _stored(project: Project) -> tuple[dict[str, object], datetime] | None:
    row = (
        ProjectOverview.objects.filter(project=project)
        .values_list("data__cards", "computed_at")
        .first()
    )
    if row is None:
        return None
    cards, computed_at = row
    if not isinstance(cards, dict) or not all(isinstance(cards.get(k), int) for k in CARD_KEYS):
        return None
    return cards, computed_at


def overview_cards_state(*, project: Project) -> OverviewCards:
    """The stored cards and the rollouts stored since they were counted."""
    stored = _stored(project)
    if stored is None:
        return OverviewCards(project_counts(project=project))
    cards, computed_at = stored
    counts = {key: int(cards[key]) for key in CARD_KEYS}  # type: ignore[call-overload]
    held = cards.get("last_rollout")
    held_id = held if isinstance(held, int) else None
    if held_id == latest_rollout_id(project_id=project.pk):
        return OverviewCards(counts, computed_at)
    if counts["rollouts"] == 0:
        # Every rollout is newer: counting them is counting only what is new.
        return OverviewCards(project_counts(project=project))
    newer = Trajectory.objects.filter(project=project, pk__gt=held_id or 0).count()
    return OverviewCards(counts, computed_at, newer)


def overview_cards(*, project: Project) -> dict[str, int]:
    """The project's counts as the cards show them (the API's project counts too)."""
    return overview_cards_state(project=project).counts
