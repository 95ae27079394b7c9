"""Pure-Python ingestion core: trace records, parse errors and format detection.

Nothing in this package imports Django, so parsers can be used from a notebook
and tested in milliseconds.
"""
