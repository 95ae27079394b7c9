"""Another nested family of contiguous sets, measured beside the product's tails.

The product's two-sided sets cut equal-mass tails (``attribution.core.conformal``). A
natural rival grows one interval outward from the most probable step, always taking the
more probable of its two neighbours next: for a single-peaked distribution it is the
shortest interval holding a given mass. The nonconformity score of a step is the mass
already inside when the step joins, so the most probable step scores 0 and no set is
empty. Split conformal calibration applies unchanged (any nested family of sets is
valid); which family removes more at the same coverage is an empirical question, which the
evaluation answers on the same splits. It lives here, not in the core, until it wins.

Worked example: p = [0.1, 0.6, 0.3] joins step 1 (score 0), then step 2 (0.6), then step 0
(0.9).

    >>> mode_outward_scores([0.1, 0.6, 0.3]).round(2).tolist()
    [0.9, 0.0, 0.6]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from attribution.core.conformal import normalise

MODE_OUTWARD = "mode_outward"


def mode_outward_scores(probabilities: ArrayLike) -> NDArray[np.float64]:
    """Per step, the mass inside the growing interval just before that step joins it."""
    p = normalise(probabilities)
    n = p.size
    scores = np.zeros(n)
    if n == 0:
        return scores
    lo = hi = int(np.argmax(p))
    mass = float(p[lo])
    while hi - lo + 1 < n:
        left = p[lo - 1] if lo > 0 else -1.0
        right = p[hi + 1] if hi < n - 1 else -1.0
        if left >= right:  # ties go left: an earlier rollback point
            lo -= 1
            step = lo
        else:
            hi += 1
            step = hi
        scores[step] = mass
        mass += float(p[step])
    return scores
