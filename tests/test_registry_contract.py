"""Contract tests generated from the registry: every component resolves, and every scorer keeps the
Scorer contract (one tuple per request, one finite score per word, a JSON-serializable description)."""

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from causal_helpers import tiny_bpe_gpt2
from mllm_helpers import build as build_mllm
from mlm_helpers import tiny_wordpiece_bert
from vl_helpers import tiny_vilt

from spatialprobe import registry
from spatialprobe.models.base import GenerateRequest, Generator, Model, Option, Scorer, ScoreRequest

ENTRIES = [(kind, name) for kind in registry.kinds() for name in registry.names(kind)]


@pytest.mark.parametrize("kind,name", ENTRIES, ids=[f"{k}:{n}" for k, n in ENTRIES])
def test_every_registered_component_resolves(kind, name):
    target = registry.lookup(kind, name)
    if kind == "task":  # tasks are data, not factories
        from spatialprobe.tasks import Task

        assert isinstance(target, Task) and target.name == name
    else:
        assert callable(target)
    assert registry.summaries(kind)[name], "every component says what it is"


@pytest.mark.parametrize("name", registry.names("task"))
def test_every_task_file_is_complete(name):
    """A task's candidates load with every label answered and every template holding its
    placeholders; its built-in data (if any) loads with the task's labels, both labels occurring."""
    from spatialprobe import tasks
    from spatialprobe.prompts.templates import builtin, check_labels
    from spatialprobe.tasks import data as task_data

    task = tasks.get(name)
    candidates = builtin(name)
    assert all(p in t for t in candidates.templates for p in task.placeholders)
    if task.has_builtin_data:
        data = task_data.load(name)
        check_labels(candidates, data)
        assert data.labels == task.labels and data.task == name
        assert {inst.label for inst in data.instances} == set(task.labels)
        assert len(task_data.make_folds(data, 5, 0)) == 5


def test_unknown_names_suggest_close_ones():
    with pytest.raises(registry.UnknownComponent, match="Did you mean 'hf-mlm'"):
        registry.lookup("model", "hf-mlmm")


TEXTS = ["an ant is larger than a bird .", "a man drives the bus . he is inside the bus .",
         "is the cat left of the dog ? yes no"]


def _text_requests(image=None):
    return [ScoreRequest("An ant is ", " than a bird.", ("larger", "smaller", "bigger"), image),
            ScoreRequest("A man drives the bus. He is ", " the bus.", ("inside", "beside"), image)]


def _question_requests(image, options=("yes", "no", "left")):
    return [ScoreRequest("is the cat left of the dog ?", "", options, image),
            ScoreRequest("is the bus inside the man ?", "", options[:2], image)]


def _tiny(name: str, root, image):
    """(adapter keyword arguments, its score requests or None, its generate requests or None)."""
    from api_helpers import MODEL, vllm_like
    from qa_helpers import make_blip, make_t5, make_vilt
    from vl_helpers import tiny_clip, tiny_llava

    ask = [GenerateRequest("where is the cat ?", image, max_new_tokens=2),
           GenerateRequest("is the cat left of the dog ?", image, max_new_tokens=2)]
    builders = {
        "dummy": lambda: ({}, _text_requests(), None),
        "hf-mlm": lambda: ({"model": str(tiny_wordpiece_bert(root / "bert"))}, _text_requests(), None),
        "hf-causal": lambda: ({"model": str(tiny_bpe_gpt2(root / "gpt2"))}, _text_requests(), None),
        "vilt": lambda: ({"model": str(tiny_vilt(root / "vilt")), "image": "request"},
                         _text_requests(image), None),
        "t5": lambda: ({"model": str(make_t5(root / "t5", TEXTS))},
                       [ScoreRequest("is the cat left of the dog ?", "", ("yes", "no", "left"),
                                     passage="the cat is left of the dog ."),
                        ScoreRequest("is the bus inside the man ?", "", ("yes", "no"))], None),
        "vilt-vqa": lambda: ({"model": str(make_vilt(root / "vqa", TEXTS,
                                                     {"yes": 1.0, "no": 0.5, "left": 2.0}))},
                             _question_requests(image), ask),
        "blip": lambda: ({"model": str(make_blip(root / "blip", TEXTS, {"yes": 3.0, "no": 1.0}))},
                         _question_requests(image), ask),
        "contrastive": lambda: ({"model": str(tiny_clip(root / "clip"))}, _text_requests(image), None),
        "generate": lambda: ({"model": str(tiny_llava(root / "llava"))}, None, ask),
        "hf-mllm": lambda: ({"model": str(build_mllm("llava", root / "mllm"))}, _question_requests(image), ask),
        "openai-api": lambda: ({"model": MODEL, "base_url": vllm_like()[0], "cache_dir": "off"},
                               _question_requests(None), ask),  # a scripted vLLM; /completions takes no image
    }
    if name not in builders:
        pytest.fail(f"the model adapter {name!r} has no tiny builder in tests/test_registry_contract.py")
    kwargs, score, generate = builders[name]()
    return ({**kwargs, "device": "cpu"} if name != "dummy" else kwargs), score, generate


