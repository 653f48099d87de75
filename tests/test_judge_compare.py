"""``judge compare``: known agreement, kappa, accuracy against people and Kendall's tau, from
hand-written judgements and from the shapes backend judged by the colour detector (CLI, end to end)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.runner.summary import build_summary

runner = CliRunner()
FLIP = {"above": "below", "below": "above"}


def invoke(*args, code=0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output + repr(result.exception)
    return result


def fake_run(path: Path, kind: str, rows: list[dict], image_run: str = "/images/a", model: str = "m:a",
             **settings) -> Path:
    """A finished run folder as the spine writes it (config, summary, predictions), by hand."""
    path.mkdir(parents=True)
    identity = hashlib.sha256(str(path).encode()).hexdigest()
    config = {"kind": kind, "identity": identity, "runtime": {},
              "settings": {"task": "posrel", "source": {"path": image_run, "identity": None}, **settings}}
    summary = build_summary(kind=kind, task="posrel", model=model, dataset="d", seed=0, metrics={},
                            details={}, identity=identity, provenance={})
    (path / "config.json").write_text(json.dumps(config))
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def judged(golds, preds, recognized=None):
    return [{"instance_id": f"p{i}", "image_index": 0, "gold": g, "pred": p,
             "recognized": True if recognized is None else recognized[i]}
            for i, (g, p) in enumerate(zip(golds, preds, strict=True))]


def verdict_judges(tmp_path, plan, **where):
    """Two judges of the same images; ``plan`` holds (A right?, B right?) per image."""
    golds = ["above" if i % 2 else "below" for i in range(len(plan))]
    a = [g if ok else FLIP[g] for g, (ok, _) in zip(golds, plan, strict=True)]
    b = [g if ok else FLIP[g] for g, (_, ok) in zip(golds, plan, strict=True)]
    return (fake_run(tmp_path / "a", "judge", judged(golds, a), rule="a", **where),
            fake_run(tmp_path / "b", "judge", judged(golds, b), rule="b", **where))


def summary_of(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def part(summary: dict, metric: str, name: str) -> dict:
    return summary["metrics"][metric]["breakdown"][name]


def test_planted_verdict_disagreement_gives_the_known_agreement_and_kappa(tmp_path):
    # 10 both right, 6 both wrong, 2 only A right, 2 only B right: agreement 16/20
    plan = [(True, True)] * 10 + [(False, False)] * 6 + [(True, False)] * 2 + [(False, True)] * 2
    a, b = verdict_judges(tmp_path, plan)
    invoke("judge", "compare", a, b, "--out", tmp_path / "cmp")
    summary = summary_of(tmp_path / "cmp")
    observed = 16 / 20
    expected = (12 / 20) * (12 / 20) + (8 / 20) * (8 / 20)  # both judges: 12 right, 8 wrong
    kappa = (observed - expected) / (1 - expected)
    assert kappa == pytest.approx(7 / 12)
    pair = "m:a · judge rule=a | judge rule=b"
    assert part(summary, "agreement", pair)["mean"] == pytest.approx(80.0)
    assert part(summary, "kappa", pair)["mean"] == pytest.approx(kappa)
    assert part(summary, "score", "m:a · judge rule=a")["mean"] == pytest.approx(60.0)
    assert part(summary, "score", "m:a · judge rule=b")["mean"] == pytest.approx(60.0)
    low, high = part(summary, "kappa", pair)["ci"]
    assert low < kappa < high
    table = (tmp_path / "cmp" / "table.md").read_text()
    assert "compared on 20 images that every judge judged (judge rule=a: 20, judge rule=b: 20)" in table
    assert "| judge rule=a | judge rule=b | 80.0 [" in table and "| 0.583 [" in table
    assert "1000 resamples, seed 0" in table
    assert (tmp_path / "cmp" / "agreement.png").stat().st_size > 0
    assert not (tmp_path / "cmp" / "ranking.png").exists()  # one model: no ranking
    everything = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [r["path"] for r in everything["runs"]] == [str(a.resolve()), str(b.resolve())]
    assert everything["provenance"]["toolkit"] == "spatialprobe"
    assert everything["settings"]["seed"] == 0 and everything["settings"]["resamples"] == 1000


def test_label_kappa_by_hand(tmp_path):
    # confusion of A's labels (rows) against B's (columns), three posrel labels: 9 of 12 agree
    confusion = [[3, 1, 0], [0, 4, 1], [1, 0, 2]]
    labels = ["above", "below", "inside"]
    pairs = [(labels[i], labels[j]) for i in range(3) for j in range(3) for _ in range(confusion[i][j])]
    golds = ["above"] * len(pairs)
    fake_run(tmp_path / "a", "judge", judged(golds, [p for p, _ in pairs]), rule="a")
    fake_run(tmp_path / "b", "judge", judged(golds, [q for _, q in pairs]), rule="b")
    invoke("judge", "compare", tmp_path / "a", tmp_path / "b", "--on", "label", "--out", tmp_path / "cmp")
    rows_a, cols_b = [sum(r) / 12 for r in confusion], [sum(c) / 12 for c in zip(*confusion, strict=True)]
    expected = sum(p * q for p, q in zip(rows_a, cols_b, strict=True))  # 50/144
    kappa = (9 / 12 - expected) / (1 - expected)
    assert kappa == pytest.approx(29 / 47)
    summary = summary_of(tmp_path / "cmp")
    assert part(summary, "kappa", "m:a · judge rule=a | judge rule=b")["mean"] == pytest.approx(kappa)
    assert part(summary, "agreement", "m:a · judge rule=a | judge rule=b")["mean"] == pytest.approx(75.0)


def test_identical_judges_agree_fully_with_kappa_one(tmp_path):
    plan = [(True, True)] * 6 + [(False, False)] * 4
    a, b = verdict_judges(tmp_path, plan)
    invoke("judge", "compare", a, b, "--out", tmp_path / "cmp")
    summary = summary_of(tmp_path / "cmp")
    pair = "m:a · judge rule=a | judge rule=b"
    # agreement at 100 %: Wilson over the 10 prompts (statsmodels), not the bootstrap's [100, 100]
    from statsmodels.stats.proportion import proportion_confint

    low = round(100 * proportion_confint(10, 10, alpha=0.05, method="wilson")[0], 5)
    assert part(summary, "agreement", pair) == {"mean": 100.0, "std": None, "n": 10, "ci": [low, 100.0]}
    assert part(summary, "kappa", pair) == {"mean": 1.0, "std": None, "n": 10, "ci": [1.0, 1.0]}
    assert f"| judge rule=a | judge rule=b | 100.0 [{low:.1f}, 100.0] | 1.000 [1.000, 1.000] |" in (
        tmp_path / "cmp" / "table.md").read_text()


def test_kappa_is_undefined_not_nan_when_both_judges_give_one_answer(tmp_path):
    a, b = verdict_judges(tmp_path, [(True, True)] * 6)
    invoke("judge", "compare", a, b, "--out", tmp_path / "cmp")
    text = (tmp_path / "cmp" / "summary.json").read_text()
    assert "NaN" not in text
    kappa = part(json.loads(text), "kappa", "m:a · judge rule=a | judge rule=b")
    assert kappa == {"mean": None, "std": None, "n": 6, "ci": None}
    why = ("judge rule=a and judge rule=b both answer 'True' for every image: chance agreement is 1, "
           "so kappa is 0/0")
    assert json.loads(text)["details"]["groups"][0]["kappa"]["judge rule=a | judge rule=b"]["undefined"] == why
    assert f"| 100.0 [61.0, 100.0] | undefined ({why}) |" in (tmp_path / "cmp" / "table.md").read_text()  # Wilson, 6


def test_one_judge_with_one_answer_gets_kappa_zero_and_a_note(tmp_path):
    a, b = verdict_judges(tmp_path, [(True, True)] * 3 + [(True, False)] * 2)
    invoke("judge", "compare", a, b, "--out", tmp_path / "cmp")
    summary = summary_of(tmp_path / "cmp")
    # p_o = 3/5 = p_e (A always right): kappa 0, defined
    assert part(summary, "kappa", "m:a · judge rule=a | judge rule=b")["mean"] == 0.0
    note = "judge rule=a answers 'True' for every image, so kappa is 0 whatever the other judge says"
    assert summary["details"]["groups"][0]["kappa"]["judge rule=a | judge rule=b"]["note"] == note
    assert "| 60.0 [" in (tmp_path / "cmp" / "table.md").read_text()
    assert f"] ({note}) |" in (tmp_path / "cmp" / "table.md").read_text()


def human_rows(golds, answers_by_annotator):
    """A human run's rows: one per annotator and image (None: unanswered, guessed 'below')."""
    return [{"annotator": name, "item": f"p{i}#0", "obj_a": "a", "obj_b": "b", "gold": g, "answer": ans,
             "recognized": ans is not None, "pred": ans if ans is not None else "below"}
            for name, answers in answers_by_annotator.items()
            for i, (g, ans) in enumerate(zip(golds, answers, strict=True))]


