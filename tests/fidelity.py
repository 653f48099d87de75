"""The fidelity measurements behind docs/fidelity.md's reader table: each benchmark's official
reader, run through the engine (:func:`spatialprobe.engine.reading.read_answers`,
:func:`spatialprobe.engine.metrics.official_metrics`) on a small copy of the benchmark read by its
own module, against the authors' code as transcribed in tests/official/ (which imports nothing of
spatialprobe), on random replies of every shape (tests/official/replies.py).

Each :func:`measure_*` draws ``ROUNDS`` runs of random replies over its items and returns a
:class:`Measured`: the replies compared, the shapes among them, the replies read differently
(the option, or right/wrong, where the authors' code gives only a verdict), and per metric the
largest difference between the engine's number and the authors' over the runs.

``python tests/fidelity.py`` rewrites the table in docs/fidelity.md (between its markers);
tests/test_fidelity.py fails where the committed table is not the one these measurements give.
"""

from __future__ import annotations

import json
import math
import random
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from fidelity_newest import NEWEST  # noqa: E402
from fidelity_run import ROUNDS, Measured, built, compare, draw_options, jsonl, replied  # noqa: E402
from official import blink as o_blink  # noqa: E402
from official import comfort as o_comfort  # noqa: E402
from official import lmms_first_letter as o_lmms  # noqa: E402
from official import mmsi as o_mmsi  # noqa: E402
from official import site as o_site  # noqa: E402
from official import spatialeval as o_spatialeval  # noqa: E402
from official import spatialmqa as o_mqa  # noqa: E402
from official import vlmeval as o_vlmeval  # noqa: E402
from official import whatsup as o_whatsup  # noqa: E402
from official.replies import NUMERIC_SHAPES, SHAPES  # noqa: E402

DOCS = HERE.parent / "docs" / "fidelity.md"
BEGIN, END = "<!-- readers table: begin (python tests/fidelity.py) -->", "<!-- readers table: end -->"


# -- the benchmarks -------------------------------------------------------------------------------
def measure_site(root: Path) -> Measured:
    rng = random.Random(1)
    cats = sorted(o_site.Categories)
    docs = []
    for n in range(40):
        k = rng.randint(2, 5)
        docs.append({"id": f"s{n}", "question": f"Where is thing {n}?", "options": draw_options(rng, k),
                     "answer": rng.choice(string.ascii_uppercase[:k]), "category": rng.choice(cats),
                     "dataset": rng.choice(["d1", "d2"]), "visual": [f"{n}.png"]})
    source = built("site", jsonl(root / "site.jsonl", docs))

    def authors(texts: dict[str, str]) -> tuple[list[float], dict[str, float]]:
        out = [o_site.spatial_process_results(d, [texts[d["id"]]], rng=random.Random(f"site|{d['id']}"))
               for d in docs]
        return [o["accuracy"]["overall"] for o in out], {
            "accuracy": o_site.spatial_aggregate_results([o["accuracy"] for o in out]),
            "chance_adjusted_accuracy": o_site.spatial_aggregate_results([o["chance_adjusted_acc"] for o in out])}

    measured = Measured("SITE", source.reader,
                        note="to their 5 decimals; an unread reply: the authors' random letter, seeded by the item")
    return compare(source, measured, replied(source, rng, measured), authors, digits=5)


def _mmsi_source(root: Path, rng: random.Random) -> tuple[Any, list[dict[str, Any]]]:
    docs = []
    for n in range(40):
        options = draw_options(rng, 4)
        text = ", ".join(f"{c}: {o}" for c, o in zip("ABCD", options, strict=True))
        docs.append({"id": f"m{n}", "question": f"Which one, {n}? Options: {text}", "answer": rng.choice("ABCD"),
                     "question_type": rng.choice(["camera", "object"]), "images": [f"{n}a.png", f"{n}b.png"]})
    return built("mmsi", jsonl(root / "mmsi.jsonl", docs)), docs


