"""SpatialMQA: loader (extra keys, malformed records), perspective/axis, matching, metrics, runs."""

from __future__ import annotations

import json

import pytest
from interval_helpers import wilson
from vl_helpers import solid_image

from spatialprobe.benchmarks.spatialmqa import (
    axis,
    extra_key_report,
    load_spatialmqa,
    load_spatialmqa_file,
    perspective,
)
from spatialprobe.files import DataError
from spatialprobe.readers.option_parser import lenient_correct, lenient_label, strict_label

RECORDS = [
    {"image": "a.jpg", "question": "Where is the cat located relative to the dog?",
     "options": ["in front of", "behind", "left of", "right of"], "answer": "left of"},
    {"image": "b.jpg", "question": "If you were the man in the image, where would the sun be "
     "located relative to you?", "options": ["left of", "right of"], "answer": "right of"},
    {"image": "a.jpg", "question": "If you were the girl in the image, from your perspective, "
     "where would the book be located relative to the laptop?",
     "options": ["on/above", "below", "left of", "right of", "in front of", "behind"],
     "answer": "on/above", ",answer": "on/above"},
]


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_loader_ids_perspective_axis_and_extra_keys(tmp_path):
    write(tmp_path / "test.jsonl", RECORDS)
    rows = load_spatialmqa(tmp_path, "test")
    assert [r.id for r in rows] == ["test-00000", "test-00001", "test-00002"]
    assert [r.perspective for r in rows] == ["outside", "first", "third"]
    assert [r.axis for r in rows] == ["x", "x", "y"]
    assert rows[2].extra_keys == (",answer",)
    assert extra_key_report(rows) == {",answer": ["test-00002"]}
    again = load_spatialmqa_file(write(tmp_path / "copy.jsonl", RECORDS[::-1]))
    assert again[0].content_hash == rows[2].content_hash != rows[0].content_hash


@pytest.mark.parametrize("question, expected", [
    ("For the clock in the image, does the minute hand point above or below the 3 mark?", "outside"),
    ("On which side of the pole is the sun located?", "outside"),
    ("If you were the athlete in the image, where is the sun?", "first"),
    ("If you are the person on the right side of the image, where is the TV located relative to you?", "first"),
    ("If you were the giraffe, which side of the fence would you be?", "third"),
    ("If you are sitting at the desk, from your perspective, where is the phone relative to the mouse?", "third"),
])
def test_perspective_rules(question, expected):
    assert perspective(question) == expected


def test_axis_from_answer():
    assert [axis(a) for a in ("left of", "below", "in front of", "behind", "on/above", "near")] == \
        ["x", "y", "z", "z", "y", "?"]


@pytest.mark.parametrize("record, field", [
    ({"question": "Q?", "options": ["left of", "right of"], "answer": "left of"}, "image"),
    ({"image": "a.jpg", "question": "Q?", "options": "left of", "answer": "left of"}, "options"),
    ({"image": "a.jpg", "question": "Q?", "options": ["left of"], "answer": "left of"}, "options"),
    ({"image": "a.jpg", "question": "Q?", "options": ["left of", "right of"], "answer": "below"}, "answer"),
])
def test_malformed_records(tmp_path, record, field):
    path = write(tmp_path / "dev.jsonl", [RECORDS[0], record])
    with pytest.raises(DataError) as err:
        load_spatialmqa_file(path)
    assert (err.value.line, err.value.field) == (2, field)


def test_strict_and_lenient_matching():
    options = ("on/above", "below", "left of", "right of")
    assert strict_label("Left of.", options) == "left of"
    assert strict_label("left", options) == "--"
    assert lenient_correct("left", "left of") and lenient_correct("The answer is left of", "left of")
    assert not lenient_correct("right", "left of")
    assert lenient_correct("on", "on/above") and lenient_correct("above", "on/above")
    assert lenient_correct("in front of", "on/above")  # the benchmark's substring quirk, kept
    assert lenient_label("right", "left of") == "right of"
    assert lenient_label("", "left of") == "--" and lenient_label("purple", "below") == "--"


