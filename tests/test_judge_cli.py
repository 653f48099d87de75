import json
import random

import pytest
from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe import store, tasks
from spatialprobe.cli import app
from spatialprobe.synthesis import load_prompts

runner = CliRunner()
COLOUR = ["--detector", "colour", "--depth", "colour"]


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def expected_whole(rows_golds_preds, labels, seed=0):
    """Accuracy with unrecognized items guessed by random.Random(seed) in order (documented)."""
    rng = random.Random(seed)
    hits = 0
    for gold, pred in rows_golds_preds:
        hits += gold == (pred if pred is not None else rng.choice(labels))
    return 100 * hits / len(rows_golds_preds)


@pytest.mark.parametrize("task,labels", [("size", ["larger", "smaller"]),
                                         ("height", ["taller", "shorter"])])
def test_judge_comparison_end_to_end(tmp_path, task, labels):
    big, small = labels
    # (gold, answer drawn, recognized): 6 recognized of which 4 right; 2 unrecognized.
    plan = [(big, big, True), (big, big, True), (big, small, True),
            (small, small, True), (small, small, True), (small, big, True),
            (big, big, False), (small, small, False)]
    write_run(tmp_path / "images", task, plan)
    out = tmp_path / "judged"
    invoke("judge", task, tmp_path / "images", *COLOUR, "--out", out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "judge" and summary["task"] == task
    assert summary["dataset"] == load_prompts(task).source  # name@version, as synthesize records it
    assert summary["model"] == "test:drawn-shapes"
    metrics = summary["metrics"]
    # 8 images of 8 objects, most seen once: the cluster-adjusted Wilson interval of 6 in 8
    assert metrics["recognized_ratio"] == {"mean": pytest.approx(75.0), "std": None, "n": 8,
                                           "ci": [31.384539, 95.163601]}
    assert metrics["recognized_accuracy"] == {"mean": pytest.approx(400 / 6), "std": None, "n": 6,
                                              "ci": [17.989326, 94.801254]}  # cluster-adjusted Wilson
    # each class: precision = recall = 2/3
    assert metrics["recognized_macro_f1"] == {"mean": pytest.approx(200 / 3), "std": None, "n": 6,
                                              "ci": [6.924915, 100.0]}  # t interval, clipped
    whole = expected_whole([(g, a if r else None) for g, a, r in plan], labels)
    assert summary["accuracy"] == {"mean": pytest.approx(whole), "std": None, "n": 8,
                                   "ci": [22.233738, 90.66794]}  # cluster-adjusted Wilson
    assert summary["intervals"]["clusters"] == ["obj_a", "obj_b"]
    assert summary["intervals"]["key"] == ["instance_id", "image_index"]
    assert summary["seed"] == 0 and summary["untrained"] is True  # colour components
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["recognized"] for p in preds] == [r for _, _, r in plan]
    assert [p["pred"] for p in preds[:6]] == [a for _, a, _ in plan[:6]]
    rng = random.Random(0)  # the two unrecognized images, guessed in image order
    assert [p["pred"] for p in preds[6:]] == [rng.choice(labels), rng.choice(labels)]
    assert preds[0]["depth_a"] == pytest.approx(255 / 64)  # drawn far: disparity 64/255
    assert "depth" in preds[0]["explanation"]
    obj = preds[0]["obj_a"]
    shown = [p for p in preds if obj in (p["obj_a"], p["obj_b"])]
    assert summary["details"]["per_object"][obj] == {
        "n": len(shown), "accuracy": pytest.approx(100 * sum(p["pred"] == p["gold"] for p in shown) / len(shown)),
        "detected": pytest.approx(100 * sum(p["found_a"] if p["obj_a"] == obj else p["found_b"]
                                            for p in shown) / len(shown))}
    table = (out / "table.md").read_text()
    assert f"| recognized subset | 6 | {400 / 6:.1f} [18.0, 94.8] | {200 / 3:.1f} [6.9, 100.0] |" in table
    assert "Recognized ratio: 75.0% [31.4, 95.2]" in table
    assert "cluster-robust standard error over objects (obj_a, obj_b)." in table
    assert (out / "gallery.html").read_text().count("<figure") == 8
    indexed = [r for r in store.list_runs() if r["path"] == str(out.resolve())]
    assert indexed and indexed[0]["accuracy"] == pytest.approx(whole)


