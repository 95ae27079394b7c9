"""Rows into PostgreSQL by binary COPY: the one way the bulk writers reach the server.

Binary COPY sends each value in its type's wire form: no escaping of text and bytea on
the client (text COPY spent about 5 us per span row doing it, binary about 1) and no
parsing on the server. It needs each column's type, read once per table and columns
from the catalog. JSON columns take the JSON text the writers already made (as
the ORM stores it): ``JsonTextBinaryDumper`` sends it as jsonb's wire form, a version
byte then the text, where psycopg's own jsonb dumper would encode a Python object
again (and a str as a JSON string).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from psycopg import postgres
from psycopg.adapt import Dumper
from psycopg.pq import Format

JSONB_VERSION = b"\x01"
_types: dict[tuple[str, tuple[str, ...]], list[str]] = {}


class JsonTextBinaryDumper(Dumper):
    """JSON text (a str) as jsonb's binary form."""

    format = Format.BINARY
    oid = postgres.types["jsonb"].oid

    def dump(self, obj: Any) -> bytes:
        return JSONB_VERSION + obj.encode()


def _column_types(cursor: Any, table: str, columns: Sequence[str]) -> list[str]:
    key = (table, tuple(columns))
    if key not in _types:
        cursor.execute(
            "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped",
            [table],
        )
        names = dict(cursor.fetchall())
        _types[key] = [names[column] for column in columns]
    return _types[key]


def copy_rows(
    cursor: Any, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """COPY rows (plain tuples in ``columns`` order; JSON columns as JSON text, datetimes
    as aware datetimes) into ``table`` through a Django cursor on PostgreSQL. ``table`` is
    a plain name (a temporary table too) that the catalog knows. The driver's errors come
    out as Django's (a duplicate key is an IntegrityError), as from ``cursor.execute``."""
    with cursor.db.wrap_database_errors:
        raw = cursor.cursor  # the psycopg cursor under Django's wrapper
        types = _column_types(raw, table, columns)
        if "jsonb" in types:
            # By type only (psycopg's documented use for COPY with set_types), on this cursor.
            raw.adapters.register_dumper(None, JsonTextBinaryDumper)
        quoted = ", ".join(f'"{column}"' for column in columns)
        with raw.copy(f'COPY "{table}" ({quoted}) FROM STDIN (FORMAT BINARY)') as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)
