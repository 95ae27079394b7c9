"""Table upkeep after bulk writes.

Rows written by COPY carry no visibility hints, so until the table is vacuumed every
scan checks each row's transaction again: on 50k rollouts a broad search of the rollouts
list took 235 ms right after the load and 85 ms after a VACUUM that itself took 0.08 s.
Autovacuum gets there eventually; the project refresh that follows uploads does it at
once, for the tables the list pages scan.
"""

from __future__ import annotations

from django.db import connection

from ingest.models import Label, Trajectory

TIDIED_MODELS = (Trajectory, Label)


def tables_tidy() -> list[str]:
    """VACUUM (ANALYZE) the rollout and label tables on PostgreSQL; the names it tidied.

    Does nothing on SQLite, and nothing inside a transaction (VACUUM cannot run there).
    """
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return []
    tables = [model._meta.db_table for model in TIDIED_MODELS]
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(table)}")
    return tables