@pytest.mark.parametrize(("reply", "gold", "strict", "official"), [
    ("B", "behind", "below", "below"),  # a letter is the option it names, never its own substring
    ("D", "behind", "behind", "behind"),
    ("(D) behind", "behind", "--", "behind"),  # strict: not exactly an option; the authors: "behind" is in it
    ("behind, I think", "behind", "--", "behind"),  # a free reply graded as it is
    ("in front of", "on/above", "in front of", "in front of"),  # the on/above clause changes nothing as run
    ("It is in front of the car.", "on/above", "--", "--"),
    ("b", "on/above", "--", "on/above"),  # "b" is in "above": the authors' substring test
    ("", "behind", "--", "--"),
    ("purple", "behind", "--", "--"),
])
def test_an_answer_is_read_as_the_authors_scripts_read_it(reply, gold, strict, official):
    """SpatialMQA's official reader is the experiment scripts' lenient verdict as calculate_xyz.py
    runs it (substring either way, the on/above clause discarded); a letter (the question wording
    asks for one) is that option's text; ``strict`` reads only an option's exact letter or text."""
    from spatialprobe.readers.base import Asked, get

    options = ("on/above", "below", "in front of", "behind")
    asked = Asked("test-0", options, options, gold)
    assert get("strict").reply(reply, asked).pred == strict
    assert get("spatialmqa").reply(reply, asked).pred == official


def test_an_option_chosen_by_likelihood_is_read_as_itself():
    from spatialprobe.readers.base import Asked, get

    options = ("on/above", "below", "in front of", "behind")
    asked = Asked("test-0", options, options, "on/above")
    for name in ("strict", "spatialmqa"):
        assert get(name).scores([-3.0, -2.0, -1.0, -4.0], asked).pred == "in front of"


def classification_metrics(gold, pred):
    """SpatialMQA's official statistics (the registry's, as the runs compute them), in percent to 2 places."""
    from spatialprobe.benchmarks.spatialmqa import STATISTICS
    from spatialprobe.metrics.estimates import point_estimates
    from spatialprobe.metrics.intervals import Resampling
    from spatialprobe.readers.option_parser import SPATIALMQA_LABEL_ORDER

    rows = [{"instance_id": n, "gold": g, "pred": p} for n, (g, p) in enumerate(zip(gold, pred, strict=True))]
    spec = Resampling(tuple(SPATIALMQA_LABEL_ORDER), ("instance_id",), key=("instance_id",), metrics=STATISTICS)
    return {**{k: round(m.mean, 2) for k, m in point_estimates(rows, spec).items()}, "n": len(rows)}


def test_macro_metrics_known_values():
    m = classification_metrics(["left of", "right of", "left of"], ["left of", "left of", "left of"])
    # precision: left 2/3, right 0 -> 33.33; recall: left 1, right 0 -> 50; F1: left .8, right 0 -> 40
    assert m == {"accuracy": 66.67, "precision": 33.33, "recall": 50.0, "f1": 40.0, "macro_f1": 40.0,
                 "n": 3}


def test_f1_is_the_benchmarks_harmonic_mean_of_macro_p_and_r():
    """calculate_prf1.py: F1 = 2PR/(P+R) of macro P and R, not the mean of per-class F1s."""
    m = classification_metrics(["left of"] * 3 + ["right of"], ["left of", "left of", "right of", "right of"])
    # left: P 2/2, R 2/3, F1 .8; right: P 1/2, R 1/1, F1 2/3 -> macro P .75, macro R .8333
    assert (m["precision"], m["recall"]) == (75.0, 83.33)
    assert m["f1"] == 78.95      # 2 * .75 * .8333 / (.75 + .8333), what published tables report
    assert m["macro_f1"] == 73.33  # (.8 + .6667) / 2


class Echo:
    """Replies with a fixed text per question (the generate protocol)."""

    name = "echo"
    protocols = ("generate",)
    wordings = ("question",)

    def __init__(self, outputs):
        self.outputs = outputs

    def describe(self):
        return {"method": "fixed"}

    def generate(self, requests):
        return [next(reply for q, reply in self.outputs.items() if q in r.prompt) for r in requests]


