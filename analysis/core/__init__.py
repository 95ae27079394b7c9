"""Misbehaviour clustering without Django: step text, embeddings, clustering, naming.

The Django side (``analysis.clustering``) turns database rows into
:class:`analysis.core.steps.WrongStep` records and stores what comes back; everything
here takes and returns dataclasses and numpy arrays so it runs in a notebook or a test
in milliseconds.

Pipeline, as :func:`analysis.core.pipeline.cluster_wrong_steps` runs it::

    texts -> embeddings (cached by content hash) -> PCA to ~10 dims -> HDBSCAN
          -> profiles (name, exemplars, spread, lift) -> identity matching with the last run
"""
