"""Table upkeep after uploads: VACUUM ANALYZE on PostgreSQL, nothing on SQLite."""

from __future__ import annotations

import json

import pytest
from django.db import connection, transaction

from ingest.maintenance import tables_tidy
from tests.conftest import ingest_bytes

ROLLOUT = {
    "id": "r1",
    "outcome": "failure",
    "steps": [{"role": "user", "content": "book"}, {"role": "assistant", "content": "done"}],
}


@pytest.mark.django_db(transaction=True)
def test_it_vacuums_the_rollout_tables_on_postgresql_and_skips_sqlite(project):
    ingest_bytes(project, (json.dumps(ROLLOUT) + "\n").encode(), "one.jsonl")
    tidied = tables_tidy()
    if connection.vendor != "postgresql":
        assert tidied == []
        return
    assert tidied == ["ingest_trajectory", "ingest_label"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT relname, last_vacuum IS NOT NULL, last_analyze IS NOT NULL "
            "FROM pg_stat_user_tables WHERE relname IN ('ingest_trajectory', 'ingest_label') "
            "ORDER BY relname"
        )
        assert cursor.fetchall() == [
            ("ingest_label", True, True),
            ("ingest_trajectory", True, True),
        ]


@pytest.mark.django_db(transaction=True)
def test_it_does_nothing_inside_a_transaction(project):
    with transaction.atomic():
        assert tables_tidy() == []