def run_spatialmqa(model, data, images, out, *, answerer=None, part="test", skip_missing=False, **options):
    """SpatialMQA's ``part`` asked of ``answerer`` (an Echo: by generation) through the ask kind."""
    from spatialprobe.benchmarks.spatialmqa import spatialmqa_source
    from spatialprobe.engine.run import ask_run
    from spatialprobe.runner.settings import Component

    source, _ = spatialmqa_source(data / f"{part}.jsonl", images, part, None, skip_missing)
    name = getattr(answerer, "name", "generate")
    return ask_run(source, answerer, Component(name, {"model": model}), None, out,
                   **{"protocol": "generate", **options})


def test_run_reports_strict_lenient_per_perspective_and_axis(tmp_path):
    from spatialprobe.store import list_runs

    write(tmp_path / "data" / "test.jsonl", RECORDS)
    solid_image(tmp_path / "coco" / "test2017" / "a.jpg")  # b.jpg is missing
    echo = Echo({RECORDS[0]["question"]: "left", RECORDS[2]["question"]: "on/above"})
    with pytest.raises(DataError) as refused:  # a missing image: refused, named, nothing written
        run_spatialmqa("fixed", tmp_path / "data", tmp_path / "coco", tmp_path / "run", answerer=echo)
    assert str(refused.value) == (f"{tmp_path / 'coco'}: 1 of 3 questions have no image here (first: b.jpg); "
                                  "add the images, or pass --skip-missing to evaluate the 2 that have one "
                                  "(counted and recorded)")
    assert not (tmp_path / "run").exists()
    summary = run_spatialmqa("fixed", tmp_path / "data", tmp_path / "coco", tmp_path / "run", answerer=echo,
                             skip_missing=True)
    metrics, details = summary["metrics"], summary["details"]
    assert summary["kind"] == "ask" and summary["task"] == "spatialmqa"
    assert details["missing_images"] == ["b.jpg"]
    # strict: "left" is not an option verbatim (wrong), "on/above" is (right). Both questions are
    # about image a.jpg: one image, nothing to resample, so every interval is null
    na = {"std": None, "n": 1, "ci": None}
    assert metrics["strict_accuracy"] == {"mean": 50.0, "std": None, "n": 2, "ci": None, "breakdown": {
        "perspective outside": {"mean": 0.0, **na}, "perspective third": {"mean": 100.0, **na},
        "axis x": {"mean": 0.0, **na}, "axis y": {"mean": 100.0, **na}}}
    # lenient (the headline): both right
    assert summary["accuracy"]["mean"] == 100.0 and summary["accuracy"]["std"] is None
    assert summary["accuracy"]["breakdown"]["perspective outside"]["mean"] == 100.0
    assert summary["macro_f1"]["mean"] == 100.0 and metrics["f1"]["mean"] == 100.0
    # strict labels: "--" for "left" (gold "left of"), "on/above" right: P = (0 + 1)/2, R = (0 + 1)/2
    assert (metrics["strict_precision"]["mean"], metrics["strict_recall"]["mean"]) == (50.0, 50.0)
    assert metrics["strict_f1"]["mean"] == 50.0 and metrics["strict_macro_f1"]["mean"] == 50.0
    assert details["extra_keys"] == {",answer": ["test-00002"]}
    assert details["coverage"] == {"used": 2, "total": 3, "skipped_missing": 1, "skip_missing": True, "limit": None}
    table = (tmp_path / "run" / "table.md").read_text().splitlines()
    assert table[0].startswith("Coverage: 2 of 3 questions (1 images missing, skipped with --skip-missing).")
    assert list_runs()[0]["kind"] == "ask"
    with pytest.raises(ValueError, match="none of the 3 images"):
        run_spatialmqa("fixed", tmp_path / "data", tmp_path / "nowhere", tmp_path / "run2", answerer=echo)


