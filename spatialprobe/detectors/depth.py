"""From what depth models predict to the depth the size and height rules need.

Relative monocular depth models (MiDaS/DPT, Depth Anything's relative checkpoints) predict
**affine-invariant inverse depth** ("disparity"): ``d = s / z + t`` with unknown scale ``s > 0``
and shift ``t``; larger means *nearer*. The rules multiply box sizes by depth ``z`` (area x z^2,
height x z), so disparity must be inverted, never used as it is: using it directly would rank a
near object as "far" and reverse every size comparison between objects at different distances.

:func:`to_depth` computes ``z = 1 / max(d - shift, eps)``. The unknown scale ``s`` multiplies
every depth in an image by the same factor and cancels in both rules' comparisons; the shift does
not cancel, so it is a parameter (default 0, i.e. the model's output taken as pure inverse
depth), recorded in the run configuration. Metric models (``depth_estimation_type == "metric"``
in the config, e.g. Depth Anything metric checkpoints, ZoeDepth) already predict depth and pass
through unchanged.
"""

from __future__ import annotations

import numpy as np

from spatialprobe.errors import UsageError

PREDICTS = ("disparity", "depth")


def to_depth(prediction: np.ndarray, predicts: str, *, shift: float = 0.0, eps: float = 1e-6
             ) -> np.ndarray:
    """Depth (larger = farther) from a model's raw prediction of kind ``predicts``."""
    prediction = np.asarray(prediction, dtype=np.float64)
    if predicts == "depth":
        return prediction
    if predicts == "disparity":
        return 1.0 / np.maximum(prediction - shift, eps)
    raise UsageError(f"predicts must be one of {PREDICTS}, got {predicts!r}")


def predicts_of_config(config) -> str:
    """What a transformers depth model predicts, from its config: metric models give depth."""
    kind = getattr(config, "depth_estimation_type", None)
    return "depth" if kind == "metric" else "disparity"
