"""Fitted scorers as versioned bytes, for storage in the database.

The blob is a pickle written by this module only (never load one from a user upload).
The version names the scorer kind, the feature version and a hash of the blob, so two
scorers with the same version string score identically.

Example:
    >>> from attribution.core.scorers.baselines import UniformScorer
    >>> blob = dump_scorer(UniformScorer())
    >>> scorer_version(blob).startswith("uniform-")
    True
    >>> type(load_scorer(blob)).__name__
    'UniformScorer'
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

from attribution.core.scorers.base import StepScorer

FORMAT = "faultline-scorer-1"
MSG_BAD_BLOB = "Not a Faultline scorer blob."


def dump_scorer(scorer: StepScorer) -> bytes:
    payload: dict[str, Any] = {
        "format": FORMAT,
        "kind": scorer.kind,
        "features": getattr(scorer, "feature_version", ""),
        "scorer": scorer,
    }
    return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)


def load_scorer(blob: bytes) -> StepScorer:
    payload = pickle.loads(blob)  # noqa: S301 (our own blobs, written by dump_scorer)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(MSG_BAD_BLOB)
    scorer = payload["scorer"]
    if not isinstance(scorer, StepScorer):
        raise ValueError(MSG_BAD_BLOB)
    return scorer


def scorer_version(blob: bytes) -> str:
    payload = pickle.loads(blob)  # noqa: S301
    features = payload.get("features") or "nofeat"
    return f"{payload['kind']}-{features}-{hashlib.sha256(blob).hexdigest()[:12]}"
