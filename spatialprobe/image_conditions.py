"""Which image an image-conditioned item is shown: its own, or a blind stand-in.

``--image-condition`` takes one of :data:`CONDITIONS`:

* ``real``: the item's own image;
* ``blank``: a uniform gray image of the same size (the model still gets image tokens);
* ``none``: no image at all (a text-only turn, for models that accept one);
* ``shuffled``: another item's image, chosen with a seeded generator among the items that show
  none of this item's objects, so the stand-in can never answer the question by accident.

The choice of a shuffled partner depends only on the items' keys, their objects and the seed, never
on the order the items come in, so a resumed or distributed run shows every item the same image.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

CONDITIONS = ("real", "blank", "none", "shuffled")
BLIND = ("blank", "none", "shuffled")
"""The conditions that hide the item's own image."""


def check_condition(condition: str) -> str:
    if condition not in CONDITIONS:
        from spatialprobe.errors import UsageError

        raise UsageError(f"--image-condition must be one of {', '.join(CONDITIONS)}, not {condition!r}.")
    return condition


def _rank(seed: int, key: str, other: str) -> str:
    return hashlib.sha256(f"{seed}\0{key}\0{other}".encode()).hexdigest()


def shuffled_partners(objects: Mapping[str, Sequence[str]], seed: int = 0) -> dict[str, str]:
    """For each item key, the key of the item whose image it is shown under ``shuffled``.

    ``objects`` maps every item key to the objects (or COCO classes) its image shows. The
    partner of ``k`` is, among the items sharing none of ``k``'s objects, the one ranked first by
    a seeded hash of (seed, k, candidate): deterministic, order-free, and different per seed.
    An item that shares an object with every other item has no partner: that is an error, since
    the blind condition would leak the answer."""
    names = {key: frozenset(str(o).casefold() for o in objs) for key, objs in objects.items()}
    partners = {}
    for key, mine in names.items():
        candidates = [other for other, theirs in names.items() if other != key and not (mine & theirs)]
        if not candidates:
            from spatialprobe.errors import UsageError

            raise UsageError(f"item {key!r} shares an object with every other item, so no other item's "
                             "image can stand in for it under --image-condition shuffled; use blank or none.")
        ranks = {other: _rank(seed, key, other) for other in candidates}
        partners[key] = min(candidates, key=ranks.__getitem__)
    return partners