def test_intervals_resample_images_with_known_answers(tmp_path):
    # four images, each asked where a cat is (left of) and where a dog is (right of)
    records = [{"image": f"{n}.jpg", "question": f"Where is the {animal} {n} relative to the tree?",
                "options": ["left of", "right of"], "answer": answer}
               for n in range(4) for animal, answer in (("cat", "left of"), ("dog", "right of"))]
    write(tmp_path / "data" / "test.jsonl", records)
    for n in range(4):
        solid_image(tmp_path / "coco" / "test2017" / f"{n}.jpg")
    perfect = Echo({r["question"]: r["answer"] for r in records})
    m = run_spatialmqa("fixed", tmp_path / "data", tmp_path / "coco", tmp_path / "right", answerer=perfect)["metrics"]
    # all right: the accuracies get the Wilson interval of their 8 rows (t_3, four images), never
    # [100, 100]; the F1s, P and R (no proportions of rows, SE 0) the boundary Wilson interval at
    # L x n_min = 2 labels x 4 rows: the same
    for name in ("accuracy", "strict_accuracy", "macro_f1", "f1", "precision", "recall", "strict_f1"):
        assert (m[name]["mean"], m[name]["ci"]) == (100.0, wilson(1.0, 0.0, 8, 4)), name
    # always "left of": each image has one right and one wrong answer, in every resample alike:
    # accuracy 50; P(left) 1/2, R(left) 1, right never said: macro P 25, R 50, F1 2PR/(P+R) 33.33,
    # macro-F1 (2/3 + 0)/2 = 33.33 - each its own value in every resample
    blind = Echo({r["question"]: "left of" for r in records})
    summary = run_spatialmqa("fixed", tmp_path / "data", tmp_path / "coco", tmp_path / "blind", answerer=blind)
    m = summary["metrics"]
    for name, value in (("accuracy", 50.0), ("precision", 25.0), ("recall", 50.0), ("f1", 100 / 3),
                        ("macro_f1", 100 / 3), ("strict_accuracy", 50.0)):
        assert m[name]["mean"] == pytest.approx(value), name
        assert m[name]["ci"] == pytest.approx([value, value], abs=0.005), name
    assert summary["intervals"]["method"] == "cluster-robust standard error over images"
    assert summary["intervals"]["clusters"] == ["image"]


class DropsLast(Echo):
    """A faulty answerer: one answer short for every batch."""

    def generate(self, requests):
        return super().generate(requests)[:-1]


def test_an_answerer_one_answer_short_is_an_error_not_fewer_scored_questions(tmp_path):
    write(tmp_path / "data" / "test.jsonl", RECORDS)
    solid_image(tmp_path / "coco" / "test2017" / "a.jpg")
    short = DropsLast({RECORDS[0]["question"]: "left", RECORDS[2]["question"]: "on/above"})
    with pytest.raises(ValueError, match=r"zip\(\) argument 3 is shorter than arguments 1-2"):
        run_spatialmqa("fixed", tmp_path / "data", tmp_path / "coco", tmp_path / "run", answerer=short,
                       skip_missing=True)


