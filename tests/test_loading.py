"""spatialprobe.loading: the one path that loads models and places them on a device in a precision."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from mlm_helpers import tiny_wordpiece_bert
from vl_helpers import solid_image, tiny_clip, tiny_vilt

from spatialprobe import loading
from spatialprobe.loading import (
    CUDA_DEFAULTS,
    autocast_enabled,
    dtype_kwargs,
    place_model,
    resolve_precision,
)
from spatialprobe.models.base import ScoreRequest

PACKAGE = Path(__file__).resolve().parents[1] / "spatialprobe"


def _resave(source: Path, target: Path, loader, dtype) -> Path:
    """``source``'s model saved again with its weights in ``dtype`` (tokenizer/processor copied)."""
    import shutil

    shutil.copytree(source, target)
    loader.from_pretrained(str(source)).to(dtype).save_pretrained(str(target))
    return target


def test_a_checkpoint_saved_in_bfloat16_scores_in_float32_on_the_cpu(tmp_path):
    """transformers 5 keeps a checkpoint's own dtype unless told; the rule says float32 on the CPU,
    so the bfloat16 checkpoint scores exactly as the same (bfloat16-rounded) weights in float32."""
    from transformers import AutoModelForMaskedLM

    from spatialprobe.models.masked_lm import MaskedLMScorer

    base = tiny_wordpiece_bert(tmp_path / "base")
    in_bf16 = _resave(base, tmp_path / "bf16", AutoModelForMaskedLM, torch.bfloat16)
    rounded = _resave(in_bf16, tmp_path / "rounded", AutoModelForMaskedLM, torch.float32)
    assert AutoModelForMaskedLM.from_pretrained(str(in_bf16)).dtype == torch.bfloat16  # the library's default
    requests = [ScoreRequest("An ant is ", " than a bird.", ("larger", "smaller")),
                ScoreRequest("A man drives the car. He is ", " the car.", ("inside", "beside"))]
    scorer = MaskedLMScorer(str(in_bf16), device="cpu")
    assert scorer.model.dtype == torch.float32 and scorer.describe()["half"] is False
    assert scorer.score(requests) == MaskedLMScorer(str(rounded), device="cpu").score(requests)
    assert MaskedLMScorer(str(in_bf16), device="cpu", precision="bf16").model.dtype == torch.bfloat16


def test_vision_models_saved_in_float16_run_in_float32_on_the_cpu(tmp_path):
    """The autocast components hold float32 weights whatever the checkpoint's dtype: a float16
    ViLT or CLIP checkpoint loads in float32 and gives the float32-saved copy's scores exactly."""
    from transformers import CLIPModel, ViltForMaskedLM

    from spatialprobe.models.clip_scoring import ClipSimilarity
    from spatialprobe.models.vilt import ViltMaskedLMScorer

    vilt = _resave(tiny_vilt(tmp_path / "vilt"), tmp_path / "vilt16", ViltForMaskedLM, torch.float16)
    vilt32 = _resave(vilt, tmp_path / "vilt32", ViltForMaskedLM, torch.float32)
    requests = [ScoreRequest("a ", " is big", ("dog", "cat"))]
    scorer = ViltMaskedLMScorer(str(vilt), device="cpu", blank_size=32)
    assert scorer.model.dtype == torch.float32
    assert scorer.score(requests) == ViltMaskedLMScorer(str(vilt32), device="cpu", blank_size=32).score(requests)

    clip = _resave(tiny_clip(tmp_path / "clip"), tmp_path / "clip16", CLIPModel, torch.float16)
    clip32 = _resave(clip, tmp_path / "clip32", CLIPModel, torch.float32)
    image = solid_image(tmp_path / "red.png")
    half_saved = ClipSimilarity(str(clip), device="cpu")
    assert half_saved.contrastive.model.dtype == torch.float32
    items = [(image, ["a dog", "a cat"])]
    assert half_saved.batch_scores(items) == ClipSimilarity(str(clip32), device="cpu").batch_scores(items)


def test_precision_rule(monkeypatch):
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert resolve_precision("auto", cpu) == torch.float32
    assert resolve_precision("auto", "cpu", "vqgan-clip") == torch.float32
    assert resolve_precision("fp16", cpu) == torch.float16  # asked for: taken as asked
    assert resolve_precision("bfloat16", cpu) == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("auto", gpu) == torch.float16
    assert resolve_precision("auto", gpu, "text scorers") == torch.float16
    assert resolve_precision("auto", "cuda:1", "vqgan-clip") == torch.bfloat16
    assert resolve_precision("auto", gpu, "t5 answerer") == torch.bfloat16
    assert resolve_precision("fp32", gpu) == torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_precision("auto", gpu, "vqgan-clip") == torch.float16  # a GPU without bfloat16
    assert resolve_precision("bf16", gpu) == torch.bfloat16  # asked for: not second-guessed
    with pytest.raises(ValueError, match="Unknown precision 'half'; use auto, fp32, bf16, fp16"):
        resolve_precision("half", cpu)
    # every component's CUDA default is a precision the rule knows, or the checkpoint's own
    assert {default for default, _ in CUDA_DEFAULTS.values()} <= {"fp16", "bf16", "checkpoint"}
    with pytest.raises(ValueError, match="multimodal LLMs loads its checkpoint's own dtype"):
        resolve_precision("auto", gpu, "multimodal LLMs")