def test_accuracy_against_people_per_relation(tmp_path):
    golds = ["above"] * 4 + ["below"] * 6
    people = ["above", "below", "above", "above", "below", "below", "above", "below", "below", "above"]
    # the judge agrees with the people on images 0, 2, 3 (above: 3 of 4) and 4, 5, 7, 8 (below: 4 of 6)
    judge = ["above", "above", "above", "above", "below", "below", "below", "below", "below", "below"]
    fake_run(tmp_path / "judge", "judge", judged(golds, judge), rule="vdg")
    fake_run(tmp_path / "human", "human", human_rows(golds, {"alice": people}), page_id="posrel-1")
    invoke("judge", "compare", tmp_path / "judge", tmp_path / "human", "--on", "label", "--out", tmp_path / "cmp")
    summary = summary_of(tmp_path / "cmp")
    assert part(summary, "accuracy_vs_people", "m:a · judge")["mean"] == pytest.approx(70.0)
    assert part(summary, "accuracy_vs_people", "m:a · judge · above")["mean"] == pytest.approx(75.0)
    assert part(summary, "accuracy_vs_people", "m:a · judge · below")["mean"] == pytest.approx(400 / 6)
    assert part(summary, "agreement", "m:a · judge | people")["mean"] == pytest.approx(70.0)
    table = (tmp_path / "cmp" / "table.md").read_text()
    assert "| judge | score (%) | vs people (%) | vs people: above (%) | vs people: below (%) |" in table
    # scores: the judge answers every gold; the people answer 7 of 10 golds
    assert "| judge | 100.0 [72.2, 100.0] | 70.0 [" in table and "| people | 70.0 [" in table  # Wilson, 10
    assert "(reference)" in table