@pytest.mark.parametrize("name", registry.names("model"))
def test_every_model_adapter_declares_itself(name):
    """Read from its class (nothing built): the checkpoints it accepts, its protocols and wordings,
    whether it sees images, the GPUs one worker needs, and a fingerprint method."""
    from spatialprobe.models.base import Declared

    adapter = registry.lookup("model", name)
    assert issubclass(adapter, Declared)
    assert adapter.protocols and set(adapter.protocols) <= {"score", "generate"}
    assert adapter.wordings and all(isinstance(w, str) for w in adapter.wordings)
    assert isinstance(adapter.sees_images, bool) and isinstance(adapter.gpus, int) and adapter.gpus >= 0
    assert adapter.accepts({}) is False and adapter.accepts({"model_type": "no-such-family"}) is False
    assert callable(adapter.fingerprint)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    from vl_helpers import solid_image

    return solid_image(tmp_path_factory.mktemp("image") / "red.png")


@pytest.mark.parametrize("name", registry.names("model"))
def test_every_model_adapter_keeps_the_vocabulary(name, tmp_path, image):
    """Built tiny through the registry, every adapter answers the protocols it lists: one score per
    option (finite, deterministic, following its option when the options are reordered), one text
    per generate request; it declares its options, and its description is JSON."""
    from spatialprobe.models import options

    kwargs, score_requests, generate_requests = _tiny(name, tmp_path, image)
    model = registry.build("model", registry.Spec(name, kwargs))
    assert isinstance(model, Model) and model.name == name
    assert set(model.protocols) <= {"score", "generate"} and model.protocols
    assert ("score" in model.protocols) == (score_requests is not None)
    assert ("generate" in model.protocols) == (generate_requests is not None)
    assert all(isinstance(o, Option) for o in model.options.values())
    assert options.resolve(name, {}) == {k: o.default for k, o in model.options.items()}
    json.dumps(model.describe())
    if name not in ("dummy", "openai-api"):  # a checkpoint built for it: it accepts its config, and
        from spatialprobe.fingerprints import model_input  # its fingerprint is its weights' content
        from spatialprobe.models.choice import adapters_for

        config = json.loads((Path(kwargs["model"]) / "config.json").read_text())
        assert name in adapters_for(config)
        assert model.fingerprint()["fingerprint"] == model_input("the model", kwargs["model"])["fingerprint"]
    if score_requests is not None:
        assert isinstance(model, Scorer)
        seen: list[int] = []
        scores = model.score(score_requests, progress=seen.append)
        assert [len(s) for s in scores] == [len(r.options) for r in score_requests]
        assert all(math.isfinite(x) for s in scores for x in s)
        assert sum(seen) == len(score_requests)  # progress increments add up to the requests
        assert model.score(score_requests) == scores  # deterministic
        reordered = [replace(r, options=r.options[::-1]) for r in score_requests]
        for got, want in zip(model.score(reordered), scores, strict=True):
            assert got == pytest.approx(tuple(want[::-1]), abs=1e-5)  # equivariant in the options
    if generate_requests is not None:
        assert isinstance(model, Generator)
        texts = model.generate(generate_requests)
        assert len(texts) == len(generate_requests) and all(isinstance(t, str) for t in texts)
        assert model.generate(generate_requests) == texts  # greedy: deterministic


@pytest.fixture(scope="module")
def scorer_args(tmp_path_factory):
    root = tmp_path_factory.mktemp("scorers")
    return {"dummy": {}, "hf-mlm": {"model": str(tiny_wordpiece_bert(root / "bert")), "device": "cpu"},
            "vilt": {"model": str(tiny_vilt(root / "vilt")), "device": "cpu"},
            "hf-causal": {"model": str(tiny_bpe_gpt2(root / "gpt2")), "device": "cpu"}}


@pytest.mark.parametrize("name", ["dummy", "hf-mlm", "vilt", "hf-causal"])
def test_every_cloze_scorer_keeps_the_contract(name, scorer_args):
    scorer = registry.build("model", registry.Spec(name, scorer_args[name]))
    assert isinstance(scorer, Scorer)
    requests = _text_requests()
    seen = []
    scores = scorer.score(requests, progress=seen.append)
    assert [len(s) for s in scores] == [3, 2]
    assert all(math.isfinite(x) and x <= 0 for s in scores for x in s)  # log-probabilities
    assert sum(seen) == len(requests)  # progress reports increments that add up to the requests
    assert scorer.score(requests) == scores  # deterministic
    description = scorer.describe()
    json.dumps(description)
    assert "weights_sha256" in description and description["model"]