def measure_mmsi(root: Path, variant: str = "") -> Measured:
    """``variant``: "" (the README's extraction, the official reader), "code" (the fork's code) or
    "lmms" (lmms-eval's task)."""
    rng = random.Random(2 + len(variant))
    source, docs = _mmsi_source(root, rng)
    if variant:
        source = replace(source, reader=f"mmsi-{variant}")
    score = {"": lambda text, gold: o_mmsi.extract_readme(text, gold) or 0.0,
             "code": o_mmsi.evaluate_code_row,
             "lmms": lambda text, gold: o_mmsi.extract_lmms(text, gold) or 0.0}[variant]

    def authors(texts: dict[str, str]) -> tuple[list[float], dict[str, float]]:
        scores = [score(texts[d["id"]], d["answer"]) for d in docs]
        return scores, {"accuracy": 100 * sum(scores) / len(scores)}

    measured = Measured("MMSI-Bench" + {"": "", "code": " (the fork's code)", "lmms": " (lmms-eval)"}[variant],
                        source.reader, note="nothing extracted scores 0 (the README's LLM fallback is not run)")
    return compare(source, measured, replied(source, rng, measured), authors)


def measure_cvbench(root: Path) -> Measured:
    rng = random.Random(4)
    docs = []
    for n in range(45):
        k = rng.randint(2, 6)
        docs.append({"idx": n, "type": rng.choice(["2D", "3D"]), "task": rng.choice(["Count", "Depth"]),
                     "source": ("ADE20K", "COCO", "Omni3D")[n % 3], "image": f"img/{n}.png",
                     "question": f"Question {n}?", "choices": draw_options(rng, k),
                     "answer": f"({rng.choice(string.ascii_uppercase[:k])})"})
    source = built("cv-bench", jsonl(root / "cvbench.jsonl", docs))

    def authors(texts: dict[str, str]) -> tuple[list[bool], dict[str, float]]:
        out = [o_lmms.cv_bench_process_results(d, [texts[str(d["idx"])]])["cv_bench_acc"] for d in docs]
        return [o["is_correct"] for o in out], {"accuracy": 100 * o_lmms.cv_bench_aggregate_results(out),
                                                "cv_bench": 100 * o_lmms.cv_bench_default_aggregate_results(out)}

    measured = Measured("CV-Bench", source.reader)
    return compare(source, measured, replied(source, rng, measured), authors)


def measure_embspatial(root: Path) -> Measured:
    rng = random.Random(5)
    docs = [{"question_id": n, "data_source": rng.choice(o_lmms.DATA_SOURCES), "image": f"{n}.png",
             "question": f"Which is left, {n}?", "answer_options": draw_options(rng, 4), "answer": rng.randrange(4),
             "relation": rng.choice(["left", "above"]), "objects": ["a", "b"]} for n in range(40)]
    source = built("embspatial", jsonl(root / "embspatial.jsonl", docs))

    def authors(texts: dict[str, str]) -> tuple[list[bool], dict[str, float]]:
        out = [o_lmms.embspatial_process_results(d, [texts[str(d["question_id"])]])["embspatial_acc"] for d in docs]
        return [o["is_correct"] for o in out], {"accuracy": 100 * o_lmms.embspatial_aggregate_results(out)}

    measured = Measured("EmbSpatial-Bench", source.reader)
    return compare(source, measured, replied(source, rng, measured), authors)


