from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created


class IngestConfig(AppConfig):
    name = "ingest"
    verbose_name = "Ingestion"

    def ready(self) -> None:
        connection_created.connect(_sqlite_functions, dispatch_uid="ingest.sqlite_functions")


def _sqlite_functions(sender: Any, connection: Any, **_: Any) -> None:
    """The functions the searches need on SQLite (``ingest.lookups``)."""
    if connection.vendor == "sqlite":
        from ingest.lookups import SQLITE_HOLDS_FOLDED, holds_folded

        connection.connection.create_function(
            SQLITE_HOLDS_FOLDED, 3, holds_folded, deterministic=True
        )
