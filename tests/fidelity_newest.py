"""The fidelity measurements of the five newest benchmarks (ViewSpatial-Bench, MindCube,
OmniSpatial with each of its three readers, SpatialScore, VSI-Bench), as tests/fidelity.py
measures the others: each benchmark's module reads a small copy in its real layout
(tests/five_copies.py), the engine reads random replies by the official reader and by ``strict``,
and each run's per-item verdicts and official numbers are compared with the authors' code as
transcribed in tests/official/. Numeric items (VSI-Bench, SpatialScore) get numeric replies of
every shape (tests/official/replies.py ``NUMERIC_SHAPES``) and are compared by their scores (MRA,
within a factor of 2, exact)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import five_copies
from fidelity_run import ROUNDS, Measured, built, compare, generated
from official import mindcube as o_mindcube
from official import omnispatial as o_omnispatial
from official import spatialscore as o_spatialscore
from official import viewspatial as o_viewspatial
from official import vsibench as o_vsibench
from official.replies import NUMERIC_SHAPES, numeric_reply, reply


def _letter_reply(item: Any, rng: random.Random, measured: Measured) -> str:
    drawn = reply(rng, list(item.options), "ABCDEF"[item.labels.index(item.gold)])
    measured.shapes.add(drawn.shape)
    return drawn.text


def _numeric_reply(gold: str, rng: random.Random, measured: Measured) -> str:
    drawn = numeric_reply(rng, gold)
    measured.shapes.add(drawn.shape)
    return drawn.text


def _drawing(source: Any, rng: random.Random, measured: Measured,
             write: Callable[[Any, random.Random, Measured], str]) -> Callable[[], tuple[dict[str, Any], list[str]]]:
    """A draw of one reply per item (``write``), in the source's item order for the authors' code."""
    def draw() -> tuple[dict[str, Any], list[str]]:
        texts = [write(item, rng, measured) for item in source.items]
        measured.cases += len(texts)
        return generated({item.key: text for item, text in zip(source.items, texts, strict=True)}), texts
    return draw


def _score(row: Mapping[str, Any]) -> float:
    """A row's score as the engine has it: the benchmark's ``official_score``."""
    return float(row["official_score"])


def measure_viewspatial(root: Path) -> Measured:
    rng = random.Random(21)
    folder, records = five_copies.viewspatial(root, n=40)
    source = built("viewspatial", folder)

    def authors(texts: list[str]) -> tuple[list[bool], dict[str, float]]:
        return ([o_viewspatial.is_correct(t, str(r["answer"])) for t, r in zip(texts, records, strict=True)],
                {"accuracy": 100 * o_viewspatial.evaluate(records, texts)["accuracy"]})

    measured = Measured("ViewSpatial-Bench", source.reader, note="the article 'a' reads as option A, as theirs")
    return compare(source, measured, _drawing(source, rng, measured, _letter_reply), authors)


def measure_mindcube(root: Path) -> Measured:
    rng = random.Random(22)
    data, records = five_copies.mindcube(root, n=30)
    source = built("mindcube", data, subset="full")

    def authors(texts: list[str]) -> tuple[list[bool], dict[str, float]]:
        right = [o_mindcube.extract_answer(t) == r["gt_answer"] for t, r in zip(texts, records, strict=True)]
        found = o_mindcube.basic_evaluate([{**r, "answer": t} for r, t in zip(records, texts, strict=True)])
        return right, {"accuracy": 100 * found["gen_cogmap_accuracy"]}

    measured = Measured("MindCube", source.reader, note="their overall leaves translation out (BasicEvaluator)")
    return compare(source, measured, _drawing(source, rng, measured, _letter_reply), authors)


def measure_omnispatial(root: Path, eval_type: str = "re") -> Measured:
    rng = random.Random(23 + len(eval_type))
    folder, records = five_copies.omnispatial(root, n=40)
    source = built("omnispatial", folder, options={"reader": eval_type})

    def write(item: Any, rng: random.Random, measured: Measured) -> str:
        text = _letter_reply(item, rng, measured)
        if eval_type == "json" and rng.random() < 0.5:  # the shape the json reader asks for, its answer any shape
            return f'```json\n{{"analysis": "looking at it", "answer": {json.dumps(text)}}}\n```'
        return text

    def authors(texts: list[str]) -> tuple[list[bool], dict[str, float]]:
        return ([o_omnispatial.is_correct(t, int(r["answer"]), eval_type) for t, r in zip(texts, records, strict=True)],
                {"accuracy": round(o_omnispatial.evaluate(records, [texts], eval_type)["Overall"], 4)})

    measured = Measured(f"OmniSpatial (--option reader={eval_type})", source.reader,
                        note="to 4 decimals (their denominators carry + 1e-6)" + {
                            "re": "; an unread reply reads A, lower case never right, as theirs", "direct": "",
                            "json": "; half the replies in their JSON block, any failure reads A"}[eval_type])
    return compare(source, measured, _drawing(source, rng, measured, write), authors, digits=4)


def measure_spatialscore(root: Path) -> Measured:
    rng = random.Random(24)
    path, records = five_copies.spatialscore(root, n=96)
    source = built("spatialscore", path)

    def write(item: Any, rng: random.Random, measured: Measured) -> str:
        if item.options:
            return _letter_reply(item, rng, measured)
        answer = str(item.fields["answer"])
        number = re.match(r"\d+(?:\.\d+)?", answer)
        if number is None:  # an open-ended word (RealWorldQA): the word, or a sentence, or nothing
            measured.shapes.add("open_word")
            return rng.choice([answer, answer.upper(), f"{answer}.", f"I think {answer.lower()}", "", "maybe"])
        return _numeric_reply(number.group(0), rng, measured)

    def authors(texts: list[str]) -> tuple[list[float], dict[str, float]]:
        scores = [o_spatialscore.score_item(r, t.strip())[1] for r, t in zip(records, texts, strict=True)]
        summary = o_spatialscore.summarize([{**r, "score": s} for r, s in zip(records, scores, strict=True)])
        return scores, {"accuracy": summary["overall"]["accuracy"]}

    measured = Measured("SpatialScore (version_0)", source.reader,
                        note="scored per item by question type: letters, yes/no, numbers with units (within 2x), "
                             "MRA for VSI-Bench_8; numeric replies of every numeric shape")
    return compare(source, measured, _drawing(source, rng, measured, write), authors, verdict=_score)


def measure_vsibench(root: Path) -> Measured:
    rng = random.Random(25)
    records = _vsibench_records(random.Random(5), 60)
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    source = built("vsibench", root)  # text only: the questions, no video decoded

    def write(item: Any, rng: random.Random, measured: Measured) -> str:
        return _letter_reply(item, rng, measured) if item.options else _numeric_reply(item.gold, rng, measured)

    def authors(texts: list[str]) -> tuple[list[float], dict[str, float]]:
        done = [o_vsibench.process_result(r, t) for r, t in zip(records, texts, strict=True)]
        scores = [float(d.get("accuracy", d.get("MRA:.5:.95:.05"))) for d in done]  # type: ignore[arg-type]
        mca = [d["accuracy"] for d in done if "accuracy" in d]
        na = [d["MRA:.5:.95:.05"] for d in done if "MRA:.5:.95:.05" in d]
        return scores, {"vsibench": o_vsibench.aggregate(done)["overall"], "accuracy": 100 * sum(mca) / len(mca),
                        "mra": 100 * sum(na) / len(na)}

    measured = Measured("VSI-Bench", source.reader,
                        note="the first token read for letters and numbers ('The answer is B' reads 'The'); "
                             "numeric replies of every numeric shape, scored by MRA")
    return compare(source, measured, _drawing(source, rng, measured, write), authors, verdict=_score)


def _vsibench_records(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """VSI-Bench records of all ten question types (five_copies.vsibench's, without the videos)."""
    scenes = [("arkitscenes", "41069025"), ("scannet", "scene0011_00"), ("scannetpp", "09c1414f1b")]
    records = []
    for k in range(n):
        kind = (five_copies.VSI_MCA + five_copies.VSI_NA)[k % 10]
        dataset, scene = scenes[k % 3]
        record: dict[str, Any] = {"id": k, "dataset": dataset, "scene_name": scene, "question_type": kind,
                                  "question": f"Question {k} about the {kind.replace('_', ' ')}?"}
        if kind in five_copies.VSI_MCA:
            options = rng.sample(["left", "right", "back", "front", "table", "sofa"], 3 + k % 2)
            record.update(options=[f"{'ABCD'[j]}. {o}" for j, o in enumerate(options)],
                          ground_truth="ABCD"[rng.randrange(len(options))])
        else:
            value = rng.randint(1, 12) if kind == "object_counting" else round(rng.uniform(0.3, 9.0), 1)
            record.update(options=None, ground_truth=str(value))
        records.append(record)
    return records


NEWEST: dict[str, Callable[[Path], Measured]] = {
    "viewspatial": measure_viewspatial, "mindcube": measure_mindcube,
    "omnispatial-re": measure_omnispatial,
    "omnispatial-direct": lambda root: measure_omnispatial(root, "direct"),
    "omnispatial-json": lambda root: measure_omnispatial(root, "json"),
    "spatialscore": measure_spatialscore, "vsibench": measure_vsibench}
"""Each measurement by the name its row is measured under (``ROUNDS`` runs each)."""
NUMERIC = {"SpatialScore (version_0)", "VSI-Bench"}
"""The benchmarks whose replies include numeric ones (every shape of ``NUMERIC_SHAPES`` expected)."""
__all__ = ["NEWEST", "NUMERIC", "NUMERIC_SHAPES", "ROUNDS"]