def test_autocast_runs_where_it_covers_the_ops():
    assert [autocast_enabled(d, t) for d, t in (("cuda", torch.float16), ("cuda", torch.bfloat16),
                                                 ("cuda", torch.float32), ("cpu", torch.bfloat16),
                                                 ("cpu", torch.float16), ("cpu", torch.float32))] \
        == [True, True, False, True, False, False]
    with loading.autocast("cpu"):  # float32 on the CPU: no autocast
        assert not torch.is_autocast_enabled("cpu")
    with loading.autocast("cpu", torch.bfloat16):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")


def test_from_pretrained_keyword_follows_each_librarys_release(monkeypatch):
    import importlib.metadata

    versions = {"transformers": "4.55.2", "diffusers": "0.39.0"}
    monkeypatch.setattr(importlib.metadata, "version", lambda name: versions[name])
    assert dtype_kwargs(torch.float16) == {"torch_dtype": torch.float16}
    assert dtype_kwargs("fp32", "diffusers") == {"torch_dtype": torch.float32}
    versions.update(transformers="5.0.0", diffusers="0.40.0")
    assert dtype_kwargs("checkpoint") == {"dtype": "auto"}
    assert dtype_kwargs(torch.bfloat16, "diffusers") == {"dtype": torch.bfloat16}


def test_place_model_puts_weights_in_the_dtype_and_eval_mode():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)).train()
    assert place_model(model, "cpu") == torch.float32 and not model.training
    assert place_model(model, "cpu", torch.bfloat16) == torch.bfloat16
    assert model[0].weight.dtype == torch.bfloat16 and model[0].weight.device.type == "cpu"


def _calls(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    return [(node.lineno, node.func.attr) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names]


def test_only_the_loading_module_loads_models_or_sets_precision():
    """One loading path, one precision rule: no other module calls from_pretrained, autocast,
    .half() or a grad scaler itself, or passes a dtype keyword to a loader."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "loading.py" and path.parent == PACKAGE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        calls = _calls(tree, {"from_pretrained", "autocast", "half", "GradScaler", "is_bf16_supported"})
        calls += [(node.lineno, kw.arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                  for kw in node.keywords if kw.arg == "torch_dtype"]
        if calls:
            found[str(path.relative_to(PACKAGE))] = calls
    assert found == {}


def test_a_missing_local_path_is_said_to_be_missing_never_to_be_downloaded():
    from transformers import AutoConfig

    from spatialprobe.errors import ModelLoadError
    from spatialprobe.loading import load_pretrained

    with pytest.raises(ModelLoadError) as err:
        load_pretrained(AutoConfig, "/nope", "the model")
    assert str(err.value) == ("Could not load the model '/nope': there is no such local directory; pass "
                              "the directory of a saved checkpoint, or a Hugging Face hub id.")
    assert "download" not in str(err.value)


@pytest.mark.parametrize("installed,on_path,command", [
    ("1.1.0", {"hf"}, "hf download org/missing --revision v2"),
    ("0.36.0", {"hf", "huggingface-cli"}, "huggingface-cli download org/missing --revision v2"),
])
def test_a_hub_id_gets_the_installed_clients_download_command(monkeypatch, installed, on_path, command):
    import importlib.metadata
    import shutil

    from transformers import AutoConfig

    from spatialprobe.errors import ModelLoadError
    from spatialprobe.loading import load_pretrained

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: installed if name == "huggingface_hub" else real(name))
    monkeypatch.setattr(shutil, "which", lambda name: f"/bin/{name}" if name in on_path else None)
    with pytest.raises(ModelLoadError) as err:
        load_pretrained(AutoConfig, "org/missing", "the model", revision="v2")
    assert str(err.value).startswith(
        "Could not load the model 'org/missing' (it is not a local directory, and the Hugging Face hub "
        f"could not provide it): check the name, or download it where the hub is reachable (`{command}`)")


@pytest.mark.parametrize("field,value", [("hidden_size", "wide"), ("num_hidden_layers", [2])])
def test_a_checkpoint_whose_config_is_invalid_is_one_sentence_not_a_traceback(tmp_path, field, value):
    """a config.json field of the wrong type (transformers' strict config
    validation raises no ValueError) is refused as the checkpoint it is."""
    import json

    from typer.testing import CliRunner

    from spatialprobe.cli import app

    model = tiny_wordpiece_bert(tmp_path / "bert")
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, field: value}))
    result = CliRunner().invoke(app, ["probe", "size", "--model", str(model), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and not isinstance(result.exception, (TypeError, ValueError)), result.output
    said = " ".join(result.output.split())
    said = said[said.index("Error:"):]  # the refusal is the last thing said (after the progress bar's last frame)
    # the tokenizer, loaded first, reads the config too
    assert said.startswith(f"Error: Could not load the tokenizer of '{model}': the directory exists but does not "
                           f"hold a loadable checkpoint (details: Validation error for field '{field}':")
    assert "Traceback" not in result.output
