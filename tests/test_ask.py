"""Questions to a model (the ask run kind): sources, protocols, image conditions, blind baselines.

A fake model that reads the image: white means the caption is true (Yes), black false (No); with
no image or a gray one it says Yes. So it scores 100 with real images and exactly the share of
true captions blind; a model that never looks at the image gains exactly 0.
"""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from vl_helpers import solid_image

from spatialprobe.benchmarks.commonsense import task_source
from spatialprobe.benchmarks.vsr import vsr_source
from spatialprobe.engine.run import AskRun, ask_run
from spatialprobe.errors import UsageError
from spatialprobe.runner.settings import Component
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.origin import builtin_source

CAPTIONS = [("cat", "dog", "left of"), ("car", "bus", "on"), ("cup", "table", "near"),
            ("bird", "tree", "above"), ("boat", "fish", "below"), ("horse", "fence", "behind")]


class Looker:
    name = "looker"
    protocols: ClassVar[tuple[str, ...]] = ("score", "generate")

    def __init__(self, blind: bool = False):
        self.blind = blind

    def _says_yes(self, image) -> bool:
        if self.blind or image is None:
            return True
        return image.getpixel((0, 0))[0] > 64  # white or gray: yes; black: no

    def score(self, requests, progress=None):
        return [tuple((0.0 if (o == "Yes") == self._says_yes(r.image) else -1.0) for o in r.options)
                if r.options == ("Yes", "No") else tuple(-float(n) for n in range(len(r.options)))
                for r in requests]

    def generate(self, requests, progress=None):
        return ["Yes." if self._says_yes(r.image) else "No, it is not." for r in requests]

    def describe(self):
        return {"model": "looker", "blind": self.blind}


@pytest.fixture()
def vsr_files(tmp_path):
    images = tmp_path / "coco"
    rows = []
    for n, (a, b, rel) in enumerate(CAPTIONS * 2):
        label = int(n % 2 == 0)
        image = f"{n:012d}.jpg"
        solid_image(images / image, (255, 255, 255) if label else (0, 0, 0))
        rows.append({"image": image, "caption": f"The {a} is {rel} the {b}.", "label": label,
                     "relation": rel, "subj": a, "obj": b})
    path = tmp_path / "vsr" / "random" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, images


def _run(source, settings, out, model, **options):
    return ask_run(source, model, Component("fake", {"model": "looker"}), settings, out, **options)


def test_a_seeing_model_scores_100_real_and_50_blind_with_a_vision_gain_excluding_0(vsr_files, tmp_path):
    source, settings = vsr_source(*vsr_files)
    summary = _run(source, settings, tmp_path / "run", Looker(), protocol="both", blind=True)
    m, d = summary["metrics"], summary["details"]
    assert m["accuracy"]["mean"] == 100.0 and m["accuracy_generate"]["mean"] == 100.0
    assert m["parse_failure_rate"]["mean"] == 0.0
    assert d["vision_gain"]["blank"]["gain"] == 50.0 and d["vision_gain"]["none"]["gain"] == 50.0
    assert d["vision_gain"]["none"]["ci"][0] > 0
    # every accuracy carries an interval: each protocol's, and each blind component of a vision gain
    assert m["accuracy_generate"]["ci"] == m["accuracy_likelihood"]["ci"] == m["accuracy"]["ci"] is not None
    assert m["accuracy_blank"]["mean"] == m["accuracy_none"]["mean"] == 50.0
    assert m["accuracy_none"]["ci"][0] < 50.0 < m["accuracy_none"]["ci"][1]
    # shuffled: another image never showing the same objects; its truth decides the answer
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").open()]
    assert {r["condition"] for r in rows} == {"real", "blank", "none", "shuffled"}
    table = (tmp_path / "run" / "table.md").read_text()
    assert table.startswith("Coverage: 12 of 12 examples. Protocol: likelihood and generate; conditions: real, "
                            "blank, none, shuffled.")
    assert "| vision gain: real − none | +50.0 [" in table
    assert "| accuracy (likelihood, none) | 50.0 [" in table


def test_a_blind_model_gains_exactly_0(vsr_files, tmp_path):
    source, settings = vsr_source(*vsr_files)
    summary = _run(source, settings, tmp_path / "run", Looker(blind=True), protocol="likelihood", blind=True)
    for blind in ("blank", "none", "shuffled"):
        gain = summary["details"]["vision_gain"][blind]
        assert gain["gain"] == 0.0 and gain["ci"] == [0.0, 0.0] and gain["p"] == 1.0
    assert summary["metrics"]["accuracy"]["mean"] == 50.0


def test_a_task_without_images_is_asked_over_the_probe_folds_and_the_prior_is_the_dev_majority(tmp_path):
    dataset = task_data.load("size")
    source, settings = task_source(dataset, builtin_source("size"), image="none", folds=5, seed=0)
    summary = _run(source, settings, tmp_path / "run", Looker(), condition="none")
    acc = summary["metrics"]["accuracy"]
    # the model always answers the first option (the first object: "larger"); every test fold
    # holds both orders of each pair, so exactly half of each fold is right
    assert acc["mean"] == 50.0 and acc["std"] == 0.0 and len(acc["breakdown"]) == 5
    assert summary["metrics"]["answer_prior"]["mean"] == 50.0
    assert summary["dataset"] == f"size@{dataset.version}"