def test_people_answer_is_the_majority_and_a_tie_has_none(tmp_path):
    golds = ["above", "above", "below"]
    answers = {"alice": ["above", "above", None], "bob": ["above", "below", None], "carol": ["below", None, None]}
    # image 0: above 2, below 1 -> above; image 1: above 1, below 1 -> tie, none; image 2: nobody
    fake_run(tmp_path / "judge", "judge", judged(golds, ["above", "above", "below"]), rule="vdg")
    fake_run(tmp_path / "human", "human", human_rows(golds, answers), page_id="posrel-1")
    invoke("judge", "compare", tmp_path / "judge", tmp_path / "human", "--on", "label", "--out", tmp_path / "cmp")
    group = summary_of(tmp_path / "cmp")["details"]["groups"][0]
    assert group["people_answered"] == 1
    assert group["vs_people"]["judge"]["all"] == {"value": 100.0, "ci": None, "n": 1}  # one image: no interval
    predictions = [json.loads(line) for line in (tmp_path / "cmp" / "predictions.jsonl").open()]
    # without a people's answer the first annotator's pred stands in (alice's, or her guess)
    assert [p["answers"]["people"] for p in predictions] == ["above", "above", "below"]
    assert [p["recognized"]["people"] for p in predictions] == [True, False, False]


def test_ranking_of_three_models_gives_the_known_kendall_tau(tmp_path):
    from scipy.stats import kendalltau

    scores = {"a": [8, 6, 4], "b": [5, 7, 3]}  # right verdicts of 10 images per model
    runs = []
    for m in range(3):
        golds = ["above"] * 10
        for judge, right in scores.items():
            preds = ["above"] * right[m] + ["below"] * (10 - right[m])
            runs.append(fake_run(tmp_path / f"{judge}{m}", "judge", judged(golds, preds),
                                 image_run=f"/images/{m}", model=f"model{m}", rule=judge))
    invoke("judge", "compare", *runs, "--out", tmp_path / "cmp")
    summary = summary_of(tmp_path / "cmp")
    tau = part(summary, "kendall_tau", "judge rule=a | judge rule=b")
    # pairs of models: (0,1) discordant, (0,2) and (1,2) concordant: (2 - 1) / 3
    assert tau["mean"] == pytest.approx(1 / 3) == kendalltau([80, 60, 40], [50, 70, 30]).statistic
    assert tau["n"] == 3 and tau["ci"][0] <= tau["ci"][1]
    ranking = summary["details"]["ranking"]
    assert ranking["ranks"] == {"judge rule=a": {"0": 1.0, "1": 2.0, "2": 3.0},
                                "judge rule=b": {"0": 2.0, "1": 1.0, "2": 3.0}}
    table = (tmp_path / "cmp" / "table.md").read_text()
    assert "| model0 | 1 (80.0) | 2 (50.0) |" in table and "| model1 | 2 (60.0) | 1 (70.0) |" in table
    assert "| judge rule=a | judge rule=b | 3 | 0.333 [" in table
    assert (tmp_path / "cmp" / "ranking.png").stat().st_size > 0


