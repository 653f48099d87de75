"""Generalized positional-relationship scenarios: uncommon persons and objects, same actions.

Each posrel scenario ("A woman lights the sparkler.") has its person and/or object replaced by
subterms from ConceptNet or WordNet ("An enchantress lights the sparkler."). The action and the
gold relation are kept; the article is recomputed for the new person (``a``/``an``) and the
pronoun is inherited from the source scenario (subterms of ``woman`` stay ``She``) unless the
new person's head word says otherwise (``policewoman`` -> She even as a subterm of ``man``).
Scenarios that occur in a reference corpus are dropped, so what remains is, as far as that corpus can
tell, text a language model has not read.

The output is a release-format posrel file (``datasets.load(path)`` reads it like any other)
with optional provenance fields per record: ``source_text``, ``source_obj_a``,
``source_obj_b``. A ``<out>.meta.json`` beside it records the source dataset and version, the
subterm source, the corpus files and the counts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialprobe import tasks
from spatialprobe.errors import UsageError
from spatialprobe.files import write_json, write_jsonl
from spatialprobe.generalize.corpus_filter import filter_phrases, normalize_phrase
from spatialprobe.records import Dataset, Instance
from spatialprobe.store import provenance
from spatialprobe.tasks.levels import capitalize_first, with_article
from spatialprobe.tasks.release import POSREL_CODE_OF, pronoun_for

REPLACE_MODES = ("both", "person", "object")

# Head words that say the person's gender whatever the source word was: IsA edges are noisy
# (a subterm of "man" may be a woman), so these override the pronoun inherited from the source.
_FEMALE_HEADS = {
    "woman", "women", "girl", "lady", "mother", "queen", "actress", "grandmother", "sister",
    "daughter", "wife", "aunt", "niece", "princess", "enchantress", "waitress", "nun", "witch",
    "sorceress", "bride", "goddess", "empress", "duchess", "countess", "heroine", "hostess",
    "stewardess", "widow", "girlfriend", "mom", "mum", "mommy", "maiden", "lass", "ballerina",
    "housewife", "matriarch", "priestess", "mistress", "madam", "granddaughter", "stepmother"}
_MALE_HEADS = {
    "man", "men", "boy", "gentleman", "king", "prince", "father", "son", "brother", "husband",
    "uncle", "nephew", "monk", "wizard", "sorcerer", "groom", "bridegroom", "widower",
    "boyfriend", "dad", "daddy", "lad", "emperor", "duke", "patriarch", "grandfather",
    "grandson", "stepfather", "bachelor", "actor", "waiter", "steward", "hero", "priest"}
_NOT_MALE_MAN = {"human", "shaman", "caiman", "talisman", "ottoman"}


def person_pronoun(person: str, inherited: str = "") -> str:
    """``She``/``He`` for a new person: by its head word when that is gendered, else inherited.

    ``enchantress`` -> She, ``policewoman`` -> She, ``fireman`` -> He, ``archer`` -> the
    source person's pronoun (a subterm of ``woman`` stays She).
    """
    head = person.lower().replace("-", " ").split()[-1] if person.strip() else ""
    if head in _FEMALE_HEADS or head.endswith(("woman", "women", "girl", "wife", "mother")):
        return "She"
    if head in _MALE_HEADS or head.endswith(("boy", "father", "husband")) or (
            head.endswith(("man", "men")) and head not in _NOT_MALE_MAN):
        return "He"
    return inherited or pronoun_for(person)


@dataclass(frozen=True)
class GeneralizeReport:
    """What ``generalize`` did."""

    out: Path
    """The release-format file written."""
    candidates: int
    """Distinct generalized scenarios before the corpus filter."""
    in_corpus: int
    """Candidates dropped because the corpus contains them."""
    kept: int
    """Scenarios written."""
    no_subterms: tuple[str, ...]
    """Persons/objects for which the source had no subterm."""


def scenario_text(person: str, action: str, obj: str) -> str:
    """``An enchantress lights the sparkler.`` (article fixed for the person)."""
    return capitalize_first(f"{with_article(person)} {action} the {obj}.")


def _choices(inst: Instance, persons: list[str], objects: list[str], replace: str) -> list[tuple[str, str]]:
    if replace == "person":
        return [(p, inst.obj_b) for p in persons]
    if replace == "object":
        return [(inst.obj_a, o) for o in objects]
    return [(p, o) for p in persons for o in objects]


def generalize_records(dataset: Dataset, source, *, replace: str = "both",
                       max_per_scenario: int | None = 20, seed: int = 0) -> tuple[list[dict], set[str]]:
    """Generalized release records for every posrel instance, deduplicated by text.

    At most ``max_per_scenario`` substitutions are kept per source scenario, sampled with a
    generator seeded by ``seed`` and the instance id, so the output is reproducible.
    Returns the records and the words that had no subterm.
    """
    if tasks.get(dataset.task).is_comparison:
        raise UsageError(f"Only scenarios of a position task (posrel) can be generalized, not {dataset.task!r}.")
    if replace not in REPLACE_MODES:
        raise UsageError(f"replace must be one of {REPLACE_MODES}, not {replace!r}.")
    rows, missing = [], set()
    # A subterm can be another source word (ConceptNet: "boy IsA man"); never re-emit a source scenario.
    seen = {normalize_phrase(inst.text) for inst in dataset.instances}
    for inst in dataset.instances:
        if not inst.action:
            continue  # the text did not parse as "A <person> <action> the <object>."
        persons = source.subterms(inst.obj_a) if replace != "object" else []
        objects = source.subterms(inst.obj_b) if replace != "person" else []
        if replace != "object" and not persons:
            missing.add(inst.obj_a)
        if replace != "person" and not objects:
            missing.add(inst.obj_b)
        pairs = _choices(inst, persons, objects, replace)
        if max_per_scenario is not None and len(pairs) > max_per_scenario:
            pairs = sorted(random.Random(f"{seed}:{inst.id}").sample(pairs, max_per_scenario))
        for person, obj in pairs:
            text = scenario_text(person, inst.action, obj)
            key = normalize_phrase(text)
            if key in seen:
                continue
            seen.add(key)
            rows.append({
                "text": text, "label": POSREL_CODE_OF[inst.label], "obj_a": person, "obj_b": obj,
                "action": inst.action, "pronoun": person_pronoun(person, inst.pronoun),
                "source_text": inst.text, "source_obj_a": inst.obj_a, "source_obj_b": inst.obj_b,
            })
    return rows, missing


def generalize(dataset: Dataset, source, out: str | Path, *, corpus: Sequence[str | Path] = (),
               replace: str = "both", max_per_scenario: int | None = 20, seed: int = 0,
               show_progress: bool = False) -> GeneralizeReport:
    """Write the generalized set of ``dataset`` to ``out`` (see the module docstring).

    The corpus scan is resumable: its progress lives in ``<out>.corpus-state.json``.
    """
    out = Path(out)
    rows, missing = generalize_records(dataset, source, replace=replace,
                                       max_per_scenario=max_per_scenario, seed=seed)
    found: dict[str, str] = {}
    if corpus:
        # The state belongs to this output; one left by other settings (other scenarios) is stale.
        result = filter_phrases([r["text"] for r in rows], corpus,
                                state_path=Path(f"{out}.corpus-state.json"),
                                show_progress=show_progress, restart_stale=True)
        found = result.found
    kept = [r for r in rows if normalize_phrase(r["text"]) not in found]
    if not kept:
        raise UsageError("Every generalized scenario occurs in the corpus (or none was made); "
                         "nothing to write.")
    write_jsonl(out, kept)
    meta: dict[str, Any] = {
        "source_dataset": f"{dataset.name}@{dataset.version}", "subterms": source.describe(),
        "replace": replace, "max_per_scenario": max_per_scenario, "seed": seed,
        "corpus": [str(Path(c).resolve()) for c in corpus],
        "normalisation": "lower-case; whitespace runs -> one space; final '.' dropped; word boundaries",
        "candidates": len(rows), "in_corpus": len(rows) - len(kept), "kept": len(kept),
        "in_corpus_examples": dict(sorted(found.items())[:50]),
        "no_subterms": sorted(missing), "provenance": provenance(),
    }
    write_json(Path(f"{out}.meta.json"), meta)
    return GeneralizeReport(out, len(rows), len(rows) - len(kept), len(kept), tuple(sorted(missing)))
