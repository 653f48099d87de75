"""VISOR's position rule (Gokhale et al.): the sign of the centroid difference of two boxes.

The rule as a judge of ``posrel`` and ``posrel2d`` images; VISOR's own run (object accuracy,
VISOR, VISOR_n over SR2D prompts) is :mod:`spatialprobe.judging.visor`. It is VISOR's code in both
modes (``tests/test_judge_visor.py``) and has no thresholds.
"""

from __future__ import annotations

from spatialprobe.detectors import rules
from spatialprobe.judging.rulebook.record import JudgeRule, Mode

SIGN = Mode(rules.visor_judge, follows="microsoft/VISOR (centroid sign over any pair of boxes)")
VISOR = JudgeRule(name="visor", tasks=("posrel", "posrel2d"), corrected=SIGN, reference=SIGN)
"""``beside`` holds as left of or right of; ``inside`` never does."""