def test_compared_on_shared_images_and_unrecognized_option(tmp_path):
    golds = ["above", "below"] * 5
    fake_run(tmp_path / "a", "judge", judged(golds, golds), rule="a")
    recognized = [True] * 6 + [False] * 2
    fake_run(tmp_path / "b", "judge", judged(golds[:8], golds[:8], recognized), rule="b")
    invoke("judge", "compare", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "guess")
    assert "compared on 8 images that every judge judged (judge rule=a: 10, judge rule=b: 8)" in (
        tmp_path / "guess" / "table.md").read_text()
    invoke("judge", "compare", tmp_path / "a", tmp_path / "b", "--unrecognized", "exclude", "--out", tmp_path / "ex")
    summary = summary_of(tmp_path / "ex")
    assert summary["details"]["groups"][0]["compared"] == 6
    assert "only images every judge recognized are compared" in (tmp_path / "ex" / "table.md").read_text()


def test_refusals_name_the_folder(tmp_path):
    golds = ["above", "below"]
    a = fake_run(tmp_path / "a", "judge", judged(golds, golds), rule="a")
    other = [{**row, "instance_id": "q" + row["instance_id"]} for row in judged(golds, golds)]
    b = fake_run(tmp_path / "b", "judge", other, rule="b")
    result = invoke("judge", "compare", a, b, code=2)
    assert ("Error: the judgements of m:a (image run /images/a) share no image (judge rule=a: 2, "
            "judge rule=b: 2); they judged different images.") in result.output
    probe = fake_run(tmp_path / "probe", "probe", [])
    result = invoke("judge", "compare", a, probe, code=2)
    assert (f"Error: {probe} is a probe run; judge compare reads judgements of images: runs of kind "
            "judge, vqa-judge, visor, vqa-visor, human.") in result.output
    result = invoke("judge", "compare", a, code=2)
    assert "Error: give at least two judgement runs to compare." in result.output
    visor = fake_run(tmp_path / "visor", "visor", [], image_run="/images/a")
    result = invoke("judge", "compare", a, visor, code=2)
    assert (f"Error: {visor} is a VISOR run of a released detection file, which names no image run; judge "
            "compare compares judgements of an image run's images.") in result.output
    config = json.loads((visor / "config.json").read_text())
    config["settings"]["source"] = {"image_run": {"path": "/images/a", "identity": None}}
    (visor / "config.json").write_text(json.dumps(config))
    result = invoke("judge", "compare", a, visor, "--on", "label", code=2)
    assert ("Error: --on label compares the judges' answers, but a VISOR run gives a verdict per image only "
            "(relation found or not); compare with --on verdict.") in result.output
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    result = invoke("judge", "compare", a, a.parent / "b", "--out", tmp_path / "taken", code=2)
    assert "is not empty and not a spatialprobe run" in result.output


# ---- end to end: shapes backend -> colour detector -> annotate import -> judge compare (CLI) -----

