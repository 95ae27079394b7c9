"""Offline evaluation of the misbehaviour clustering against a labelled development set.

Beside the pure core, not inside it: nothing here runs in the product. ``devset`` loads
the committed labels, ``metrics`` scores a partition against them, ``baselines`` and
``product`` produce partitions, and ``clustering_report`` runs them all (README.md).
"""
