"""Engine-generated robustness variants of any source's items (``--protocol-variants``).

A benchmark may declare its own variant groups (:attr:`spatialprobe.benchmarks.base.Source.variants`:
What'sUp's pairs and sets, 3DSRBench's flips, COMFORT's sweeps); these two the engine makes for
any source whose questions letter their options:

* ``circular`` - every rotation of the options (item keys ``KEY~c1`` .. ``KEY~c{n-1}``); each
  option keeps its label, so the gold letter follows the gold option. The group (row field
  ``circular``) is the original item's key: right only if every rotation is.
* ``swap`` - left <-> right, above <-> below, over <-> under, in front of <-> behind, top <->
  bottom, upper <-> lower swapped in the question and its options (key ``KEY~swap``). Only an item
  whose options are relation words that the swap permutes among themselves is swapped: the fact
  in its image is unchanged, so its gold label is, and the gold letter moves to the option that
  now names it. An item without such options is skipped, and counted (``details``).

Generated items carry the row field ``engine_variant`` (``circular 1``, ``swap``); the headline metrics
are those of the items without it, so a run's accuracy does not change with its variants. The
variants asked are part of the source's settings (``protocol_variants``), hence of the run's
identity, and a replay makes the same items again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from spatialprobe.benchmarks.base import Source, SourceItem, Wording
from spatialprobe.errors import UsageError
from spatialprobe.records import VARIANT

ENGINE = ("circular", "swap")
"""The variants the engine generates for any source."""
LETTERINGS = ("{letter}. {option}", "({letter}) {option}", "{letter}) {option}")
"""How a question may letter its options, one per line."""
SWAPS = (("left", "right"), ("above", "below"), ("over", "under"), ("in front of", "behind"),
         ("top", "bottom"), ("upper", "lower"))
"""The relation words ``swap`` exchanges, both ways."""
MARK = VARIANT
"""The row field that marks a generated item (its protocol and rotation)."""


def parse_variants(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``circular,swap`` -> ("circular", "swap"); one sentence for a name the engine does not make."""
    if not text:
        return ()
    names = [n.strip() for part in ([text] if isinstance(text, str) else text) for n in part.split(",")]
    unknown = [n for n in names if n not in ENGINE]
    if unknown:
        raise UsageError(f"--protocol-variants {unknown[0]!r} is no variant the engine generates; it makes "
                         f"{', '.join(ENGINE)} (a benchmark's own groups are reported without asking).")
    return tuple(dict.fromkeys(names))


def with_variants(source: Source, names: Iterable[str]) -> Source:
    """``source`` with the generated items of each variant in ``names`` added after its own, the
    variant's group field declared and the names recorded in its settings; refused in one sentence
    where a variant does not apply (no lettered options, a source that declares it itself)."""
    names = parse_variants(list(names))
    if not names:
        return source
    items, declared, counts = list(source.items), dict(source.variants), {}
    for name in names:
        if name in source.variants:
            raise UsageError(f"{source.name} declares {name} itself (its data holds the variants, grouped by "
                             f"{source.variants[name]!r}): drop {name} from --protocol-variants.")
        made, skipped = (_circular if name == "circular" else _swap)(source)
        keys = {item.key for item in made}
        items = [replace(i, fields={**i.fields, name: i.key}) if i.key in _bases(keys) else i for i in items]
        items += made
        declared[name] = name
        counts[name] = {"generated": len(made), "skipped": skipped}
    settings = {**source.settings, "protocol_variants": list(names)}
    details = {**source.details, "protocol_variants": counts}
    return replace(source, items=tuple(items), variants=declared, settings=settings, details=details)


def _bases(keys: Iterable[str]) -> set[str]:
    return {key.rsplit("~", 1)[0] for key in keys}


def lettered(item: SourceItem) -> tuple[str, str] | None:
    """(the lettering, the block of lettered options) as the item's question writes them, or None."""
    for form in LETTERINGS:
        block = "\n".join(form.format(letter=chr(65 + n), option=o) for n, o in enumerate(item.options))
        if block in item.question:
            return form, block
    return None


def _circular(source: Source) -> tuple[list[SourceItem], int]:
    """Every rotation of every item's options; refused where an item's question letters none."""
    made = []
    for item in source.items:
        found = lettered(item) if len(item.options) > 1 else None
        if found is None:
            raise UsageError(f"circular applies to questions with lettered options (A. ...); {source.name} item "
                             f"{item.key!r} has none (a yes/no or free-answer source has no order to rotate).")
        form, block = found
        for r in range(1, len(item.options)):
            order = [*range(r, len(item.options)), *range(r)]
            options = tuple(item.options[i] for i in order)
            rotated = "\n".join(form.format(letter=chr(65 + n), option=o) for n, o in enumerate(options))
            made.append(replace(item, key=f"{item.key}~c{r}", question=item.question.replace(block, rotated),
                                options=options, labels=tuple(item.labels[i] for i in order),
                                fields={**item.fields, "circular": item.key, MARK: f"circular {r}"},
                                wordings={name: _reordered(w, order) for name, w in item.wordings.items()}))
    return made, 0


def _reordered(wording: Wording, order: Sequence[int]) -> Wording:
    """A wording's options and labels in ``order`` (its prompt names no letters)."""
    if len(wording.options) != len(order):
        return wording
    return replace(wording, options=tuple(wording.options[i] for i in order),
                   labels=tuple(wording.labels[i] for i in order))


_SWAP = {**dict(SWAPS), **{b: a for a, b in SWAPS}}
_PATTERN = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _SWAP), key=len, reverse=True)) + r")\b",
                      re.IGNORECASE)


def swapped(text: str) -> str:
    """``text`` with every relation word of :data:`SWAPS` exchanged for its opposite (case kept)."""
    def other(match: re.Match[str]) -> str:
        word = match.group(0)
        out = _SWAP[word.lower()]
        return out.capitalize() if word[0].isupper() else out

    return _PATTERN.sub(other, text)


def _swap(source: Source) -> tuple[list[SourceItem], int]:
    """The swapped items: those whose options the swap permutes among themselves; (made, skipped)."""
    made, skipped = [], 0
    for item in source.items:
        options = tuple(swapped(o) for o in item.options)
        if lettered(item) is None or options == item.options or sorted(options) != sorted(item.options):
            skipped += 1
            continue
        meaning = dict(zip(item.options, item.labels, strict=True))
        others = {name: _swapped_wording(w) for name, w in item.wordings.items()}
        made.append(replace(item, key=f"{item.key}~swap", question=swapped(item.question), options=options,
                            labels=tuple(meaning[o] for o in options), wordings=others,
                            fields={**item.fields, "swap": item.key, MARK: "swap"}))
    if not made:
        raise UsageError(f"swap applies to items whose lettered options are relation words (left/right, above/below, "
                         f"...); none of {source.name}'s {len(source.items)} items has such options.")
    return made, skipped


def _swapped_wording(wording: Wording) -> Wording:
    """A further wording swapped likewise where the swap permutes its options; else as it is."""
    options = tuple(swapped(o) for o in wording.options)
    if sorted(options) != sorted(wording.options):
        return wording
    meaning = dict(zip(wording.options, wording.labels, strict=True))
    return replace(wording, prompt=swapped(wording.prompt), options=options, suffix=swapped(wording.suffix),
                   passage=swapped(wording.passage), labels=tuple(meaning[o] for o in options))


def generated(row_or_item: Any) -> bool:
    """Whether a row (or item) is an engine-generated variant, not one of the source's own."""
    fields = row_or_item.fields if isinstance(row_or_item, SourceItem) else row_or_item
    return bool(fields.get(MARK))