def posrel_prompts(path: Path, count: int) -> Path:
    from spatialprobe.synthesis import load_prompts

    items = load_prompts("posrel").items[::256 // count][:count]
    path.write_text("".join(json.dumps({k: item.meta[k] for k in ("id", "text", "task", "obj_a", "obj_b", "label")})
                            + "\n" for item in items))
    return path


def test_shapes_colour_end_to_end(tmp_path):
    from spatialprobe.imagestore import ImageStore
    from spatialprobe.judging.annotation_page import annotation_items, page_id

    images = tmp_path / "images"
    invoke("synthesize", "--prompts", posrel_prompts(tmp_path / "posrel.jsonl", 32), "--backend", "shapes",
           "--error-rate", "0.25", "--batch-size", "64", "--out", images)
    for rule in ("vdg", "vdg-legacy"):
        invoke("judge", "posrel", images, "--detector", "colour", "--rule", rule, "--no-gallery",
               "--out", tmp_path / rule)
    drawn = {f"{r['prompt_id']}#{r['image_index']}": r["drawn"] for r in ImageStore(images).rows()}
    task, items = annotation_items(images)
    answers = {"format": "spatialprobe-annotations", "version": 1, "page_id": page_id(images, task, items),
               "annotator": "alice", "answers": {i["id"]: drawn[i["id"]]["drawn_relation"] for i in items}}
    (tmp_path / "alice.json").write_text(json.dumps(answers))
    invoke("annotate", "import", images, tmp_path / "alice.json", "--out", tmp_path / "human")
    out = tmp_path / "cmp"
    result = invoke("judge", "compare", tmp_path / "vdg", tmp_path / "vdg-legacy", tmp_path / "human",
                    "--on", "label", "--out", out)
    summary = summary_of(out)
    reversed_ = sum(d["reversed"] for d in drawn.values())
    model = summary["details"]["groups"][0]["model"]
    # the corrected rule reads every scene as drawn: its score is the share drawn as prompted
    assert part(summary, "score", f"{model} · judge rule=vdg")["mean"] == pytest.approx(100 * (32 - reversed_) / 32)
    assert part(summary, "accuracy_vs_people", f"{model} · judge rule=vdg")["mean"] == 100.0
    # the legacy sign swaps above and below: it agrees with the drawing only on inside / beside scenes
    level = sum(d["drawn_relation"] in ("inside", "beside") for d in drawn.values())
    pair = f"{model} · judge rule=vdg | judge rule=vdg-legacy"
    assert part(summary, "agreement", pair)["mean"] == pytest.approx(100 * level / 32)
    legacy = f"{model} · judge rule=vdg-legacy"
    assert part(summary, "accuracy_vs_people", legacy)["mean"] == pytest.approx(100 * level / 32)
    for relation, expected in (("above", 0.0), ("below", 0.0), ("inside", 100.0), ("beside", 100.0)):
        assert part(summary, "accuracy_vs_people", f"{legacy} · {relation}")["mean"] == expected
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").open()]
    a = [p["answers"]["judge rule=vdg"] for p in predictions]
    b = [p["answers"]["judge rule=vdg-legacy"] for p in predictions]
    labels = sorted(set(a) | set(b))
    chance = sum(a.count(x) * b.count(x) for x in labels) / 32 ** 2
    kappa = (level / 32 - chance) / (1 - chance)
    assert part(summary, "kappa", pair)["mean"] == pytest.approx(kappa)
    assert "| judge rule=vdg | judge rule=vdg-legacy |" in result.output
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.suffix != ".lock"}
    invoke("judge", "compare", tmp_path / "vdg", tmp_path / "vdg-legacy", tmp_path / "human",
           "--on", "label", "--out", out)  # the same comparison again: confirmed, nothing rewritten
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name in before} == before
    result = invoke("judge", "compare", tmp_path / "vdg", tmp_path / "human", "--on", "label", "--out", out, code=2)
    assert "Error:" in result.output and str(out) in result.output


