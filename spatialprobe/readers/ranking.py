"""Readers of the options' scores where the authors rank rather than read a reply.

* ``whatsup`` - amitakamath/whatsup_vlms @7c1f255 ``dataset_zoo/aro_datasets.py``
  ``Controlled_Images.evaluate_scores`` (l. 449-518): ``np.argmax`` over the captions' scores in
  the authors' order, whose first caption is the right one, so **a tie that includes the right
  caption is right** (the toolkit may ask the captions in a shuffled order, where the first of equal
  scores is another caption). Among wrong captions tied, the first asked (wrong either way).
* ``comfort`` - sled-group/COMFORT @f30830d ``comfort_utils/accuracy_metric.py`` l. 62-75: P(Yes),
  normalised over yes and no, above 0.5 is yes (exactly 0.5 is no).

Neither benchmark's authors read a generated reply (their models are ranked by likelihood); a
reply to the toolkit's lettered or yes/no wording is read by ``toolkit`` (:mod:`.strict`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from spatialprobe.readers.base import Asked, Reader, Reading, option
from spatialprobe.readers.strict import read_toolkit
from spatialprobe.registry import component


def whatsup_scores(scores: Sequence[float], asked: Asked) -> Reading:
    values = [float(s) for s in scores]
    best = max(values)
    gold = asked.gold_index
    if gold is not None and values[gold] == best:
        tied = values.count(best) > 1
        why = "the right caption scores best" + (" (tied: the authors' first caption)" if tied else "")
        return option(asked, gold, why)
    return option(asked, values.index(best), "another caption scores best")


def p_yes(scores: Sequence[float], asked: Asked) -> float:
    """P(Yes) normalised over the yes and no options' scores (log-likelihoods)."""
    labels = [label.lower() for label in asked.labels]
    yes, no = float(scores[labels.index("yes")]), float(scores[labels.index("no")])
    top = max(yes, no)
    return math.exp(yes - top) / (math.exp(yes - top) + math.exp(no - top))


def comfort_scores(scores: Sequence[float], asked: Asked) -> Reading:
    value = p_yes(scores, asked)
    labels = [label.lower() for label in asked.labels]
    answer = "yes" if value > 0.5 else "no"
    return option(asked, labels.index(answer), f"P(yes) = {value:.3f} {'>' if value > 0.5 else '<='} 0.5")


WHATSUP = component("reader", "whatsup",
                    "What'sUp: the best-scored caption, ties with the right one right")(
    Reader("whatsup", read_toolkit, "amitakamath/whatsup_vlms @7c1f255 dataset_zoo/aro_datasets.py l. 449-518",
           "the best-scored caption, a tie with the right caption right (np.argmax in the authors' order); "
           "a generated reply: toolkit", whatsup_scores))
COMFORT = component("reader", "comfort",
                    "COMFORT: yes where P(yes) > 0.5")(
    Reader("comfort", read_toolkit, "sled-group/COMFORT @f30830d comfort_utils/accuracy_metric.py l. 62-75",
           "yes where P(yes) normalised over yes and no exceeds 0.5; a generated reply: toolkit",
           comfort_scores))
