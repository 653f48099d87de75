"""A benchmark's items checked against themselves (``spatialprobe audit data``): what a test set's
own file gets wrong, found without any model.

* **Conflicting duplicates**: items whose question is the same once normalised (case, punctuation,
  spacing and articles ignored: :func:`normalise`) with the same options (as a set of texts) but
  another gold (read as the gold option's text, so a reordering of the options is no conflict):
  on the *same* image (or none) a contradiction; on *different* images listed apart, to be checked
  (the answer may differ with the image). Exact duplicates (same image, question and gold) are
  counted too.
* **Wrong answers**: a gold that is none of the item's labels (outside the options); a gold of the
  wrong type - an item without options (a numeric answer) whose gold reads as no number, or, in a
  group (``question_type``, ``category``, ...) whose golds are mostly numbers, a gold that is not
  one (the counting answers written "Yes"/"No"); a gold that names an option is typed by its text.
* **Repeated options**: an item two of whose options are the same text once normalised.
* **Images**: an item's image that is not on disk (embedded images are never missing), and images
  shared between the audited items and another split's (a training split).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks.base import SourceItem

GROUP_FIELDS = ("question_type", "category", "subcategory", "type", "task", "sub_task", "relation")
"""Item fields whose groups the wrong-type check compares golds within, where an item has them."""
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalise(text: str) -> str:
    """Text compared as a reader would: case, punctuation, spacing and articles ignored."""
    text = re.sub(r"[^\w\s]", " ", str(text).casefold())
    return " ".join(_ARTICLES.sub(" ", text).split())


def _stem(item: SourceItem) -> str:
    """The question without the options a wording lists after it (``A. left``, one a line)."""
    lines = [line for line in item.question.splitlines() if not re.match(r"^\s*\(?[A-Z][.)]\s", line)]
    return normalise(" ".join(lines))


def gold_text(item: SourceItem) -> str:
    """The gold as its option's text (normalised), or as written where it names no option."""
    if item.gold in item.labels and item.options:
        return normalise(item.options[item.labels.index(item.gold)])
    return normalise(item.gold)


def conflicting_duplicates(items: Sequence[SourceItem]) -> dict[str, Any]:
    """Groups of items asking the same question with the same options: those with more than one
    gold, on the same image and on different images, and the exact duplicates."""
    groups: dict[tuple[str, frozenset[str]], list[SourceItem]] = defaultdict(list)
    for item in items:
        groups[(_stem(item), frozenset(normalise(o) for o in item.options))].append(item)
    same, different, exact = [], [], 0
    for (question, _), members in groups.items():
        if len(members) < 2:
            continue
        by_image: dict[str | None, list[SourceItem]] = defaultdict(list)
        for item in members:
            by_image[image_of(item)].append(item)
        for shown in by_image.values():
            exact += len(shown) - len({gold_text(i) for i in shown})
            if len({gold_text(i) for i in shown}) > 1:
                same.append(_group(question, shown))
        if len({gold_text(i) for i in members}) > 1 and len(by_image) > 1:
            different.append(_group(question, members))
    return {"same_image": same, "different_images": different, "exact_duplicates": exact}


def _group(question: str, members: Sequence[SourceItem]) -> dict[str, Any]:
    return {"question": question, "items": [{"key": i.key, "image": image_of(i), "gold": i.gold,
                                             "gold_text": gold_text(i)} for i in members]}


def is_number(value: Any) -> bool:
    try:
        float(str(value).replace(",", ""))
        return True
    except ValueError:
        return False


def wrong_answers(items: Sequence[SourceItem]) -> dict[str, list[dict[str, Any]]]:
    """Golds outside the options, and golds of the wrong type (see the module)."""
    outside = [{"key": i.key, "gold": i.gold, "labels": list(i.labels)} for i in items
               if i.options and i.gold not in i.labels]
    wrong = [{"key": i.key, "gold": i.gold, "expected": "a number", "why": "the item has no options"}
             for i in items if not i.options and not is_number(i.gold)]
    flagged = {w["key"] for w in wrong}
    for field, group, members in _groups(items):
        numbers = [is_number(gold_text(i)) for i in members]  # an option's text where the gold names one
        if sum(numbers) * 2 > len(members):  # mostly numbers: the rest are of the wrong type
            wrong += [{"key": i.key, "gold": i.gold, "expected": "a number",
                       "why": f"{sum(numbers)} of {len(members)} golds of {field} {group!r} are numbers"}
                      for i, n in zip(members, numbers, strict=True) if not n and i.key not in flagged]
            flagged |= {w["key"] for w in wrong}
    return {"outside_options": outside, "wrong_type": wrong}


def _groups(items: Sequence[SourceItem]) -> Iterable[tuple[str, Any, list[SourceItem]]]:
    for field in GROUP_FIELDS:
        grouped: dict[Any, list[SourceItem]] = defaultdict(list)
        for item in items:
            if item.fields.get(field) not in (None, ""):
                grouped[item.fields[field]].append(item)
        for group, members in grouped.items():
            yield field, group, members


def repeated_options(items: Sequence[SourceItem]) -> list[dict[str, Any]]:
    """Items two of whose options read the same once normalised."""
    out = []
    for item in items:
        counts = Counter(normalise(o) for o in item.options)
        twice = sorted(text for text, n in counts.items() if n > 1)
        if twice:
            out.append({"key": item.key, "repeated": twice, "options": list(item.options)})
    return out


def image_of(item: SourceItem) -> str | None:
    """The item's image: its path, or the name its fields keep where it was read without images."""
    image = item.image or item.fields.get("image")
    return None if image is None else str(image)


def image_paths(item: SourceItem) -> list[str]:
    return [image for image in (image_of(item), *item.views, *item.images) if image]


def missing_images(items: Sequence[SourceItem], resolve: Callable[[str], Path | None]) -> list[dict[str, Any]]:
    """Items whose image does not resolve to a file (``resolve``: name -> path, None for embedded)."""
    out = []
    for item in items:
        for name in image_paths(item):
            path = resolve(name)
            if path is not None and not path.is_file():
                out.append({"key": item.key, "image": name})
    return out


def shared_across_splits(items: Sequence[SourceItem], others: Mapping[str, Sequence[SourceItem]]
                         ) -> dict[str, dict[str, Any]]:
    """Per other split: the audited items whose image (by name) an item of that split shows too."""
    mine = {name: item.key for item in items for name in image_paths(item)}
    out = {}
    for split, other in others.items():
        theirs = {name for item in other for name in image_paths(item)}
        shared = sorted(set(mine) & theirs)
        out[split] = {"images": len(shared), "items": sorted({mine[n] for n in shared}), "examples": shared[:5]}
    return out
