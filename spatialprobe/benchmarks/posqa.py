"""POSQA (Shu et al. 2023, cambridgeltl/POSQA): which of two named entities is bigger, across 30
orders of magnitude, asked as a yes/no question (``--subset general``, the default: "Is the A
bigger than the B") or as a which-one question (``--subset special``: "Which one is bigger
between A and B", answered by an entity's name).

Read from the user's copy of ``datasets/posqa.json`` (a JSON object keyed by id, as released; its
Hugging Face copy in any layout :func:`spatialprobe.benchmarks.local_copy.read_records` reads), fields
``h_name, t_name, magnitude, general_question, general_question_label, special_question,
special_question_label``. Text only: ``--images`` does not apply.

Wordings, so that every text scorer is asked the same items:

* ``question`` - the question with "Answer yes or no." (general) or its two entities lettered
  (special): chat models, by either protocol;
* ``short`` - the bare question, the answer words ``yes``/``no`` or the two names (T5/UnifiedQA);
* ``cloze`` - "The A is [bigger|smaller] than the B." (masked LMs; causal LMs score the same
  sentence): ``bigger`` means ``yes`` to a "bigger" question, ``no`` to a "smaller" one, and
  names A (special, "bigger") or B (special, "smaller").

Labels: ``yes``/``no`` (general), the entities' names (special). Official metrics, as
``scripts/cal_metric_scores.py`` computes them (cambridgeltl/POSQA @2c9a164): accuracy, micro-F1
(equal to accuracy for one label a question) and scikit-learn's macro-F1 over the labels seen in
gold or predictions (``macro_f1_seen``), broken down by the question's comparative. Resampled by
both entities of a pair (each pair is asked twice, bigger and smaller). Each item states its fact,
normalised: ``(A, larger, B)`` or ``(A, smaller, B)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks import base
from spatialprobe.benchmarks.base import Official, Source, SourceItem, Wording
from spatialprobe.errors import UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {}
"""POSQA has no options of its own: ``--subset general|special`` chooses the question."""
SUBSETS = ("general", "special")
OFFICIAL = (Official({"accuracy": "accuracy", "micro_f1": "accuracy", "macro_f1_official": "macro_f1_seen"},
                     ("comparative",)),)
GENERAL = "{question}? Answer yes or no."
SPECIAL = "{question}?\n{options}\nAnswer with the option's letter."


def comparative(question: str) -> str:
    """``bigger`` or ``smaller``: the comparative a POSQA question asks about ("" where neither)."""
    words = question.lower().split()
    return "bigger" if "bigger" in words else "smaller" if "smaller" in words else ""


def _cloze(head: str, tail: str, labels: tuple[str, str]) -> Wording:
    return Wording(f"The {head} is ", ("bigger", "smaller"), labels, f" than the {tail}.")


def _item(row: Mapping[str, Any], key: str, subset: str, where: str) -> SourceItem:
    """One POSQA record as an item of ``subset``; refused naming the record where it is malformed."""
    from spatialprobe.benchmarks.local_copy import options_text
    from spatialprobe.errors import DataError

    head, tail = str(row["h_name"]), str(row["t_name"])
    general = str(row["general_question"]).rstrip(" ?")
    asks = comparative(general)
    if not asks or comparative(str(row["special_question"])) != asks:
        raise DataError(where, None, "general_question", "asks neither 'bigger' nor 'smaller' (or not the same "
                        "comparative as special_question)")
    label = row["general_question_label"]
    if isinstance(label, str) and label.lower() in ("true", "false"):
        label = label.lower() == "true"
    if not isinstance(label, bool):
        raise DataError(where, None, "general_question_label", f"{label!r:.60} is not true or false")
    head_bigger = (asks == "bigger") == label
    fact = (head, "larger" if head_bigger else "smaller", tail)
    magnitude = row.get("magnitude")  # [head's, tail's, the gap], where the record has it
    gap = str(magnitude[-1]) if isinstance(magnitude, list) and magnitude else ""
    fields = {"obj_a": head, "obj_b": tail, "comparative": asks, "gap": gap}
    if subset == "general":
        gold = "yes" if label else "no"
        cloze = _cloze(head, tail, ("yes", "no") if asks == "bigger" else ("no", "yes"))
        short = Wording(f"{general}?", ("yes", "no"), ("yes", "no"))
        return SourceItem(key, GENERAL.format(question=general), ("Yes", "No"), ("yes", "no"), gold, None,
                          (head, tail), fields, {"short": short, "cloze": cloze}, fact=fact)
    gold = str(row["special_question_label"])
    if gold not in (head, tail):
        raise DataError(where, None, "special_question_label", f"{gold!r:.60} is neither h_name nor t_name")
    special = str(row["special_question"]).rstrip(" ?")
    names = (head, tail)
    cloze = _cloze(head, tail, names if asks == "bigger" else (tail, head))
    short = Wording(f"{special}?", names, names)
    return SourceItem(key, SPECIAL.format(question=special, options=options_text(names)), names, names, gold,
                      None, (head, tail), fields, {"short": short, "cloze": cloze}, fact=fact)


def posqa_source(found: Mapping[str, Any]) -> Source:
    """POSQA's questions of one subset from the user's copy (:func:`spatialprobe.benchmarks.base.given`)."""
    from spatialprobe.benchmarks.local_copy import read_records

    if found.get("images"):
        raise UsageError("--images does not apply to posqa: its questions are text only.")
    subset = found.get("subset") or "general"
    if subset not in SUBSETS:
        raise UsageError(f"--subset {subset} is not a posqa subset; choose general (yes/no) or special (which one).")
    if not found.get("data"):
        raise UsageError("posqa reads your copy of datasets/posqa.json: pass --data.")
    records = read_records(found["data"], split=found.get("split"))
    rows = records.rows[:found["limit"]] if found.get("limit") else records.rows
    items = []
    for n, row in enumerate(rows):
        for field in ("h_name", "t_name", "general_question", "general_question_label", "special_question",
                      "special_question_label"):
            if row.get(field) is None or row.get(field) == "":
                raise records.error(n, field, "missing or empty")
        path, line = records.where[n]
        where = f"{path}, line {line}" if line else path
        items.append(_item(row, str(row.get("_key") or row.get("id") or n), subset, where))
    labels = ("yes", "no") if subset == "general" else tuple(sorted({x for i in items for x in i.labels}))
    spec = Resampling(labels, ("obj_a", "obj_b"), key=("instance_id",), pooled=True, unit="entity pairs")
    settings = base.recorded("posqa", found, str(found["data"]), records.version, subset=subset)
    return Source("posqa", f"posqa-{subset}", f"posqa-{subset}@{records.version}", labels, tuple(items), spec,
                  official=OFFICIAL, settings=settings, prior_by="label" if subset == "general" else "position",
                  details={"total": len(records.rows), "what": "questions", "subset": subset})


@component("source", "posqa", "POSQA: which of two entities is bigger (yes/no or which one), text")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of ``spatialprobe bench posqa`` settings or of a run's recorded ones."""
    return posqa_source(base.given(settings))


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in POSQA's layout (:mod:`spatialprobe.benchmarks.demo_copy`): ``posqa.json``, a
    bigger and a smaller question about each entity pair, the bigger entity first or second at random."""
    import json
    import random

    from spatialprobe.benchmarks.demo_copy import Demo

    rng, records = random.Random(seed), {}
    pairs = [("elephant", "mouse"), ("house", "cup"), ("truck", "coin"), ("mountain", "dog"), ("bus", "ant"),
             ("tree", "shoe"), ("whale", "fish"), ("piano", "pencil")]
    for k, (big, small) in enumerate(pairs):
        head, tail = (big, small) if rng.random() < 0.5 else (small, big)
        for j, word in enumerate(("bigger", "smaller")):
            label = (head == big) == (word == "bigger")
            winner = big if word == "bigger" else small
            records[f"{k}_{k + 1}_{j}"] = {
                "h_name": head, "t_name": tail, "magnitude": ["3", "1", 2], "paras": [],
                "general_question": f"Is the {head} {word} than the {tail}", "general_question_label": label,
                "special_question": f"Which one is {word} between {head} and {tail}",
                "special_question_label": winner}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "posqa.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
    return Demo(folder / "posqa.json")