def test_conditions_that_do_not_apply_are_refused(tmp_path, vsr_files):
    dataset = task_data.load("size")
    source, settings = task_source(dataset, builtin_source("size"), image="none")
    with pytest.raises(UsageError, match="has no images here, so there is no real image condition"):
        AskRun.of(source, Looker(), Component("fake", {}), settings, condition="real")
    vsr, vsr_settings = vsr_source(*vsr_files)
    with pytest.raises(UsageError, match="--blind runs the real condition beside the blind ones"):
        AskRun.of(vsr, Looker(), Component("fake", {}), vsr_settings, condition="blank", blind=True)


def test_the_run_resumes_and_computes_nothing_twice(vsr_files, tmp_path):
    class Counting(Looker):
        calls = 0

        def score(self, requests, progress=None):
            Counting.calls += len(requests)
            return super().score(requests, progress)

    source, settings = vsr_source(*vsr_files)
    first = _run(source, settings, tmp_path / "run", Counting(), blind=True)
    calls = Counting.calls
    assert calls == 48  # 12 items x 4 conditions
    again = _run(source, settings, tmp_path / "run", Counting(), blind=True)
    assert Counting.calls == calls and again["metrics"] == first["metrics"]


def test_spatialmqa_questions_are_lettered_and_read_by_the_authors_lenient_rule(tmp_path):
    from spatialprobe.benchmarks.spatialmqa import spatialmqa_source

    records = [{"image": "a.jpg", "question": "Where is the cup relative to the plate?",
                "options": ["left of", "right of"], "answer": "left of"},
               {"image": "b.jpg", "question": "Where is the lamp relative to the bed?",
                "options": ["on/above", "below", "behind"], "answer": "below"},
               {"image": "c.jpg", "question": "Where is the dog relative to you?",
                "options": ["in front of", "behind"], "answer": "in front of"},
               {"image": "d.jpg", "question": "Where is the picture relative to the sofa?",
                "options": ["on/above", "below"], "answer": "on/above"}]
    for record in records:
        solid_image(tmp_path / "coco" / record["image"])
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    source, settings = spatialmqa_source(data, tmp_path / "coco")
    assert source.items[1].question == ("Where is the lamp relative to the bed?\nOptions:\nA. on/above\nB. below\n"
                                        "C. behind\nAnswer with the option's letter.")

    class Replies(Looker):
        def generate(self, requests, progress=None):
            return ["A", "(B) below", "In front of you.", "It is above it."][: len(requests)]

    summary = _run(source, settings, tmp_path / "run", Replies(), protocol="both", condition="real")
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").open()]
    # the official reader: a letter is its option's text; then the authors' substring either way
    # ("(b) below" holds "below"; "it is above it." neither holds nor is part of "on/above": wrong)
    assert [r["pred_generate"] for r in rows] == ["left of", "below", "in front of", None]
    assert [r["pred_generate_strict"] for r in rows] == ["left of", None, None, None]
    assert [r["parse_rule"] for r in rows] == ["letter", "letter", "text", "lenient"]  # the toolkit's parser
    # likelihood: the fake scores the first option highest: wrong only on the second question
    assert [r["pred_likelihood"] for r in rows] == ["left of", "on/above", "in front of", "on/above"]
    assert summary["metrics"]["accuracy_likelihood"]["mean"] == 75.0
    assert summary["metrics"]["accuracy_generate"]["mean"] == 75.0


# ---- an image run asked with other instances under the same ids is refused ----
@pytest.fixture(scope="module")
def size_halves(tmp_path_factory):
    """Release files of the size set's lines 1-40 and 41-80 (ids restart: size-0000 ... in each),
    and an image run synthesized (untrained shapes) from the first."""
    from typer.testing import CliRunner

    from spatialprobe.cli import app
    from spatialprobe.tasks.release import to_release_records

    folder = tmp_path_factory.mktemp("halves")
    records = to_release_records(task_data.load("size"))
    for name, part in (("first.jsonl", records[:40]), ("second.jsonl", records[40:80])):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    run = folder / "images"
    result = CliRunner().invoke(app, ["synthesize", "--prompts", str(folder / "first.jsonl"), "--backend",
                                      "shapes", "--size", "32", "--out", str(run)])
    assert result.exit_code == 0, result.output
    return folder, run


def test_an_image_run_of_the_same_instances_gives_each_question_its_own_picture(size_halves):
    from spatialprobe.imagestore import image_file
    from spatialprobe.tasks.origin import release_source
    from spatialprobe.tasks.release import load_release

    folder, run = size_halves
    source, _ = task_source(load_release(folder / "first.jsonl"), release_source(folder / "first.jsonl"),
                                   image=str(run), folds=2)
    assert [item.image for item in source.items] == [str(run / image_file(f"size-{k:04d}", 0))
                                                     for k in range(40)]


def test_probe_refuses_an_image_run_drawn_from_other_instances_under_the_same_ids(size_halves, tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    folder, run = size_halves
    model = tmp_path / "llava"  # only its config.json: the refusal comes before anything loads
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llava",
                                                   "architectures": ["LlavaForConditionalGeneration"]}))
    result = CliRunner().invoke(app, ["probe", "size", "--model", str(model), "--data", str(folder / "second.jsonl"),
                                      "--image", str(run), "--folds", "2", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, (result.output, result.exception)
    # line 1 of the first half is (ant, bird), of the second (nut, bird): both size-0000
    assert (f"{run}: its image of size-0000 was drawn for another instance (obj_a 'ant') than the question "
            "size-0000 asks of (obj_a 'nut')") in " ".join(result.output.split())
    assert not (tmp_path / "run").exists()
