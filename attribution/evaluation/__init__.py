"""Offline evaluation of the attribution core against labelled benchmarks (Who&When).

It sits beside ``attribution.core``, not inside it: the runtime (refresh, pages, exports)
never imports it. Like the core it imports no Django, so a notebook can run it too.

- ``experiments``: grouped cross-validation and random conformal splits, every scorer on
  the same splits, trivial baselines beside;
- ``report``: the Markdown of ``docs/attribution.md`` from the experiments' JSON;
- ``svg``: the dependency-free charts the report embeds.

``manage.py evaluate_attribution`` runs all three.

Example:
    >>> from attribution.evaluation.experiments import split_sizes
    >>> split_sizes(126, 0.4, 0.3, 19)
    (50, 38, 38)
"""