def measure_blink(root: Path) -> Measured:
    rng = random.Random(6)
    docs = []
    for task in o_blink.SUBTASKS:
        for n in range(1, rng.randint(2, 4) + 1):
            k = rng.randint(2, 4)
            docs.append({"idx": f"val_{task}_{n}", "question": f"{task} {n}?", "sub_task": task.replace("_", " "),
                         "choices": draw_options(rng, k), "answer": f"({rng.choice(string.ascii_uppercase[:k])})",
                         "image_1": f"{task}{n}.png"})
    source = built("blink", jsonl(root / "blink.jsonl", docs), subset="all", split="val")
    spatial = ["Spatial_Relation", "Relative_Depth", "Multi-view_Reasoning"]
    answers = {d["idx"]: d["answer"] for d in docs}
    three = {k: v for k, v in answers.items() if any(f"val_{t}_" in k for t in spatial)}

    def authors(texts: dict[str, str]) -> tuple[list[bool], dict[str, float]]:
        predictions = {d["idx"]: o_blink.read(texts[d["idx"]], d) for d in docs}
        return [predictions[d["idx"]] == d["answer"] for d in docs], {
            "blink": 100 * o_blink.eval_prediction(answers, predictions, o_blink.SUBTASKS)["Total"],
            "blink_spatial": 100 * o_blink.eval_prediction(three, predictions, spatial)["Total"]}

    measured = Measured("BLINK", source.reader, note="their GPT-3.5 matcher not run: such a reply counts wrong, "
                                                     "as their stored '(Z) Failed...'")
    return compare(source, measured, replied(source, rng, measured), authors)


def measure_3dsrbench(root: Path) -> Measured:
    rng = random.Random(7)
    docs = []
    for n in range(40):
        k = rng.randint(2, 4)
        docs.append({"index": n, "qid": f"q{n:07d}", "question": f"Is it {n}?", "category": "height_higher",
                     "answer": rng.choice(string.ascii_uppercase[:k]), "image": f"{n}.png",
                     **dict(zip("ABCD", draw_options(rng, k), strict=False))})
    source = built("3dsrbench", jsonl(root / "3dsr.jsonl", docs))

    def authors(texts: dict[str, str]) -> tuple[list[int], dict[str, float]]:
        hits = o_vlmeval.mcq_vanilla_hits([{**d, "prediction": texts[f"{d['index']}|{d['qid']}"]} for d in docs],
                                          verbose=False)
        return hits, {"accuracy": 100 * o_vlmeval.report_acc([{"hit": h} for h in hits])["Overall"]}

    measured = Measured("3DSRBench", source.reader,
                        note="no judge (--judge exact_matching): a reply can_infer cannot read is 'Z', wrong")
    return compare(source, measured, replied(source, rng, measured), authors)


def measure_spatialeval(root: Path) -> Measured:
    rng = random.Random(8)
    kinds = [("spatialmap", 0, ["northeast", "northwest", "southeast", "southwest"]),
             ("spatialmap", 2, ["0", "1", "2", "3"]), ("mazenav", 0, ["0", "1", "2", "3"]),
             ("mazenav", 2, ["yes", "no"]), ("spatialgrid", 1, ["cat", "dog", "rabbit", "giraffe"])]
    docs = []
    for n in range(40):
        task, qid, options = kinds[n % len(kinds)]
        letter = rng.randrange(len(options))
        listed = ", ".join(f"{c}. {o}" for c, o in zip(string.ascii_uppercase, options, strict=False))
        docs.append({"id": f"{task}.{n}.{qid}", "text": f"Question {n}? Available options: {listed}.",
                     "oracle_answer": options[letter], "oracle_option": string.ascii_uppercase[letter]})
    source = built("spatialeval", jsonl(root / "spatialeval.jsonl", docs))

    def authors(texts: dict[str, str]) -> tuple[list[int | None], dict[str, float]]:
        verdicts = [o_spatialeval.official_correct(texts[d["id"]], d["id"], d["oracle_answer"]) for d in docs]
        return verdicts, {"accuracy": 100 * o_spatialeval.accuracy(verdicts)}

    measured = Measured("SpatialEval", source.reader,
                        note="the verdict is theirs: 'none' (also an unread reply) counts for 'no', '90' for '0'")
    return compare(source, measured, replied(source, rng, measured), authors)