def test_judge_posrel_rules_and_legacy(tmp_path):
    plan = [("above", "above", True), ("below", "below", True), ("inside", "inside", True),
            ("beside", "beside", True), ("above", "below", True)]
    write_run(tmp_path / "images", "posrel", plan)
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--out", tmp_path / "vdg")
    summary = json.loads((tmp_path / "vdg" / "summary.json").read_text())
    assert summary["accuracy"]["mean"] == pytest.approx(80.0)
    assert summary["metrics"]["recognized_ratio"]["mean"] == 100.0
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "vdg-legacy",
           "--out", tmp_path / "legacy")
    preds = [json.loads(line) for line in (tmp_path / "legacy" / "predictions.jsonl").read_text().splitlines()]
    assert [p["pred"] for p in preds] == ["below", "above", "inside", "beside", "above"]
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule-arg",
           'above=[80, 100]', "--out", tmp_path / "narrow")
    config = json.loads((tmp_path / "narrow" / "config.json").read_text())
    assert config["settings"]["rule_args"] == {"above": [80, 100]}
    assert config["runtime"] == {"device": "auto", "batch_size": 8}
    assert config["provenance"]["toolkit"] == "spatialprobe"


def test_rule_without_an_answer_counts_as_not_recognized(tmp_path):
    # Drawn "inside" shares B's centre: GenEval finds no relation there. That image must get the
    # seeded guess (not a "none" class of its own in accuracy and macro-F1).
    write_run(tmp_path / "images", "posrel", [("inside", "inside", True), ("above", "above", True)])
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "geneval",
           "--out", tmp_path / "g", "--no-gallery")
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    preds = [json.loads(line) for line in (tmp_path / "g" / "predictions.jsonl").read_text().splitlines()]
    assert [p["recognized"] for p in preds] == [False, True]
    assert preds[0]["found_a"] and preds[0]["found_b"] and "no relation" in preds[0]["explanation"]
    assert preds[0]["pred"] == random.Random(0).choice(["above", "below", "inside", "beside"])
    assert summary["metrics"]["recognized_ratio"]["mean"] == 50.0
    # one recognized image, of one object: nothing to resample, so no interval (null, not [100, 100])
    assert summary["metrics"]["recognized_accuracy"] == {"mean": 100.0, "std": None, "n": 1, "ci": None}
    assert summary["metrics"]["recognized_macro_f1"] == {"mean": 100.0, "std": None, "n": 1, "ci": None}


def test_judge_resumes_and_refuses_other_settings(tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True), ("smaller", "larger", True)])
    out = tmp_path / "judged"
    invoke("judge", "size", tmp_path / "images", *COLOUR, "--out", out, "--no-gallery")
    first = (out / "predictions.jsonl").read_text()
    invoke("judge", "size", tmp_path / "images", *COLOUR, "--out", out, "--no-gallery")
    assert (out / "predictions.jsonl").read_text() == first
    result = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), "--detector", "colour",
                                 "--depth", "colour", "--depth-arg", "shift=0.1", "--out", str(out)])
    assert result.exit_code == 2 and "already holds another run" in result.output
    assert "depth.args.shift: None -> 0.1" in result.output
    assert "Traceback" not in result.output and result.output.strip().startswith("Error: ")