# Every registered detector keeps the Detector contract on the same two drawn images.
DETECTOR_IMAGE_SIZES = [(64, 64), (96, 64)]
DETECTOR_QUERIES = [["man", "bus"], ["motorcycle"]]
# Boxes made from pixels (a colour's or a mask's extent) lie within the image; the regression
# heads of OWL-ViT, DETR and Grounding DINO may reach past its edge, and the adapters keep such
# boxes as the model predicts them (tests/test_judge_hf.py expects OWL boxes past the edge).
BOXES_FROM_PIXELS = {"colour", "mask2former"}


@pytest.fixture(scope="module")
def detector_args(tmp_path_factory):
    from detector_helpers import tiny_grounding_dino, tiny_mask2former
    from judge_helpers import tiny_detr, tiny_owlvit

    root = tmp_path_factory.mktemp("detectors")
    return {"colour": {}, "owlvit": {"model": str(tiny_owlvit(root / "owlvit"))},
            "owlv2": {"model": str(tiny_owlvit(root / "owlv2", version=2))},
            "detr": {"model": str(tiny_detr(root / "detr", predicted_class=0))},
            "mask2former": {"model": str(tiny_mask2former(root / "m2f"))},
            "grounding-dino": {"model": str(tiny_grounding_dino(root / "gd")), "text_threshold": 0.0}}


@pytest.mark.parametrize("name", registry.names("detector"))
def test_every_detector_keeps_the_contract(name, detector_args):
    from spatialprobe.detectors.base import Detection, Detector
    from spatialprobe.detectors.colour import draw_scene

    detector = registry.build("detector", registry.Spec(name, {**detector_args[name], "threshold": 0.0,
                                                               "device": "cpu"}))
    assert isinstance(detector, Detector)
    images = [draw_scene([("bus", (8, 8, 40, 40), 1.0), ("man", (44, 4, 56, 30), 1.0)], size=DETECTOR_IMAGE_SIZES[0]),
              draw_scene([("motorcycle", (10, 20, 70, 50), 1.0)], size=DETECTOR_IMAGE_SIZES[1])]
    found = detector.detect(images, DETECTOR_QUERIES)
    assert len(found) == len(images)  # one list per image
    assert sum(len(f) for f in found) > 0, "at threshold 0 every detector finds something here"
    for detections, queries, (width, height) in zip(found, DETECTOR_QUERIES, DETECTOR_IMAGE_SIZES, strict=True):
        for det in detections:
            assert isinstance(det, Detection) and det.label in queries
            assert 0.0 <= det.score <= 1.0
            x0, y0, x1, y1 = det.box
            assert all(math.isfinite(v) for v in det.box) and x0 <= x1 and y0 <= y1
            if name in BOXES_FROM_PIXELS:
                assert min(x0, y0) >= 0 and x1 <= width and y1 <= height
    description = detector.describe()
    json.dumps(description)
    assert description["name"] == name and description["model"]


def test_every_declared_component_is_discovered_without_importing_its_module():
    """The declarations (``@component(...)`` and ``NAME = component(...)(...)``) that Python's own
    parser finds in the declaring packages are exactly the ones the registry read from the text,
    each pointing at the object it decorates."""
    import ast
    import importlib
    import subprocess
    import sys
    from pathlib import Path

    found = set()
    for package in registry.DECLARING_PACKAGES:
        folder = Path(importlib.util.find_spec(package).submodule_search_locations[0])
        for path in folder.glob("*.py"):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                calls = (node.decorator_list if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                         else [node.value.func] if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                         else [])
                for call in calls:
                    if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "component":
                        kind, name = (ast.literal_eval(a) for a in call.args[:2])
                        found.add((kind, name))
    discovered = {(kind, name) for kind in ("source", "model", "reader") for name in registry.names(kind)}
    assert found == discovered
    for kind, name in sorted(found):
        assert registry.lookup(kind, name) is not None
    listed = subprocess.run([sys.executable, "-c", "import sys; from spatialprobe import registry; "
                             "registry.names('source'); print(sorted(m for m in sys.modules if m.startswith("
                             "('spatialprobe.benchmarks.', 'spatialprobe.models.', 'spatialprobe.readers.'))))"],
                            capture_output=True, text=True, check=True)
    assert listed.stdout.strip() == "[]"  # listing imports no benchmark, adapter or reader