def test_command_with_tiny_clip_and_tiny_generative_model(tmp_path):
    from typer.testing import CliRunner
    from vl_helpers import tiny_clip, tiny_llava

    from spatialprobe.cli import app
    from spatialprobe.reports.tables import pm

    write(tmp_path / "data" / "dev.jsonl", RECORDS[:2])
    for name in ("a.jpg", "b.jpg"):
        solid_image(tmp_path / "coco" / name)
    clip_dir = tiny_clip(tmp_path / "clip")
    result = CliRunner().invoke(app, ["spatialmqa", "--model", str(clip_dir), "--data", str(tmp_path / "data"),
                                      "--images", str(tmp_path / "coco"), "--part", "dev",
                                      "--out", str(tmp_path / "run-clip"), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in (tmp_path / "run-clip" / "predictions.jsonl").read_text().splitlines()]
    for row, record in zip(rows, RECORDS, strict=False):  # CLIP picks the best-scoring option
        best = max(range(len(row["scores"])), key=row["scores"].__getitem__)
        assert row["pred"] == row["pred_strict"] == row["pred_lenient"] == record["options"][best]
    method = CliRunner().invoke(app, ["spatialmqa", "--model", str(clip_dir), "--data", str(tmp_path / "data"),
                                      "--images", str(tmp_path / "coco"), "--part", "dev", "--method", "clip",
                                      "--out", str(tmp_path / "run-method"), "--device", "cpu"])
    assert method.exit_code == 0, method.output  # --method clip: the contrastive wording, the same answers
    assert (tmp_path / "run-method" / "predictions.jsonl").read_text() == \
        (tmp_path / "run-clip" / "predictions.jsonl").read_text()
    replay = CliRunner().invoke(app, ["run", str(tmp_path / "run-clip"), "--out", str(tmp_path / "copy")])
    assert replay.exit_code == 0, replay.output
    assert (tmp_path / "copy" / "predictions.jsonl").read_text() == \
        (tmp_path / "run-clip" / "predictions.jsonl").read_text()
    config = json.loads((tmp_path / "run-clip" / "config.json").read_text())
    assert config["kind"] == "ask" and config["settings"]["wording"] == "contrastive"
    assert config["settings"]["model"]["name"] == "contrastive" and "device" not in config["settings"]["model"]["args"]
    f1 = json.loads((tmp_path / "run-clip" / "summary.json").read_text())["metrics"]["f1"]
    assert f"(F1 {f1['mean']:.1f}% as the benchmark computes it)" in " ".join(result.output.split())
    report = CliRunner().invoke(app, ["report", str(tmp_path / "run-clip")])
    assert report.exit_code == 0, report.output
    # the columns are the benchmark's official list (its F1 is 2PR/(P+R)), headed by each statistic's name
    assert report.output.splitlines()[0] == ("| run | ask spatialmqa acc | ask spatialmqa macro-F1 | ask spatialmqa F1 "
                                             "| ask spatialmqa P | ask spatialmqa R |")
    assert report.output.splitlines()[2].split(" | ")[3] == pm(f1)

    llava_dir = tiny_llava(tmp_path / "llava", always_left=True)
    summary = run_spatialmqa(str(llava_dir), tmp_path / "data", tmp_path / "coco", tmp_path / "run-gen",
                             part="dev", max_new_tokens=1, device="cpu")
    rows = [json.loads(x) for x in (tmp_path / "run-gen" / "predictions.jsonl").read_text().splitlines()]
    assert [r["reply"] for r in rows] == ["left", "left"]
    assert summary["metrics"]["strict_accuracy"]["mean"] == 0.0
    assert summary["accuracy"]["mean"] == 50.0  # lenient: "left" matches "left of"
    result = CliRunner().invoke(app, ["spatialmqa", "--model", str(llava_dir), "--data", str(tmp_path / "data"),
                                      "--images", str(tmp_path / "coco"), "--part", "dev", "--limit", "1",
                                      "--out", str(tmp_path / "run-gen2"), "--device", "cpu", "--method", "generate",
                                      "--max-new-tokens", "1", "--backend", "generate"])  # no chat template
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "run-gen2" / "summary.json").read_text())
    assert summary["details"]["protocols"] == ["generate"] and summary["details"]["model_info"]["method"] == "generate"
    # the reply "left" names no option whole (strict: --), and leniently matches the gold "left of"
    row = json.loads((tmp_path / "run-gen2" / "predictions.jsonl").read_text())
    assert row["reply"] == "left" and row["pred_strict"] == "--" and row["pred_lenient"] == "left of"


def test_method_that_does_not_fit_the_model_is_refused(tmp_path):
    from typer.testing import CliRunner
    from vl_helpers import tiny_clip, tiny_llava

    from spatialprobe.cli import app

    write(tmp_path / "data" / "dev.jsonl", RECORDS[:1])
    solid_image(tmp_path / "coco" / "a.jpg")
    llava, clip = tiny_llava(tmp_path / "llava"), tiny_clip(tmp_path / "clip")
    for model, method, message in (
            (llava, "clip", "spatialmqa cannot ask '" + str(llava) + "': the hf-mllm, generate adapter(s) that "
                            "accept it understand none of the wordings its items offer (contrastive)."),
            (clip, "generate", "the contrastive model cannot answer by --protocol generate (it has no "
                               "generate); it answers by likelihood.")):
        result = CliRunner().invoke(app, ["spatialmqa", "--model", str(model), "--data", str(tmp_path / "data"),
                                          "--images", str(tmp_path / "coco"), "--part", "dev",
                                          "--method", method, "--out", str(tmp_path / f"run-{method}")])
        assert result.exit_code == 2 and message in " ".join(result.output.split())
        assert not (tmp_path / f"run-{method}" / "summary.json").exists()


