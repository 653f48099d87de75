"""``spatialprobe audit data`` through the CLI: planted conflicting duplicates, answers outside the
options and of the wrong type, repeated options, missing and cross-split images; planted
mislabelled items among simulated runs of 19 models imported from Every Eval Ever logs (recall and
precision printed); planted image overlaps found by perceptual hash after re-saving and resizing;
a run's score re-weighted to uniform answer values and groups."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from audit_data_helpers import OPTIONS, pattern, recall_precision, simulate, write_eee
from quality_helpers import registered, write_items, write_model
from typer.testing import CliRunner

from spatialprobe.cli import app


def invoke(*args: object, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


YES_NO, NO_YES = ["yes", "no"], ["no", "yes"]
PLANTED = [
    {"id": "q1", "question": "Is the cup left of the plate?", "options": YES_NO, "answer": "A", "image": "a0.png"},
    {"id": "q2", "question": "is the cup LEFT of the plate", "options": NO_YES, "answer": "A", "image": "a0.png"},
    {"id": "q3", "question": "Where is the lamp?", "options": ["left", "right"], "answer": "A", "image": "a1.png"},
    {"id": "q4", "question": "Where is the lamp?", "options": ["left", "right"], "answer": "B", "image": "a2.png"},
    {"id": "q5", "question": "Where is the dog?", "options": ["left", "right"], "answer": "E", "image": "a3.png"},
    {"id": "q6", "question": "Where is the cat?", "options": ["left", "Left ", "right"], "answer": "C",
     "image": "a4.png"},
    {"id": "q7", "question": "How many chairs?", "answer": "3", "type": "count", "image": "a5.png"},
    {"id": "q8", "question": "How many tables?", "answer": "4", "type": "count", "image": "a5.png"},
    {"id": "q9", "question": "How many lamps?", "answer": "Yes", "type": "count", "image": "a5.png"},
    {"id": "q10", "question": "How many cups?", "options": ["1", "2"], "answer": "Yes", "type": "count",
     "image": "a5.png"},
    {"id": "q11", "question": "How many mugs?", "options": ["2", "3"], "answer": "B", "type": "count",
     "image": "gone.png"},
]


def image_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(6):
        pattern(n).save(folder / f"a{n}.png")
    return folder


def test_internal_checks_find_every_planted_problem(tmp_path):
    data = write_items(tmp_path / "items.jsonl", [{"scene": r["id"], **r} for r in PLANTED])
    images = image_folder(tmp_path / "images")
    with registered():
        output = invoke("audit", "data", "quality-demo", "--data", data, "--images", images,
                        "--out", tmp_path / "a.json")
    found = json.loads((tmp_path / "a.json").read_text())["internal"]
    same = found["duplicates"]["same_image"]
    assert [[i["key"] for i in g["items"]] for g in same] == [["q1", "q2"]]  # yes (A of yes/no) vs no (A of no/yes)
    assert [[i["key"] for i in g["items"]] for g in found["duplicates"]["different_images"]] == [["q3", "q4"]]
    assert [e["key"] for e in found["outside_options"]] == ["q5", "q10"]
    assert [e["key"] for e in found["repeated_options"]] == ["q6"]
    assert [e["key"] for e in found["wrong_type"]] == ["q9", "q10"]
    assert [e["key"] for e in found["missing_images"]] == ["q11"]
    assert "| gold of the wrong type | 2 | q9, q10 |" in output
    assert "| images missing | 1 | q11 |" in output


def test_spatialmqa_repeated_wordings_with_another_gold_and_images_shared_with_train(tmp_path):
    def record(image: str, question: str, answer: str) -> str:
        return json.dumps({"image": image, "question": question, "options": ["left of", "right of"], "answer": answer})

    (tmp_path / "test.jsonl").write_text("\n".join([
        record("1.jpg", "Where is the car relative to the tree?", "left of"),
        record("2.jpg", "Where is the car relative to the tree?", "right of"),
        record("3.jpg", "Where is the bus relative to you?", "left of"),
        record("3.jpg", "Where is the bus relative to you ?", "right of")]) + "\n")
    (tmp_path / "train.jsonl").write_text(record("2.jpg", "Is it?", "left of") + "\n")
    invoke("audit", "data", "spatialmqa", "--data", tmp_path, "--out", tmp_path / "a.json")
    found = json.loads((tmp_path / "a.json").read_text())["internal"]
    assert [[i["key"] for i in g["items"]] for g in found["duplicates"]["same_image"]] == [["test-00002", "test-00003"]]
    assert [[i["key"] for i in g["items"]] for g in found["duplicates"]["different_images"]] == \
        [["test-00000", "test-00001"]]
    assert found["shared_across_splits"]["train"]["items"] == ["test-00001"]
    assert found["missing_images"] is None  # no --images: not checked


def test_planted_mislabels_among_19_imported_runs_are_found_and_headlines_recomputed(tmp_path, capsys):
    from spatialprobe.audit.suspects import suspects

    sim = simulate(np.random.default_rng(0))
    invoke("import", "eee", *write_eee(tmp_path / "logs", sim), "--cluster", "image", "--out", tmp_path / "runs")
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 19
    output = invoke("audit", "data", *runs, "--out", tmp_path / "a.json")
    found = json.loads((tmp_path / "a.json").read_text())["suspects"]
    assert found["k"] == 10 and found["runs"] == 19 and found["items"] == 300
    flagged = {int(s["key"].removeprefix("item")) for s in found["suspects"]}
    # exactly the rule: the items where at least 10 of the 19 models chose one answer other than the gold
    expected = {i for i in range(300) for a in range(4)
                if a != sim["gold"][i] and (sim["answers"][:, i] == a).sum() >= 10}
    assert flagged == expected
    ranked = [s["agree"] for s in found["suspects"]]
    assert ranked == sorted(ranked, reverse=True)
    letters = {s["key"]: s["answer"] for s in found["suspects"]}
    assert all(letters[f"item{p:03d}"] == "ABCD"[sim["true"][p]] for p in sim["planted"] if p in flagged)
    recall, precision = recall_precision(flagged, sim["planted"])
    assert recall >= 0.7 and precision >= 0.5
    headlines = found["headlines"]
    for m, name in enumerate(sorted(headlines)):
        right = sim["answers"][m] == sim["gold"]
        kept = np.array([i not in flagged for i in range(300)])
        assert headlines[name]["accuracy"] == pytest.approx(100 * right.mean())
        assert headlines[name]["without"] == pytest.approx(100 * right[kept].mean())
        low, high = headlines[name]["ci"]
        assert low <= headlines[name]["change"] <= high
    assert "## Suspect items" in output and "| run | accuracy | without the suspects |" in output
    with capsys.disabled():
        print(f"\nplanted mislabels, seed 0, k = 10 of 19: recall {recall:.2f}, precision {precision:.2f}")
    many = [recall_precision({int(s["key"]) for s in suspects(_runs(s), 10)}, s["planted"])
            for s in (simulate(np.random.default_rng(seed)) for seed in range(20))]
    with capsys.disabled():
        print(f"over 20 simulated sets: recall {np.mean([r for r, _ in many]):.3f}, "
              f"precision {np.mean([p for _, p in many]):.3f}")


def _runs(sim: dict) -> dict:
    return {f"m{m}": {str(i): {"answer": int(a), "gold": int(sim["gold"][i])} for i, a in enumerate(answers)}
            for m, answers in enumerate(sim["answers"])}


def test_planted_image_overlaps_are_found_by_hash_not_bytes(tmp_path):
    pytest.importorskip("imagehash")
    from PIL import Image

    images = image_folder(tmp_path / "images")
    data = write_items(tmp_path / "items.jsonl", [
        {"id": f"q{n}", "question": f"Q{n}?", "options": ["x", "y"], "answer": "A", "image": f"a{n}.png", "scene": n}
        for n in range(6)])
    other, training = tmp_path / "other", tmp_path / "training"
    other.mkdir()
    training.mkdir()
    Image.open(images / "a1.png").resize((200, 150)).save(other / "copy1.jpg", quality=70)
    Image.open(images / "a4.png").resize((400, 400)).save(other / "copy4.jpg", quality=85)
    for n in (20, 21):
        pattern(n).save(other / f"new{n}.png")
    Image.open(images / "a2.png").resize((128, 128)).save(training / "seen.png")
    pattern(30).save(training / "unseen.png")
    for copy, original in (("other/copy1.jpg", "a1.png"), ("training/seen.png", "a2.png")):
        assert hashlib.sha256((tmp_path / copy).read_bytes()).digest() != \
            hashlib.sha256((images / original).read_bytes()).digest()
    with registered():
        output = invoke("audit", "data", "quality-demo", "--data", data, "--images", images, "--against",
                        f"other={other}", "--training", training, "--out", tmp_path / "a.json")
    pairs = {tuple(p["sets"]): p for p in json.loads((tmp_path / "a.json").read_text())["overlap"]}
    assert pairs[("audited", "other")]["shared_items"]["audited"] == ["q1", "q4"]
    assert pairs[("audited", "other")]["shared_items"]["other"] == ["copy1.jpg", "copy4.jpg"]
    assert pairs[("audited", "training")]["shared_items"]["audited"] == ["q2"]
    assert pairs[("other", "training")]["images"] == 0
    assert "| audited – other | 2 | 2 of 6 | 2 of 4 |" in output


def test_overlap_without_the_extra_is_refused_naming_it(tmp_path, monkeypatch):
    import sys

    images = image_folder(tmp_path / "images")
    data = write_items(tmp_path / "items.jsonl", [{"id": "q0", "question": "Q?", "options": ["x", "y"], "answer": "A",
                                                    "image": "a0.png", "scene": 0}])
    monkeypatch.setitem(sys.modules, "imagehash", None)  # as if the audit extra were not installed
    with registered():
        output = invoke("audit", "data", "quality-demo", "--data", data, "--images", images, "--training", images,
                        code=2)
    assert "pip install 'spatialprobe[audit]'" in output


def test_composition_reweights_a_runs_score_to_uniform_answers_and_groups(tmp_path):
    records, script = [], {}
    said = {i: "B" if i in (0, 5, 10, 20, 23) else "A" for i in range(24)}
    for i in range(24):  # gold A on 18 items (15 answered right), gold B on 6 (2 right)
        gold = "A" if i < 18 else "B"
        question = f"Which side is thing {i} on?"
        records.append({"id": f"q{i}", "question": question, "options": list(OPTIONS[:2]), "answer": gold,
                        "scene": f"s{i // 2}", "type": "near" if i % 3 else "far"})
        script[question] = [said[i]]
    data = write_items(tmp_path / "items.jsonl", records)
    model = write_model(tmp_path / "model", script)
    with registered():
        invoke("bench", "quality-demo", "--data", data, "--model", model, "--protocol", "generate",
               "--out", tmp_path / "run")
        output = invoke("audit", "data", tmp_path / "run", "--by", "answer", "--by", "type",
                        "--out", tmp_path / "a.json")
    (answer, kind) = json.loads((tmp_path / "a.json").read_text())["composition"]["run"]
    right = {i: said[i] == ("A" if i < 18 else "B") for i in range(24)}
    assert answer["as_is"]["value"] == pytest.approx(100 * 17 / 24)
    assert answer["groups"]["A"]["score"] == pytest.approx(100 * 15 / 18)
    assert answer["uniform"]["value"] == pytest.approx(100 * (15 / 18 + 2 / 6) / 2)
    near = np.mean([right[i] for i in range(24) if i % 3])
    far = np.mean([right[i] for i in range(24) if not i % 3])
    assert kind["uniform"]["value"] == pytest.approx(100 * (near + far) / 2)
    low, high = answer["uniform"]["ci"]
    assert low < answer["uniform"]["value"] < high
    assert "## Composition" in output


def test_mixed_targets_and_unused_options_are_refused(tmp_path):
    with registered():
        data = write_items(tmp_path / "items.jsonl", [{"id": 1, "question": "Q", "answer": "1", "scene": "a"}])
        refused = invoke("audit", "data", "quality-demo", "--data", data, "--by", "answer", code=2)
        assert "--by re-weights a run's score" in refused
        assert "give --images" in invoke("audit", "data", "quality-demo", "--data", data, "--training", tmp_path,
                                         code=2)
