"""Pure attribution core: step scorers, conformal prediction sets, rollback points.

Nothing under this package imports Django; it takes trajectory records (anything with
``steps``, ``task_text``, ``environment`` and ``agent_system`` attributes, such as
``ingest.core.records.TrajectoryRecord``) and returns dataclasses and numpy arrays.

Example:
    >>> from attribution.core.conformal import prediction_set
    >>> prediction_set([0.1, 0.6, 0.3], tau=0.35)
    (1, 1)
"""