def test_visor_of_shapes_sr2d_images_reads_by_image_and_replays(tmp_path, monkeypatch):
    from spatialprobe.imagestore import ImageStore
    from spatialprobe.tasks.sr2d import build_sr2d, is_spatial, prompt_lines

    records = [r for r in build_sr2d() if is_spatial(r)][:12]
    (tmp_path / "sr2d.jsonl").write_text("".join(json.dumps(line) + "\n" for line in prompt_lines(records)))
    images = tmp_path / "images"
    invoke("synthesize", "--prompts", tmp_path / "sr2d.jsonl", "--backend", "shapes", "--error-rate", "0.5",
           "--batch-size", "64", "--out", images)
    invoke("visor", images, "--detector", "colour", "--out", tmp_path / "visor")
    made = ImageStore(images).rows()
    drawn = {(r["prompt_id"], r["image_index"]): r["drawn"] for r in made}
    flipped = {key: d["reversed"] for key, d in drawn.items()}
    assert 0 < sum(flipped.values()) < 12  # both verdicts occur (what seed 0 drew)
    # a hand-made VQA-VISOR judge that calls exactly the reversed scenes wrong: it agrees with VISOR
    # on every image (VISOR's verdict rows: SR2D's relation wording is no task's label)
    identity = json.loads((images / "config.json").read_text())["identity"]
    rows = [{"key": f"{pid}_{index}", "rel": d["relation"], "correct": not d["reversed"], "both": True}
            for (pid, index), d in drawn.items()]
    fake_run(tmp_path / "judge", "vqa-visor", rows, image_run=str(images), judge_model="drawn")
    config = json.loads((tmp_path / "judge" / "config.json").read_text())
    config["settings"]["source"] = {"image_run": {"path": str(images), "identity": identity}}
    (tmp_path / "judge" / "config.json").write_text(json.dumps(config))
    monkeypatch.chdir(tmp_path)  # the default --out: runs/judge-compare-IDENTITY8 here
    invoke("judge", "compare", "visor", "judge")
    out = next((tmp_path / "runs").glob("judge-compare-*"))
    summary = summary_of(out)
    assert out.name == f"judge-compare-{summary['identity'][:8]}"
    model = summary["details"]["groups"][0]["model"]
    assert part(summary, "agreement", f"{model} · visor | vqa-visor")["mean"] == 100.0
    assert part(summary, "kappa", f"{model} · visor | vqa-visor")["mean"] == pytest.approx(1.0)
    assert part(summary, "score", f"{model} · visor")["mean"] == pytest.approx(
        100 * (12 - sum(flipped.values())) / 12)
    table = (out / "table.md").read_text()
    replay = invoke("run", out / "config.json")
    assert replay.output.rstrip().endswith(f"confirmed: identity {summary['identity'][:12]}")
    assert (out / "table.md").read_text() == table


def test_resampled_kappa_is_scikit_learns_kappa_of_the_repeated_images():
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    from spatialprobe.metrics.agreement import share, weighted_kappa

    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    b[:20] = a[:20]
    weights = np.stack([np.ones(40), rng.integers(0, 4, 40).astype(float)])
    kappas = weighted_kappa(a, b, weights)
    for w, value in zip(weights, kappas, strict=True):
        repeat = w.astype(int)  # a resample is the images repeated as often as they were drawn
        assert value == pytest.approx(cohen_kappa_score(np.repeat(a, repeat), np.repeat(b, repeat)))
    assert share(a == b, weights)[1] == pytest.approx(100 * np.mean(np.repeat(a == b, weights[1].astype(int))))


def test_judge_compare_is_a_runkind_with_typed_settings():
    import dataclasses

    from spatialprobe import registry
    from spatialprobe.runner import RunKind

    cls = registry.lookup("run-kind", "judge-compare")
    assert issubclass(cls, RunKind) and cls.kind == "judge-compare" and dataclasses.is_dataclass(cls.Settings)
    assert not {"from_spec", "from_settings", "resolved", "inputs"} & set(vars(cls))  # the base's, once


def test_answers_that_are_no_relation_of_the_task_are_refused_naming_file_line_and_field(tmp_path):
    """a human run answering "banana" is no posrel answer; kappa from it would
    mean nothing, so it is refused, as is a judge whose gold is no relation of its task."""
    golds = ["above", "below"]
    fake_run(tmp_path / "judge", "judge", judged(golds, golds), rule="vdg")
    fake_run(tmp_path / "human", "human", human_rows(golds, {"alice": ["above", "banana"]}), page_id="posrel-1")
    result = invoke("judge", "compare", tmp_path / "judge", tmp_path / "human", "--on", "label", code=2)
    assert (f"Error: {tmp_path / 'human' / 'predictions.jsonl'}, line 2, field 'pred': 'banana' is not an "
            "answer of task posrel (above, below, inside, beside)") in " ".join(result.output.split())
    fake_run(tmp_path / "odd", "judge", judged(["above", "sideways"], golds), rule="odd")
    result = invoke("judge", "compare", tmp_path / "judge", tmp_path / "odd", code=2)
    assert (f"Error: {tmp_path / 'odd' / 'predictions.jsonl'}, line 2, field 'gold': 'sideways' is not an "
            "answer of task posrel") in " ".join(result.output.split())
    # a VQA judge's verdict "not <relation>" is one of its answers
    fake_run(tmp_path / "vqa", "vqa-judge", judged(golds, ["above", "not below"]), judge_model="j")
    invoke("judge", "compare", tmp_path / "judge", tmp_path / "vqa", "--out", tmp_path / "cmp")
