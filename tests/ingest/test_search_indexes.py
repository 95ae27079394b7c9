"""The rollouts search has trigram indexes on PostgreSQL and none on SQLite."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def _trigram_indexes() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'ingest_trajectory' "
                "AND indexdef LIKE '%%gin_trgm_ops%%'"
            )
        else:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%%trgm%%'"
            )
        return {row[0] for row in cursor.fetchall()}


def test_it_indexes_the_searched_columns_where_the_database_can():
    expected = (
        {"traj_task_text_trgm", "traj_external_id_trgm", "traj_task_id_trgm"}
        if connection.vendor == "postgresql"
        else set()
    )
    assert _trigram_indexes() == expected