def _as_the_authors_asked(text: str, options: Sequence[str]) -> str:
    """A reply to the toolkit's lettered wording as the authors' unlettered prompt would have had
    it: a reply that is exactly an option's letter is that option's text."""
    letters = list(string.ascii_uppercase[:len(options)])
    return options[letters.index(text.strip())] if text.strip() in letters else text


def measure_spatialmqa(root: Path) -> Measured:
    from spatialprobe.benchmarks.spatialmqa import spatialmqa_source

    rng = random.Random(9)
    labels = o_mqa.LABELS
    docs = []
    for n in range(48):
        options = rng.sample(labels, rng.randint(2, 4))
        answer = labels[n % 6] if labels[n % 6] in options else rng.choice(options)
        docs.append({"image": f"{n}.jpg", "question": f"Where is the cup {n}?", "options": options, "answer": answer})
    source, _ = spatialmqa_source(jsonl(root / "test.jsonl", docs), None)

    def authors(texts: dict[str, str]) -> tuple[list[int], dict[str, float]]:
        records = []
        for n, item in enumerate(source.items):
            result, output = o_mqa.experiment_result(_as_the_authors_asked(texts[item.key], item.options), item.gold)
            records.append({"id": n + 1, "result": result, "output": output, "answer": item.gold})
        prf1 = o_mqa.prf1(records)
        return [r["result"] for r in records], {"accuracy": 100 * o_mqa.xyz_as_run(records)["overall"],
                                                **{k: 100 * prf1[k] for k in ("precision", "recall", "f1")}}

    measured = Measured("SpatialMQA", source.reader,
                        note="calculate_xyz.py as it runs (its on/above clause discarded); a reply that is an "
                             "option's letter (our lettered wording) is that option's text")
    return compare(source, measured, replied(source, rng, measured), authors)


def measure_whatsup(root: Path) -> Measured:
    rng = random.Random(10)
    slots = {"left": "left_of", "right": "right_of", "on": "on", "under": "under"}
    words = {"left": "to the left of", "right": "to the right of", "on": "on", "under": "under"}
    dataset = []
    for k in range(6):
        for slot, in_name in slots.items():
            others = [s for s in slots if s != slot]
            dataset.append({"image_path": f"data/controlled_images/mug{k}_{in_name}_plate-{k}.jpeg",
                            "caption_options": [f"A mug{k} {words[s]} a plate-{k}" for s in (slot, *others)]})
    data = root / "controlled_images_dataset.json"
    data.write_text(json.dumps(dataset))
    source = built("whatsup", data)
    measured = Measured("What'sUp", source.reader,
                        note="random caption scores in {0, 1, 2} (ties frequent), captions asked in a shuffled order")

    def draw() -> tuple[dict[str, Any], Any]:
        scores = [[float(rng.choice([0, 1, 2])) for _ in range(4)] for _ in dataset]
        measured.cases += len(dataset)
        measured.shapes.add("scores")
        return {item.key: {"likelihood": {"scores": [values[row["caption_options"].index(c)]
                                                     for c in item.wording("question").options]}}
                for item, row, values in zip(source.items, dataset, scores, strict=True)}, scores

    def authors(scores: list[list[float]]) -> tuple[Any, dict[str, float]]:
        (individual, _, _), _ = o_whatsup.evaluate_scores(dataset, np.array(scores)[:, None, :], "A")
        return np.argmax(np.array(scores), axis=-1) == 0, {"accuracy": individual}

    return compare(source, measured, draw, authors, rounds=ROUNDS * 4)


