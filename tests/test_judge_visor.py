import json

import pytest
from interval_helpers import wilson
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.detectors.colour import draw_scene
from spatialprobe.files import DataError
from spatialprobe.imagestore import ImageStore, PromptItem
from spatialprobe.judging import visor_metrics as visor

runner = CliRunner()


@pytest.fixture(scope="module")
def sr2d_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sr2d") / "text_spatial_rel_phrases.json"
    result = runner.invoke(app, ["datasets", "build", "sr2d", "--out", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_sr2d_layout_and_counts(sr2d_file):
    data = json.loads(sr2d_file.read_text())
    assert len(data) == 31680
    rels = [d["rel_type"] for d in data]
    assert sum(r in ("to the left of", "to the right of", "above", "below") for r in rels) == 25280
    assert rels.count("and") == 6320 and rels.count("single") == 80
    assert all(d["unique_id"] == i for i, d in enumerate(data))
    assert set(data[0]) == {"unique_id", "num_objects", "obj_1_attributes", "obj_2_attributes",
                            "rel_type", "text"}
    # The two examples printed in the VISOR README, by unique id.
    assert data[1103]["text"] == "a kite to the right of a bicycle"
    assert data[11036]["text"] == "a cat below a bottle"
    assert data[-1] == {"unique_id": 31679, "num_objects": 1, "obj_1_attributes": ["toothbrush"],
                        "obj_2_attributes": [None], "rel_type": "single", "text": "a toothbrush"}
    assert any(d["text"] == "an umbrella above a person" for d in data)


DETECTIONS = {
    # uid 0: a person to the left of a bicycle
    "0_0": {"classes": ["person", "bicycle"], "centroid": [[10, 50], [90, 50]]},   # correct
    "0_1": {"classes": ["person", "bicycle"], "centroid": [[90, 50], [10, 50]]},   # both, wrong
    "0_2": {"classes": ["person"], "centroid": [[10, 50]]},
    "0_3": {"classes": [], "centroid": []},
    # uid 2: a person to the right of a bicycle
    "2_0": {"classes": ["person", "bicycle", "person"], "centroid": [[10, 0], [50, 0], [90, 0]]},
    "2_1": {"classes": ["bicycle", "person"], "centroid": [[0, 0], [5, 0]]},        # correct
    "2_2": {"classes": ["person", "bicycle"], "centroid": [[0, 0], [5, 0]]},        # both, wrong
    "2_3": {"classes": ["bicycle"], "centroid": [[0, 0]]},
    # uid 4: a person above a bicycle
    "4_0": {"classes": ["person", "bicycle"], "centroid": [[0, 10], [0, 50]]},      # correct
    "4_1": {"classes": []}, "4_2": {"classes": [], "sra": 1}, "4_3": {"classes": []},
    # uid 8: "a person and a bicycle" is not spatial and is skipped
    "8_0": {"classes": ["person", "bicycle"], "centroid": [[0, 0], [1, 1]]},
}


def test_visor_hand_computed(sr2d_file, tmp_path):
    path = tmp_path / "results_x_owlvit_0.1.json"
    path.write_text(json.dumps(DETECTIONS))
    r = visor.score_released(path, sr2d_file)
    assert r["images"] == 12 and r["prompts"] == 3
    assert r["OA"] == pytest.approx(50.0)                 # 6 of 12 images have both objects
    assert r["VISOR"] == pytest.approx(100 * 4 / 12)      # 4 correct of 12
    assert r["VISOR_cond"] == pytest.approx(100 * 4 / 6)  # 4 correct of the 6 with both
    assert r["VISOR"] == pytest.approx(r["VISOR_cond"] * r["OA"] / 100)
    assert [r[f"VISOR_{n}"] for n in (1, 2, 3, 4)] == pytest.approx([100, 100 / 3, 0, 0])
    left = r["per_relation"]["to the left of"]
    assert (left["OA"], left["VISOR"], left["VISOR_cond"]) == pytest.approx((50, 25, 50))
    assert set(r["per_relation"]) == {"to the left of", "to the right of", "above"}
    assert r["per_class"]["bicycle"]["images"] == 12
    assert r["object_accuracy_A"] == pytest.approx(100 * 7 / 12)  # person in 3 + 3 + 1 images


def test_visor_cli_writes_a_run(sr2d_file, tmp_path):
    path = tmp_path / "det.json"
    path.write_text(json.dumps(DETECTIONS))
    result = runner.invoke(app, ["visor", "--detections", str(path), "--prompts", str(sr2d_file),
                                 "--out", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "v" / "summary.json").read_text())
    m = summary["metrics"]
    # every prompt here is "person ... bicycle": one pair of classes, nothing to resample, so every
    # interval is null (not the point estimate posing as [50, 50])
    assert m["OA"] == {"mean": 50.0, "std": None, "n": 12, "ci": None, "breakdown": {
        "to the left of": {"mean": 50.0, "std": None, "n": 4, "ci": None},
        "to the right of": {"mean": 75.0, "std": None, "n": 4, "ci": None},   # 2_0, 2_1, 2_2 have both
        "above": {"mean": 25.0, "std": None, "n": 4, "ci": None}}}            # 4_0 only (4_2's sra=1: no objects)
    assert m["VISOR"]["mean"] == pytest.approx(100 / 3) and m["VISOR"]["n"] == 12
    assert m["VISOR_cond"]["mean"] == pytest.approx(200 / 3) and m["VISOR_cond"]["n"] == 6
    assert [m[f"VISOR_{n}"]["mean"] for n in (1, 2, 3, 4)] == pytest.approx([100, 100 / 3, 0, 0])
    assert m["VISOR_1"]["n"] == 3 and "VISOR_5" not in m
    # the headline: accuracy is VISOR (unconditional); VISOR has no macro-F1
    assert summary["accuracy"] == m["VISOR"] and summary["macro_f1"] == {"mean": None, "std": None, "n": 0}
    assert summary["kind"] == "visor" and summary["task"] == "sr2d" and summary["seed"] is None
    assert summary["model"] == "detections:det" and summary["dataset"].startswith(sr2d_file.name + "@")
    assert summary["details"]["non_spatial_skipped"] == 1  # 8_0, "a person and a bicycle"
    assert summary["details"]["per_class"]["bicycle"]["images"] == 12
    rows = [json.loads(line) for line in (tmp_path / "v" / "predictions.jsonl").read_text().splitlines()]
    assert [r["key"] for r in rows] == [k for k in DETECTIONS if k != "8_0"]
    # 2_0: the second person (x=90) is right of the bicycle (x=50): some pair holds
    assert [r["key"] for r in rows if r["correct"]] == ["0_0", "2_0", "2_1", "4_0"]
    table = (tmp_path / "v" / "table.md").read_text()
    assert "| all | 50.00 [–] | 33.33 [–] | 66.67 [–] | 100.00 [–] | 33.33 [–] | 0.00 [–] | 0.00 [–] |" in table
    assert ("interval, cluster-robust standard error over objects (obj_a, obj_b). [–]: no interval (its rows "
            "come from fewer than two units to resample).") in table
    assert "| all | 50.00 [–] | 33.33 [–] |" in result.output and "[low, high]: 95 %" in result.output
    assert not (tmp_path / "v" / "detections.json").exists()  # the input is the detections
    # no detector runs: no device or batch size to record (or to override on replay)
    assert json.loads((tmp_path / "v" / "config.json").read_text())["runtime"] == {}


def test_visor_runs_are_indexed_and_reported_beside_a_judge_run(sr2d_file, tmp_path):
    from judge_helpers import write_run

    from spatialprobe import store

    path = tmp_path / "det.json"
    path.write_text(json.dumps(DETECTIONS))
    result = runner.invoke(app, ["visor", "--detections", str(path), "--prompts", str(sr2d_file),
                                 "--out", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    write_run(tmp_path / "images", "posrel", [("above", "above", True), ("below", "beside", True)])
    result = runner.invoke(app, ["judge", "posrel", str(tmp_path / "images"), "--detector", "colour",
                                 "--out", str(tmp_path / "j"), "--no-gallery"])
    assert result.exit_code == 0, result.output
    indexed = {r["path"]: r for r in store.list_runs()}
    visor_row = indexed[str((tmp_path / "v").resolve())]
    assert (visor_row["kind"], visor_row["task"], visor_row["model"]) == ("visor", "sr2d", "detections:det")
    assert visor_row["accuracy"] == pytest.approx(100 / 3) and visor_row["macro_f1"] is None
    listed = runner.invoke(app, ["runs"])
    assert listed.exit_code == 0 and "visor" in listed.output and "33.3" in listed.output
    report = runner.invoke(app, ["report", str(tmp_path / "j"), str(tmp_path / "v")])
    assert report.exit_code == 0, report.output
    lines = report.output.splitlines()
    # one row per run, a table per kind and task: VISOR is not a judge's accuracy
    assert lines[0] == "| run | judge posrel acc | judge posrel macro-F1 |"
    # two objects, one row each: independent rows, Wilson's own interval of 1 of 2. The macro-F1 over
    # the labels seen (1 + 0 + 0) / 3 has no slope in any cluster's weight (the label set only
    # changes where a cluster is left out): SE 0, [33.3, 33.3]
    assert lines[2] == "| A: test:drawn-shapes [untrained] | 50.0 [9.5, 90.5] | 33.3 [33.3, 33.3] |"
    assert lines[3:7] == ["", "| run | visor sr2d acc | visor sr2d macro-F1 |", "|---|---|---|",
                          "| B: detections:det | 33.3 [–] | – |"]


def _visor_summary(tmp_path, sr2d_file, records, name):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(records))
    result = runner.invoke(app, ["visor", "--detections", str(path), "--prompts", str(sr2d_file),
                                 "--out", str(tmp_path / name)])
    assert result.exit_code == 0, result.output
    return json.loads((tmp_path / name / "summary.json").read_text())


def test_visor_intervals_have_known_answers(sr2d_file, tmp_path):
    # four prompts of four class pairs (person with bicycle, car, motorcycle, airplane), 2 images each
    classes = {0: ["person", "bicycle"], 10: ["person", "car"], 20: ["person", "motorcycle"],
               30: ["person", "airplane"]}
    perfect = {f"{uid}_{k}": {"classes": c, "sra": 1} for uid, c in classes.items() for k in (0, 1)}
    summary = _visor_summary(tmp_path, sr2d_file, perfect, "perfect")
    m = summary["metrics"]
    # all right is no proof of 100 %: the Wilson interval of its rows, t on 4 df (5 classes)
    for name in ("accuracy", "VISOR", "OA", "VISOR_cond", "VISOR_1", "VISOR_2", "object_accuracy_A"):
        assert (m[name]["mean"], m[name]["ci"]) == (100.0, wilson(1.0, 0.0, m[name]["n"], 5)), name
    # no prompt has 3 images: VISOR_3 cannot be measured (null, "–"), not a measured 0.00
    assert m["VISOR_3"]["mean"] is None and m["VISOR_3"].get("ci") is None
    assert summary["intervals"]["method"] == "cluster-robust standard error over objects"
    assert summary["intervals"]["clusters"] == ["obj_a", "obj_b"]
    assert summary["intervals"]["pooled"] is True and summary["intervals"]["group"] == "rel"
    # each prompt: one image right, one wrong, both with both objects. A prompt's two images always
    # weigh alike, so VISOR and VISOR_cond are exactly 50 in every resample, as the order-blind probe
    # scorer is; every prompt has 1 correct image and none 2.
    half = {f"{uid}_{k}": {"classes": c, "sra": int(k == 0)} for uid, c in classes.items() for k in (0, 1)}
    m = _visor_summary(tmp_path, sr2d_file, half, "half")["metrics"]
    assert (m["VISOR"]["mean"], m["VISOR"]["ci"]) == (50.0, [50.0, 50.0])
    assert (m["VISOR_cond"]["mean"], m["VISOR_cond"]["ci"]) == (50.0, [50.0, 50.0])
    # OA and VISOR_1 all true, VISOR_2 all false: the Wilson interval of their rows (t_4), not a point
    assert (m["OA"]["ci"], m["VISOR_1"]["ci"], m["VISOR_2"]["ci"]) == (
        wilson(1.0, 0.0, m["OA"]["n"], 5), wilson(1.0, 0.0, m["VISOR_1"]["n"], 5),
        wilson(0.0, 0.0, m["VISOR_2"]["n"], 5))
    # VISOR_cond counts only the images with both objects, drawn anew in each resample: losing the
    # bicycle in prompt 0's wrong image leaves VISOR at 50 but makes prompt 0 all right among them
    lost = dict(half, **{"0_1": {"classes": ["person"]}})
    m = _visor_summary(tmp_path, sr2d_file, lost, "lost")["metrics"]
    assert m["VISOR"]["ci"] == [50.0, 50.0] and m["VISOR_cond"]["mean"] == pytest.approx(400 / 7)
    assert m["VISOR_cond"]["ci"][0] < 50.0 and m["VISOR_cond"]["ci"][1] > 400 / 7
    assert (m["OA"]["mean"], m["object_accuracy_B"]["mean"]) == (87.5, 87.5)


def test_released_sra_flag_decides_as_in_visor_py(sr2d_file, tmp_path):
    # uid 0 "a person to the left of a bicycle": the centroids say left of, the flag says no;
    # the released visor.py reads only the flag, so the published numbers follow the flag.
    path = tmp_path / "det.json"
    path.write_text(json.dumps({
        "0_0": {"classes": ["person", "bicycle"], "centroid": [[10, 50], [90, 50]], "sra": 0},
        "0_1": {"classes": ["person", "bicycle"], "centroid": [[90, 50], [10, 50]], "sra": 1},
        "0_2": {"classes": ["person", "bicycle"], "centroid": [[10, 50], [90, 50]]}}))
    r = visor.score_released(path, sr2d_file)
    assert r["VISOR_cond"] == pytest.approx(200 / 3)  # 0_1 by its flag, 0_2 by its centroids
    assert [r["VISOR_1"], r["VISOR_2"], r["VISOR_3"]] == [100.0, 100.0, 0.0]
    path.write_text(json.dumps({"0_0": {"classes": ["person", "bicycle"]}}))
    with pytest.raises(DataError, match=r"0_0\.sra"):
        visor.score_released(path, sr2d_file)


def test_visor_bad_key_is_located(sr2d_file, tmp_path):
    path = tmp_path / "det.json"
    path.write_text(json.dumps({"99999_0": {"classes": []}}))
    with pytest.raises(DataError, match="99999_0"):
        visor.score_released(path, sr2d_file)


def test_visor_on_image_run(sr2d_file, tmp_path):
    data = json.loads(sr2d_file.read_text())
    store = ImageStore(tmp_path / "images")
    prompts = [data[0], data[4]]  # person left of bicycle; person above bicycle
    store.add_prompts(PromptItem(str(p["unique_id"]), p["text"], p) for p in prompts)
    left = [("person", (4, 20, 14, 30), 1.0), ("bicycle", (40, 20, 50, 30), 1.0)]
    right = [("person", (40, 20, 50, 30), 1.0), ("bicycle", (4, 20, 14, 30), 1.0)]
    scenes = {("0", 0): left, ("0", 1): right, ("4", 0): left, ("4", 1): left[:1]}
    for (pid, idx), objects in scenes.items():
        store.save_image(draw_scene(objects), pid, idx, seed=idx, backend="test", model="drawn",
                         settings={})
    result = runner.invoke(app, ["visor", str(tmp_path / "images"), "--detector", "colour",
                                 "--out", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    m = json.loads((tmp_path / "v" / "summary.json").read_text())["metrics"]
    assert m["OA"]["mean"] == 75.0 and m["VISOR"]["mean"] == 25.0 and m["VISOR_cond"]["mean"] == pytest.approx(100 / 3)
    assert m["VISOR_1"]["mean"] == 50.0 and m["VISOR_2"]["mean"] == 0.0
    assert m["VISOR"]["breakdown"] == {"to the left of": {"mean": 50.0, "std": None, "n": 2, "ci": None},
                                       "above": {"mean": 0.0, "std": None, "n": 2, "ci": None}}
    released = json.loads((tmp_path / "v" / "detections.json").read_text())
    assert released["0_0"]["classes"] == ["person", "bicycle"] and released["0_0"]["sra"] == 1
    assert list(released) == ["0_0", "0_1", "4_0", "4_1"] and released["4_1"]["recall"] == 1
    # the written detections score the same through the released-layout path
    again = visor.score_released(tmp_path / "v" / "detections.json", sr2d_file)
    assert (again["VISOR"], again["OA"]) == (m["VISOR"]["mean"], m["OA"]["mean"])


def test_sr2d_prompt_lines_feed_synthesize_and_visor(tmp_path):
    """SR2D built as prompt lines is read by synthesize's prompt loader; the image run it would
    fill is scored by `visor RUN` without --prompts, ids staying the released unique_ids."""
    from spatialprobe.synthesis import load_prompts

    lines = tmp_path / "sr2d.jsonl"
    result = runner.invoke(app, ["datasets", "build", "sr2d", "--only", "spatial", "--out", str(lines)])
    assert result.exit_code == 0, result.output
    prompts = load_prompts(str(lines))
    assert len(prompts.items) == 25280
    first, above = prompts.items[0], prompts.items[4]   # uid 0: left of; uid 4: above
    assert (first.prompt_id, first.prompt) == ("0", "a person to the left of a bicycle")
    assert above.meta["rel_type"] == "above" and above.meta["unique_id"] == 4
    assert {"1103", "11036"} <= {p.prompt_id for p in prompts.items}
    assert not any(p.meta["rel_type"] in ("and", "single") for p in prompts.items)
    store = ImageStore(tmp_path / "images")
    store.add_prompts([first, above])
    left = [("person", (4, 20, 14, 30), 1.0), ("bicycle", (40, 20, 50, 30), 1.0)]
    for pid in ("0", "4"):
        store.save_image(draw_scene(left), pid, 0, seed=0, backend="test", model="drawn", settings={})
    result = runner.invoke(app, ["visor", str(tmp_path / "images"), "--detector", "colour",
                                 "--out", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "v" / "summary.json").read_text())
    m = summary["metrics"]
    assert m["OA"]["mean"] == 100.0 and m["VISOR"]["mean"] == 50.0  # left of: right; above: wrong
    assert summary["model"] == "test:drawn" and summary["details"]["detector"]["name"] == "colour"
    config = json.loads((tmp_path / "v" / "config.json").read_text())
    assert config["settings"]["detector"] == {"name": "colour", "args": {"threshold": 0.1}}
    assert config["settings"]["source"]["image_run"]["images"] == 2
    released = json.loads((tmp_path / "v" / "detections.json").read_text())
    assert released["0_0"]["text"] == "a person to the left of a bicycle" and released["0_0"]["sra"] == 1
    assert released["4_0"]["sra"] == 0


def _left_and_above_run(sr2d_file, path):
    data = json.loads(sr2d_file.read_text())
    store = ImageStore(path)
    store.add_prompts(PromptItem(str(p["unique_id"]), p["text"], p) for p in (data[0], data[4]))
    left = [("person", (4, 20, 14, 30), 1.0), ("bicycle", (40, 20, 50, 30), 1.0)]
    for pid in ("0", "4"):
        store.save_image(draw_scene(left), pid, 0, seed=0, backend="test", model="drawn", settings={})
    return path


def test_visor_replay_and_resume(sr2d_file, tmp_path, monkeypatch):
    from spatialprobe.judging.visor import VisorRun

    run = _left_and_above_run(sr2d_file, tmp_path / "images")
    out = tmp_path / "v"
    args = ["visor", str(run), "--detector", "colour", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    first = (out / "predictions.jsonl").read_text()

    def no_compute(self, batch):
        raise AssertionError("a confirmed replay computes nothing")

    with monkeypatch.context() as patch:
        patch.setattr(VisorRun, "compute", no_compute)
        result = runner.invoke(app, ["run", str(out / "config.json")])
        assert result.exit_code == 0 and "confirmed: identity" in result.output, result.output
    result = runner.invoke(app, ["run", str(out), "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "again" / "predictions.jsonl").read_text() == first
    assert (tmp_path / "again" / "detections.json").read_text() == (out / "detections.json").read_text()
    # a changed threshold is another run; a changed batch size resumes this one
    result = runner.invoke(app, [*args, "--threshold", "0.5"])
    assert result.exit_code == 2 and "detector.args.threshold: 0.1 -> 0.5" in result.stderr
    assert runner.invoke(app, [*args, "--batch-size", "1"]).exit_code == 0
    assert (out / "predictions.jsonl").read_text() == first


def test_detector_options_are_refused_with_released_detections(sr2d_file, tmp_path):
    path = tmp_path / "det.json"
    path.write_text(json.dumps(DETECTIONS))
    result = runner.invoke(app, ["visor", "--detections", str(path), "--prompts", str(sr2d_file),
                                 "--threshold", "0.3", "--out", str(tmp_path / "v")])
    assert result.exit_code == 2 and not (tmp_path / "v").exists()
    assert result.stderr == ("Error: --threshold applies to an image RUN only; --detections were "
                             "detected already.\n")


def test_visor_n_beyond_the_images_of_a_prompt_is_unmeasurable_not_zero(sr2d_file, tmp_path):
    # one image per prompt (uids 0, 2 and 4 of DETECTIONS): VISOR_1 is measured (2 of 3 prompts have
    # a correct image), VISOR_2..4 cannot be, since no prompt has a second image to get right
    one_each = {key: DETECTIONS[key] for key in ("0_0", "2_0", "4_0")}
    path = tmp_path / "one.json"
    path.write_text(json.dumps({**one_each, "2_0": {"classes": ["person"], "centroid": [[0, 0]]}}))
    result = runner.invoke(app, ["visor", "--detections", str(path), "--prompts", str(sr2d_file),
                                 "--out", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    m = json.loads((tmp_path / "v" / "summary.json").read_text())["metrics"]
    assert m["VISOR_1"]["mean"] == pytest.approx(200 / 3)
    assert [m[f"VISOR_{n}"]["mean"] for n in (2, 3, 4)] == [None, None, None]
    assert all(m[f"VISOR_{n}"]["breakdown"][rel]["mean"] is None for n in (2, 3, 4)
               for rel in m["VISOR_2"]["breakdown"])
    table = (tmp_path / "v" / "table.md").read_text()
    assert "| all | 66.67 [–] | 66.67 [–] | 100.00 [–] | 66.67 [–] | – | – | – |" in table
    # a measured failure stays 0.00 (uid 2 has no bicycle); what cannot be measured is "–"
    assert "| to the right of | 0.00 [–] | 0.00 [–] | – | 0.00 [–] | – | – | – |" in table