def test_generative_prompt_uses_the_chat_template_when_there_is_one(tmp_path):
    from transformers import AutoProcessor
    from vl_helpers import tiny_llava

    from spatialprobe.models.mqa_models import GenerativeAnswerer

    model_dir = tiny_llava(tmp_path / "llava", always_left=True)
    plain = GenerativeAnswerer(str(model_dir), device="cpu", max_new_tokens=2)
    assert plain._text("where is the cat ?", ["left of", "right of"]).startswith("<image>\n")
    processor = AutoProcessor.from_pretrained(model_dir)
    processor.chat_template = ("{% for m in messages %}USER: {% for c in m['content'] %}"
                               "{% if c['type'] == 'image' %}<image>\n{% else %}{{ c['text'] }}"
                               "{% endif %}{% endfor %}{% endfor %} ASSISTANT:")
    processor.save_pretrained(model_dir)
    chat = GenerativeAnswerer(str(model_dir), device="cpu", max_new_tokens=2)
    text = chat._text("where is the cat ?", ["left of", "right of"])
    assert text.startswith("USER: <image>\n") and text.endswith("Options: left of; right of ASSISTANT:")
    image = solid_image(tmp_path / "x.png")
    assert chat.answer_batch([(image, "where is the cat ?", ("left of", "right of"))]) == [{"output": "left left"}]


def test_encoder_decoder_output_is_not_cut_by_the_prompt_length(tmp_path):
    """Encoder-decoder generators (InstructBLIP-Flan-T5, as in the SpatialMQA paper) return only
    the new tokens; cutting the prompt's length off them would leave an empty answer."""
    torch = pytest.importorskip("torch")
    from vl_helpers import LLAVA_WORDS, tiny_llava

    from spatialprobe.models.mqa_models import GenerativeAnswerer

    answerer = GenerativeAnswerer(str(tiny_llava(tmp_path / "llava")), device="cpu")
    answer = [LLAVA_WORDS.index("right"), LLAVA_WORDS.index("of")]
    answerer.model.generate = lambda **kwargs: torch.tensor([answer])  # new tokens only
    image = solid_image(tmp_path / "x.png")
    assert answerer.answer_batch([(image, "where is the cat ?", ("left of", "right of"))]) == \
        [{"output": "right of"}]


def test_scorer_args_reach_the_generate_adapter_and_are_checked(tmp_path):
    from typer.testing import CliRunner
    from vl_helpers import tiny_clip, tiny_llava

    from spatialprobe.cli import app

    write(tmp_path / "data" / "dev.jsonl", RECORDS[:1])
    solid_image(tmp_path / "coco" / "a.jpg")
    llava = tiny_llava(tmp_path / "llava", always_left=True)
    base = ["spatialmqa", "--data", str(tmp_path / "data"), "--images", str(tmp_path / "coco"),
            "--part", "dev", "--device", "cpu"]
    result = CliRunner().invoke(app, [*base, "--model", str(llava), "--out", str(tmp_path / "gen"),
                                      "--backend", "generate", "--protocol", "generate", "--max-new-tokens", "3"])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "gen" / "config.json").read_text())
    assert config["settings"]["model"]["name"] == "generate" and config["settings"]["max_new_tokens"] == 3
    rows = [json.loads(x) for x in (tmp_path / "gen" / "predictions.jsonl").read_text().splitlines()]
    assert [r["reply"] for r in rows] == ["left left left"]
    unused = CliRunner().invoke(app, [*base, "--model", str(llava), "--out", str(tmp_path / "gen2"),
                                      "--backend", "generate", "--scorer-arg", "max_new_tokens=3"])
    assert unused.exit_code == 2 and "--scorer-arg max_new_tokens does not apply when the generate model is asked " \
        "spatialmqa items" in " ".join(unused.output.split())
    result = CliRunner().invoke(app, [*base, "--model", str(tiny_clip(tmp_path / "clip")),
                                      "--out", str(tmp_path / "clip-run"), "--scorer-arg", "max_new_tokens=3"])
    assert result.exit_code == 2
    assert "Error: the contrastive model takes no option 'max_new_tokens'; its options: none." in result.output
    assert not (tmp_path / "clip-run" / "summary.json").exists()