def measure_comfort(root: Path) -> Measured:
    rng = random.Random(11)
    folder = root / "comfort" / "comfort_ball" / "left" / "color"
    folder.mkdir(parents=True, exist_ok=True)
    config = {"path_type": "rotate", "relation": "totheleft", "var_shape": "Sphere", "ref_shape": "Sphere",
              "var_color": [1, 0, 0, 1], "ref_color": [0, 0, 1, 1],
              "mapping": {f"{n}.png": 10 * n for n in range(37)}}
    (folder / "config.json").write_text(json.dumps(config))
    source = built("comfort", root / "comfort")
    measured = Measured("COMFORT", source.reader,
                        note="random P(yes), a quarter exactly 0.5; the 37th image (360°) dropped as theirs")

    def draw() -> tuple[dict[str, Any], Any]:
        p_yes = [rng.choice([0.2, 0.5, 0.7, rng.random()]) for _ in range(37)]
        measured.cases += 37
        measured.shapes.add("scores")
        return {item.key: {"likelihood": {"scores": [math.log(1 - p + 1e-12), math.log(p + 1e-12)]}}
                for item, p in zip(source.items, p_yes, strict=True)}, p_yes

    def authors(p_yes: list[float]) -> tuple[list[bool], dict[str, float]]:
        data = [(10 * n, {"Yes": p, "No": 1 - p}) for n, p in enumerate(p_yes)]
        accuracy = o_comfort.accuracy_metric(data, {"relation": "totheleft"}, "camera", mode="acc", normalize=False)
        gold = [math.cos(10 * n / 180 * math.pi) > 1e-10 for n in range(37)]
        return [(p > 0.5) == g for p, g in zip(p_yes, gold, strict=True)], {"accuracy": 100 * accuracy}

    return compare(source, measured, draw, authors, rounds=ROUNDS * 4)


MEASURES: dict[str, Callable[[Path], Measured]] = {
    "site": measure_site, "mmsi": measure_mmsi, "mmsi-code": lambda root: measure_mmsi(root, "code"),
    "mmsi-lmms": lambda root: measure_mmsi(root, "lmms"),
    "cv-bench": measure_cvbench, "embspatial": measure_embspatial, "blink": measure_blink,
    "3dsrbench": measure_3dsrbench, "spatialeval": measure_spatialeval, "spatialmqa": measure_spatialmqa,
    "whatsup": measure_whatsup, "comfort": measure_comfort, **NEWEST}


def measure_all(root: Path) -> list[Measured]:
    out = []
    for name, measure in MEASURES.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        out.append(measure(folder))
    return out


# -- the table -------------------------------------------------------------------------------------
def table(measured: Sequence[Measured]) -> str:
    from spatialprobe.readers.base import get

    lines = [BEGIN, "",
             "| benchmark | official reader (code cited) | cases compared | result | strict reads otherwise |",
             "|---|---|---|---|---|"]
    for m in measured:
        reader = get(m.reader)
        numeric = len(m.shapes & set(NUMERIC_SHAPES))
        cases = (f"{m.cases:,} random answers by likelihood (option scores, ties frequent)" if m.shapes == {"scores"}
                 else f"{m.cases:,} random replies ({len(m.shapes & set(SHAPES))} of the {len(SHAPES)} shapes"
                      + (f"; {numeric} of the {len(NUMERIC_SHAPES)} numeric shapes" if numeric else "") + ")")
        result = ("identical" if m.identical else
                  f"{m.read_differently} replies read differently; " +
                  ", ".join(f"{k} differs by up to {v:.4g} points" for k, v in m.differences.items() if v >= 1e-6))
        if m.identical:
            result += " (" + ", ".join(m.differences) + ")"
        lines.append(f"| {m.benchmark} | `{m.reader}`: {reader.cited} | {cases} "
                     f"| {result}{'; ' + m.note if m.note else ''} "
                     f"| {m.strict_differs:,} ({100 * m.strict_differs / m.cases:.1f} %) |")
    return "\n".join([*lines, "", END])


def rewritten(text: str, new_table: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + new_table + text[end:]


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        new = table(measure_all(Path(tmp)))
    DOCS.write_text(rewritten(DOCS.read_text(encoding="utf-8"), new), encoding="utf-8")
    print(f"wrote the readers table of {DOCS}")


if __name__ == "__main__":
    main()