def test_judge_errors_are_clear(tmp_path):
    write_run(tmp_path / "images", "size", [("larger", "larger", True)])
    # Expected failures end with one "Error: ..." sentence and exit code 2, never a traceback.
    result = runner.invoke(app, ["judge", "height", str(tmp_path / "images"), *COLOUR])
    assert result.exit_code == 2 and "Error: " in result.output
    assert "no finished images of height" in result.output
    result = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), "--detector", "owlvitt"])
    assert result.exit_code == 2 and "Did you mean 'owlvit'" in result.output
    result = runner.invoke(app, ["judge", "size", str(tmp_path / "images"), "--detector-model",
                                 str(tmp_path / "missing"), "--depth", "colour"])
    assert result.exit_code == 2 and "local directory" in result.output
    result = runner.invoke(app, ["judge", "gallery", str(tmp_path / "images")])
    assert result.exit_code == 2 and "is not a judge run" in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not an escaped exception
    result = runner.invoke(app, ["judge", "gallery", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and not (tmp_path / "nowhere").exists()  # read, never created


def test_gallery_command(tmp_path):
    write_run(tmp_path / "images", "posrel", [("above", "above", True), ("below", "beside", False)])
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--out", tmp_path / "j",
           "--no-gallery")
    invoke("judge", "gallery", tmp_path / "j", "--out", tmp_path / "g.html")
    page = (tmp_path / "g.html").read_text()
    assert page.count("<figure") == 2 and "data:image/jpeg;base64," in page
    assert "centre angle 90.0 deg" in page and "not recognized" in page


def test_missing_run_is_refused_without_creating_it(tmp_path):
    missing = tmp_path / "nope"
    result = runner.invoke(app, ["judge", "size", str(missing), *COLOUR])
    flat = " ".join(result.output.replace("│", " ").split())  # rich wraps the message in a box
    assert result.exit_code != 0 and "is not an image run" in flat
    assert not missing.exists()


def test_local_model_directories_are_recorded_absolute(tmp_path, monkeypatch):
    from spatialprobe.commands.image_runs import component_spec as _spec

    (tmp_path / "owl").mkdir()
    monkeypatch.chdir(tmp_path)
    assert _spec("owlvit", "owl", []).args["model"] == str(tmp_path / "owl")
    assert _spec("owlvit", "google/owlvit-base-patch32", []).args["model"] == "google/owlvit-base-patch32"


def test_judge_replay_confirms_in_place_and_reproduces_elsewhere(tmp_path, monkeypatch):
    from spatialprobe.judging.box import JudgeRun

    write_run(tmp_path / "images", "posrel", [("above", "above", True), ("below", "beside", True),
                                              ("inside", "inside", False)])
    out = tmp_path / "j"
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--rule", "visor", "--out", out)
    first = (out / "predictions.jsonl").read_text()
    identity = json.loads((out / "summary.json").read_text())["identity"]

    def no_compute(self, batch):
        raise AssertionError("a confirmed replay computes nothing")

    with monkeypatch.context() as patch:
        patch.setattr(JudgeRun, "compute", no_compute)
        result = invoke("run", out / "config.json")
    assert f"confirmed: identity {identity[:12]}" in result.output
    assert (out / "predictions.jsonl").read_text() == first
    result = invoke("run", out / "config.json", "--out", tmp_path / "again", "--batch-size", 1)
    assert (tmp_path / "again" / "predictions.jsonl").read_text() == first
    again = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert again["identity"] == identity
    assert again["metrics"] == json.loads((out / "summary.json").read_text())["metrics"]
    assert json.loads((tmp_path / "again" / "config.json").read_text())["runtime"]["batch_size"] == 1
    assert (tmp_path / "again" / "gallery.html").read_text().count("<figure") == 3


def test_changed_rule_is_refused_on_resume_but_batch_size_is_not(tmp_path):
    write_run(tmp_path / "images", "posrel", [("above", "above", True), ("beside", "beside", True)])
    out = tmp_path / "j"
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--out", out, "--no-gallery")
    first = (out / "predictions.jsonl").read_text()
    result = runner.invoke(app, ["judge", "posrel", str(tmp_path / "images"), "--detector", "colour",
                                 "--rule", "geneval", "--out", str(out)])
    assert result.exit_code == 2
    assert "settings that differ: rule: 'vdg' -> 'geneval'" in result.stderr
    invoke("judge", "posrel", tmp_path / "images", "--detector", "colour", "--batch-size", 1,
           "--out", out, "--no-gallery")
    assert (out / "predictions.jsonl").read_text() == first
    assert json.loads((out / "config.json").read_text())["runtime"]["batch_size"] == 1


@pytest.mark.parametrize("task,option", [("size", ["--rule", "vdg"]),
                                         ("height", ["--rule-arg", "above=[80, 100]"])])
def test_rule_options_are_refused_for_size_and_height(tmp_path, task, option):
    write_run(tmp_path / "images", task, [(("larger" if task == "size" else "taller"),) * 2 + (True,)])
    out = tmp_path / "j"
    result = runner.invoke(app, ["judge", task, str(tmp_path / "images"), *COLOUR, *option,
                                 "--out", str(out)])
    assert result.exit_code == 2 and not out.exists()
    rule = "area*depth^2" if task == "size" else "height*depth"
    position = " and ".join(t for t in tasks.names() if tasks.get(t).kind == "position")  # posrel, posrel3d, ...
    assert result.stderr == (f"Error: --rule and --rule-arg apply to judge {position} only; {task} has "
                             f"one fixed rule ({rule}) without arguments.\n")


def test_depth_options_are_refused_for_posrel(tmp_path):
    write_run(tmp_path / "images", "posrel", [("above", "above", True)])
    result = runner.invoke(app, ["judge", "posrel", str(tmp_path / "images"), *COLOUR,
                                 "--out", str(tmp_path / "j")])
    assert result.exit_code == 2 and not (tmp_path / "j").exists()
    assert ("--depth, --depth-model and --depth-arg apply to judge size, height and posrel3d only; "
            "posrel reads no depth.") in result.stderr


def test_a_detector_that_returns_too_few_results_is_an_error_not_a_shorter_run(tmp_path, monkeypatch):
    from spatialprobe.detectors.colour import ColourDetector
    from spatialprobe.judging.box import JudgeConfig, judge_run
    from spatialprobe.registry import Spec

    write_run(tmp_path / "images", "posrel", [("above", "above", True)] * 3)
    detect = ColourDetector.detect
    monkeypatch.setattr(ColourDetector, "detect", lambda self, images, queries: detect(self, images, queries)[:-1])
    cfg = JudgeConfig(task="posrel", detector=Spec("colour"), batch_size=3)
    with pytest.raises(ValueError, match="zip\\(\\) argument 2 is shorter than argument 1"):
        judge_run(str(tmp_path / "images"), str(tmp_path / "judged"), cfg)


def test_an_order_blind_judge_is_exactly_50_in_every_resample(tmp_path):
    # Six size pairs, each asked in both orders, every image drawn with A larger: the judge answers
    # "larger" for both orders, right once per pair. A pair's two images always weigh alike in a
    # resample of the objects (count(a) * count(b)), so accuracy is 50 in every resample.
    from judge_helpers import dataset_id, scene

    from spatialprobe.imagestore import ImageStore, PromptItem
    from spatialprobe.tasks import data as task_data

    ds = task_data.load("size")
    by_pair = {(i.obj_a, i.obj_b): i for i in ds.instances}
    first = [i for i in ds.instances if i.label == "larger"][:6]
    metas = [inst.to_dict() for i in first for inst in (i, by_pair[(i.obj_b, i.obj_a)])]
    store = ImageStore(tmp_path / "images")
    store.run.start({"kind": "synthesize", "prompts": dataset_id("size"), "task": "size"})
    store.add_prompts(PromptItem(m["id"], m["text"], m) for m in metas)
    for meta in metas:
        store.save_image(scene("size", meta["obj_a"], meta["obj_b"], "larger"), meta["id"], 0, seed=0,
                         backend="test", model="drawn-shapes", settings={})
    invoke("judge", "size", tmp_path / "images", *COLOUR, "--out", tmp_path / "blind", "--no-gallery")
    summary = json.loads((tmp_path / "blind" / "summary.json").read_text())
    preds = [json.loads(line) for line in (tmp_path / "blind" / "predictions.jsonl").read_text().splitlines()]
    assert {p["pred"] for p in preds} == {"larger"} and len(preds) == 12
    assert summary["accuracy"] == {"mean": 50.0, "std": None, "n": 12, "ci": [50.0, 50.0]}
    # "larger": precision 1/2, recall 1 (F1 2/3); "smaller" never said (F1 0)
    assert summary["macro_f1"]["mean"] == pytest.approx(100 / 3)
    assert summary["macro_f1"]["ci"] == pytest.approx([100 / 3, 100 / 3])
    assert summary["metrics"]["recognized_ratio"]["ci"] == [66.713449, 100.0]  # Wilson: all recognized
