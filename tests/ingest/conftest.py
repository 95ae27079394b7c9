"""Fixtures for the ingest core and parser tests: no Django, no database."""

from __future__ import annotations

import pytest

from ingest.parsers.base import ParseLimits


@pytest.fixture
def small_limits() -> ParseLimits:
    """Limits small enough that oversized inputs fail after reading a few megabytes."""
    return ParseLimits(
        max_document_bytes=4 * 1024 * 1024,
        max_line_bytes=4 * 1024 * 1024,
        max_archive_bytes=1024 * 1024,
        max_archive_members=20,
    )
