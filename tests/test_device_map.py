"""``--device-map auto`` / ``--max-memory`` (spatialprobe/sharding.py): a model spread over devices
scores as the same model on one device, and where it runs is never part of a run's identity.

This machine has no GPU, so the spread is accelerate's CPU + disk offload: each tiny model (built
here, saved, loaded through ``load_pretrained``) gets a ``--max-memory cpu=`` of 70 % of its weights,
so its ``hf_device_map`` holds modules on the CPU and on the disk, and every forward pass goes
through accelerate's hooks (the disk's weights brought in as each layer runs).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
from causal_helpers import tiny_bpe_gpt2
from mlm_helpers import tiny_wordpiece_bert
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.errors import UsageError
from spatialprobe.models.base import ScoreRequest
from spatialprobe.models.options import sharding
from spatialprobe.sharding import accelerate_memory, parse_max_memory

pytest.importorskip("accelerate")

REQUESTS = [ScoreRequest("An ant is", " than a bird.", ("larger", "smaller", "taller")),
            ScoreRequest("The house is", ".", ("bigger", "smaller")),
            ScoreRequest("", " is above the car.", ("man", "woman"))]


def cpu_share(model_dir: Path, share: float = 0.7) -> str:
    """``share`` of the checkpoint's weight bytes, in bytes: what ``--max-memory cpu=`` leaves."""
    return str(int(share * (model_dir / "model.safetensors").stat().st_size))


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return tiny_wordpiece_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return tiny_bpe_gpt2(tmp_path_factory.mktemp("gpt2"))


# ---- the options ---------------------------------------------------------------------------------
def test_max_memory_pairs_are_read_as_accelerate_reads_them():
    read = parse_max_memory(["0=70GiB", "cpu=200gb", " 1 = 1000 ", "2=1.5mib"])
    assert read == {"0": "70GiB", "cpu": "200GB", "1": "1000", "2": "1.5MiB"}
    assert accelerate_memory(read) == {0: "70GiB", "cpu": "200GB", 1: 1000, 2: "1.5MiB"}


@pytest.mark.parametrize(("pair", "sentence"), [
    ("70GiB", "--max-memory takes DEVICE=SIZE with DEVICE a GPU index (0, 1, ...) or cpu, not '70GiB'."),
    ("gpu0=70GiB", "--max-memory takes DEVICE=SIZE with DEVICE a GPU index (0, 1, ...) or cpu, not 'gpu0=70GiB'."),
    ("0=70TB", "--max-memory 0=70TB: the size is a number of bytes or a number with one of the units GiB, "
               "MiB, KiB, GB, MB, KB (70GiB, 500MB), not '70TB'."),
    ("cpu=1.5", "--max-memory cpu=1.5: the size is a number of bytes or a number with one of the units "
                "GiB, MiB, KiB, GB, MB, KB (70GiB, 500MB), not '1.5'."),
])
def test_a_max_memory_that_does_not_read_is_one_sentence(pair, sentence):
    with pytest.raises(UsageError) as err:
        parse_max_memory([pair])
    assert str(err.value) == sentence


def test_a_device_named_twice_is_refused():
    with pytest.raises(UsageError, match=r"^--max-memory names device 0 twice\.$"):
        parse_max_memory(["0=1GiB", "00=2GiB"])


SHARDABLE = "--device-map applies to the hf-causal, hf-mllm, hf-mlm models (masked, causal and multimodal LLMs); "


@pytest.mark.parametrize(("name", "device", "device_map", "memory", "sentence"), [
    ("dummy", "auto", "auto", None, SHARDABLE + "the dummy model cannot be spread over devices."),
    ("vilt", "auto", "auto", None, SHARDABLE + "the vilt model cannot be spread over devices."),
    ("t5", "auto", "auto", None, SHARDABLE + "the t5 model cannot be spread over devices."),
    ("hf-mlm", "auto", None, {"cpu": "1GB"}, "--max-memory applies with --device-map auto (it caps what each "
     "device holds of a spread model); without it the model sits whole on --device."),
    ("hf-mlm", "auto", "balanced", None, "--device-map takes auto, not 'balanced'."),
    ("hf-causal", "cpu", "auto", None, "--device cpu does not apply with --device-map auto, which places the "
     "model itself (every visible GPU, then the CPU, then the disk): choose the GPUs with "
     "CUDA_VISIBLE_DEVICES and cap them with --max-memory."),
])
def test_what_does_not_apply_is_refused_in_one_sentence(name, device, device_map, memory, sentence):
    with pytest.raises(UsageError) as err:
        sharding(name, device, device_map, memory)
    assert str(err.value) == sentence


def test_the_runtime_arguments_the_adapters_get():
    assert sharding("hf-mlm", "auto", None, None) == {}
    assert sharding("hf-mllm", "auto", "none", None) == {}  # an ask run's recorded "off"
    assert sharding("hf-causal", "auto", "auto", {"0": "70GiB", "cpu": "200GiB"}) == {
        "device_map": "auto", "max_memory": {"0": "70GiB", "cpu": "200GiB"}}


def test_without_accelerate_it_is_one_sentence(bert, monkeypatch):
    from spatialprobe.errors import MissingExtra
    from spatialprobe.models.masked_lm import MaskedLMScorer

    monkeypatch.setitem(sys.modules, "accelerate", None)
    with pytest.raises(MissingExtra) as err:
        MaskedLMScorer(str(bert), device_map="auto")
    assert str(err.value) == ("--device-map (a model spread over several devices) needs the 'multigpu' extra: "
                              "pip install 'spatialprobe[multigpu]' (missing module: accelerate)")


# ---- the same scores, spread or not --------------------------------------------------------------
def _max_difference(a, b) -> float:
    return max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))


def test_a_masked_lm_spread_over_cpu_and_disk_scores_as_on_one_device(bert, tmp_path, monkeypatch):
    from spatialprobe import loading
    from spatialprobe.models.masked_lm import MaskedLMScorer

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where an offload folder would go
    whole = MaskedLMScorer(str(bert), device="cpu")
    loading.resolved_devices()
    spread = MaskedLMScorer(str(bert), device_map="auto", max_memory={"cpu": cpu_share(bert)})
    assert set(spread.model.hf_device_map.values()) == {"cpu", "disk"} and len(spread.model.hf_device_map) > 1
    assert str(spread.device) == "cpu" and spread.sharded and spread._head is None
    assert _max_difference(spread.score(REQUESTS), whole.score(REQUESTS)) == 0.0  # the bound here: exact
    assert spread.describe() == whole.describe()  # the weights hash reads the offloaded tensors too
    counts = ", ".join(f"{d} ({n} module{'s' if n > 1 else ''})" for d, n in _counts(spread.model).items())
    assert loading.resolved_devices() == [{"component": "text scorers", "device": f"device map: {counts}",
                                           "dtype": "float32"}]
    assert list(tmp_path.iterdir()) == []  # a safetensors checkpoint is offloaded where it lies


def _counts(model) -> dict[str, int]:
    counts: dict[str, int] = {}
    for device in model.hf_device_map.values():
        counts[device] = counts.get(device, 0) + 1
    return counts


def test_a_causal_lm_spread_over_cpu_and_disk_scores_as_on_one_device(gpt2):
    from spatialprobe.models.causal_lm import CausalLMScorer

    whole = CausalLMScorer(str(gpt2), device="cpu")
    spread = CausalLMScorer(str(gpt2), device_map="auto", max_memory={"cpu": cpu_share(gpt2)})
    assert set(spread.model.hf_device_map.values()) == {"cpu", "disk"}
    assert spread._shared is not None and spread._shared.head is None  # the whole model's pass, shared prefix
    assert _max_difference(spread.score(REQUESTS), whole.score(REQUESTS)) <= 1e-5
    assert spread.describe() == whole.describe()


def test_a_multimodal_llm_spread_over_cpu_and_disk_scores_as_on_one_device(tmp_path):
    from mllm_helpers import SHARED, build, processor_loads

    if processor_loads("llava"):
        pytest.skip(f"{SHARED} has no LLaVA processor files")
    from PIL import Image

    from spatialprobe.models.base import GenerateRequest
    from spatialprobe.models.mllm import MultimodalLLM

    path = build("llava", tmp_path / "llava")
    image = Image.new("RGB", (64, 64), (200, 30, 30))
    requests = [ScoreRequest("Is the cat above the dog?", "", ("Yes", "No"), image),
                ScoreRequest("Where is the cat?", "", ("left of the dog", "above"), None)]
    whole = MultimodalLLM(str(path), device="cpu")
    # accelerate keeps room for the largest module (the tied embedding and head, half the weights):
    # a cap of the checkpoint's size keeps the vision tower on the CPU, the language model on the disk
    spread = MultimodalLLM(str(path), device_map="auto", max_memory={"cpu": cpu_share(path, 1.0)})
    assert set(spread.model.hf_device_map.values()) == {"cpu", "disk"}
    assert _max_difference(spread.score(requests), whole.score(requests)) <= 1e-5
    asked = [GenerateRequest("Is the cat above the dog?", image, max_new_tokens=3)]
    assert spread.generate(asked) == whole.generate(asked)
    assert spread.describe() == whole.describe()
    assert spread.runtime() == {**whole.runtime(), "device_map": "auto"}


# ---- through the commands: runtime, never identity -----------------------------------------------
def _probe(model: Path, out: Path, *more: str):
    return CliRunner().invoke(app, ["probe", "size", "--model", str(model), "--out", str(out), "--folds", "2",
                                    *more])


def test_a_probe_resumes_with_and_without_the_device_map_and_gives_the_same_predictions(bert, tmp_path):
    spread = ["--device-map", "auto", "--max-memory", f"cpu={cpu_share(bert)}"]
    plain, sharded = tmp_path / "plain", tmp_path / "sharded"
    assert _probe(bert, plain).exit_code == 0
    result = _probe(bert, sharded, *spread)
    assert result.exit_code == 0, result.output
    assert (sharded / "predictions.jsonl").read_bytes() == (plain / "predictions.jsonl").read_bytes()
    configs = [json.loads((d / "config.json").read_text()) for d in (plain, sharded)]
    assert configs[0]["identity"] == configs[1]["identity"] and configs[0]["settings"] == configs[1]["settings"]
    assert configs[1]["runtime"] == {"batch_size": 64, "device": "auto", "device_map": "auto",
                                     "max_memory": {"cpu": cpu_share(bert)}}
    assert "device_map" not in configs[0]["runtime"]  # a run without it records nothing new
    before = {d: (d / "predictions.jsonl").read_bytes() for d in (plain, sharded)}
    assert _probe(bert, plain, *spread).exit_code == 0  # started without it, resumed with it
    assert _probe(bert, sharded).exit_code == 0  # and the other way round
    assert {d: (d / "predictions.jsonl").read_bytes() for d in (plain, sharded)} == before


@pytest.mark.parametrize(("argv", "sentence"), [
    (["probe", "size", "--model", "dummy", "--device-map", "auto"],
     SHARDABLE + "the dummy model cannot be spread over devices."),
    (["probe", "size", "--model", "dummy", "--max-memory", "cpu=1GB"],
     "--max-memory applies with --device-map auto (it caps what each device holds of a spread model); "
     "without it the model sits whole on --device."),
    (["probe", "size", "--model", "dummy", "--max-memory", "cpu"],
     "--max-memory takes DEVICE=SIZE with DEVICE a GPU index (0, 1, ...) or cpu, not 'cpu'."),
])
def test_the_commands_refuse_what_does_not_apply(argv, sentence, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [*argv, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"Error: {sentence}" in " ".join(result.output.split())
    assert not out.exists()


def test_device_and_device_map_together_are_refused(bert, tmp_path):
    result = _probe(bert, tmp_path / "run", "--device", "cpu", "--device-map", "auto")
    assert result.exit_code == 2
    assert ("Error: --device cpu does not apply with --device-map auto, which places the model itself" in
            " ".join(result.output.split()))
    assert not (tmp_path / "run").exists()


def test_ask_commands_refuse_the_device_map_for_adapters_that_cannot_spread(tmp_path):
    """The adapter is chosen from config.json (no weights needed), then --device-map is refused for it."""
    import json

    from vl_helpers import solid_image

    for name, config in (("t5", {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"]}),
                         ("clip", {"model_type": "clip", "architectures": ["CLIPModel"]})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "test.jsonl").write_text(json.dumps({
        "image": "a.jpg", "caption": "The cat is left of the dog.", "label": 1, "relation": "left of"}) + "\n")
    solid_image(tmp_path / "coco" / "a.jpg")
    for argv, adapter in ((["qa", "text", "--model", str(tmp_path / "t5"), "--task", "size"], "t5"),
                          (["vsr", "--model", str(tmp_path / "clip"), "--data", str(tmp_path), "--images",
                            str(tmp_path / "coco")], "contrastive")):
        result = CliRunner().invoke(app, [*argv, "--out", str(tmp_path / "run"), "--device-map", "auto"])
        assert result.exit_code == 2
        sentence = f"Error: {SHARDABLE}the {adapter} model cannot be spread over devices."
        assert sentence in " ".join(result.output.split())
        assert not (tmp_path / "run").exists()


def test_max_memory_is_a_runtime_key():
    from spatialprobe.runner.spec import RUNTIME_KEYS, RunSpec

    a = RunSpec("probe", {"model": "m"})
    b = RunSpec("probe", {"model": "m"}, {"device_map": "auto", "max_memory": {"0": "70GiB"}})
    assert {"device_map", "max_memory"} <= RUNTIME_KEYS and a.identity == b.identity


def test_a_spread_run_replays_from_its_config_spread_again(bert, tmp_path):
    sharded, replayed = tmp_path / "sharded", tmp_path / "replayed"
    assert _probe(bert, sharded, "--device-map", "auto", "--max-memory", f"cpu={cpu_share(bert)}").exit_code == 0
    result = CliRunner().invoke(app, ["run", str(sharded / "config.json"), "--out", str(replayed)])
    assert result.exit_code == 0, result.output
    config = json.loads((replayed / "config.json").read_text())
    assert config["runtime"]["device_map"] == "auto" and config["runtime"]["max_memory"] == {"cpu": cpu_share(bert)}
    assert json.loads((replayed / "summary.json").read_text())["provenance"]["devices"][0]["device"].startswith(
        "device map: cpu (")
    assert (replayed / "predictions.jsonl").read_bytes() == (sharded / "predictions.jsonl").read_bytes()


def test_a_whole_run_replays_spread_with_run_s_device_map(bert, tmp_path):
    """``spatialprobe run CONFIG --device-map auto --max-memory`` spreads a run made whole (the
    options are runtime): same identity, same predictions, the device map in its provenance."""
    whole, spread = tmp_path / "whole", tmp_path / "spread"
    assert _probe(bert, whole).exit_code == 0
    assert "device_map" not in json.loads((whole / "config.json").read_text())["runtime"]
    result = CliRunner().invoke(app, ["run", str(whole / "config.json"), "--out", str(spread), "--device-map",
                                      "auto", "--max-memory", f"cpu={cpu_share(bert)}"])
    assert result.exit_code == 0, result.output
    configs = [json.loads((d / "config.json").read_text()) for d in (whole, spread)]
    assert configs[0]["identity"] == configs[1]["identity"]
    assert configs[1]["runtime"]["device_map"] == "auto"
    assert json.loads((spread / "summary.json").read_text())["provenance"]["devices"][0]["device"].startswith(
        "device map: cpu (")
    assert (spread / "predictions.jsonl").read_bytes() == (whole / "predictions.jsonl").read_bytes()


def test_run_refuses_a_device_map_for_a_kind_without_one(tmp_path):
    """A synthesis run has no model to spread: ``run --device-map`` is one sentence, nothing written."""
    images = tmp_path / "images"
    assert CliRunner().invoke(app, ["synthesize", "--prompts", "size", "--backend", "shapes", "--out",
                                    str(images)]).exit_code == 0
    before = {p: p.stat().st_mtime_ns for p in images.rglob("*")}
    result = CliRunner().invoke(app, ["run", str(images / "config.json"), "--device-map", "auto"])
    assert result.exit_code == 2
    assert "a synthesize run has no runtime setting device_map." in " ".join(result.output.split())
    assert {p: p.stat().st_mtime_ns for p in images.rglob("*")} == before


def test_a_multimodal_llm_run_records_the_device_map_as_runtime_and_resumes_without_it(tmp_path):
    from mllm_helpers import SHARED, build, processor_loads

    if processor_loads("llava"):
        pytest.skip(f"{SHARED} has no LLaVA processor files")
    from vl_helpers import solid_image

    llava = build("llava", tmp_path / "llava", bias_word="Yes")
    images, rows = tmp_path / "coco", []
    for k in range(4):
        solid_image(images / f"{k:012d}.jpg", (60 * k, 90, 160))
        rows.append({"image": f"{k:012d}.jpg", "caption": f"The cat {k} is left of the dog {k}.",
                     "label": int(k % 2 == 0), "relation": "left of", "subj": f"cat{k}", "obj": f"dog{k}"})
    (tmp_path / "vsr" / "random").mkdir(parents=True)
    (tmp_path / "vsr" / "random" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def vsr(out: Path, *more: str):
        return CliRunner().invoke(app, ["vsr", "--model", str(llava), "--data", str(tmp_path / "vsr"), "--images",
                                        str(images), "--out", str(out), "--protocol", "likelihood", *more])

    spread = ["--device-map", "auto", "--max-memory", f"cpu={cpu_share(llava, 1.0)}"]
    result = vsr(tmp_path / "sharded", *spread)
    assert result.exit_code == 0, result.output
    assert vsr(tmp_path / "plain").exit_code == 0
    configs = [json.loads((tmp_path / d / "config.json").read_text()) for d in ("plain", "sharded")]
    assert configs[0]["identity"] == configs[1]["identity"]
    assert configs[1]["runtime"] == {"batch_size": 16, "device": "auto", "device_map": "auto",
                                     "max_memory": {"cpu": cpu_share(llava, 1.0)}}
    assert configs[0]["runtime"] == {"batch_size": 16, "device": "auto", "device_map": "none"}
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("plain", "sharded")]
    assert summaries[0]["metrics"]["accuracy"]["mean"] == summaries[1]["metrics"]["accuracy"]["mean"] == 50.0
    before = (tmp_path / "sharded" / "predictions.jsonl").read_bytes()
    assert vsr(tmp_path / "sharded").exit_code == 0  # resumed (confirmed) without the device map
    assert (tmp_path / "sharded" / "predictions.jsonl").read_bytes() == before


def test_a_bin_checkpoint_offloads_to_a_named_temporary_folder_removed_with_the_model(bert, tmp_path, monkeypatch):
    import gc
    import shutil

    import torch
    from safetensors.torch import load_file

    from spatialprobe import loading
    from spatialprobe.models.masked_lm import MaskedLMScorer

    old = tmp_path / "bert-bin"  # the same model saved as a pickled state dict (no safetensors to read from)
    shutil.copytree(bert, old)
    torch.save(load_file(old / "model.safetensors"), old / "pytorch_model.bin")
    (old / "model.safetensors").unlink()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    loading.resolved_devices()
    spread = MaskedLMScorer(str(old), device_map="auto", max_memory={"cpu": cpu_share(bert)})
    assert spread.score(REQUESTS) == MaskedLMScorer(str(bert), device="cpu").score(REQUESTS)
    [folder] = (tmp_path / "tmp").iterdir()
    assert folder.name.startswith("spatialprobe-offload-") and any(folder.iterdir())
    [noted] = [d["device"] for d in loading.resolved_devices() if "device map" in d["device"]]
    assert noted.endswith(f"; offloaded to {folder}")
    del spread
    gc.collect()
    assert not folder.exists()


def test_inputs_go_where_the_input_embedding_runs(bert):
    # the device map's answers on GPUs, read without one (torch.device("cuda:1") needs no GPU)
    from types import SimpleNamespace

    import torch
    from transformers import AutoModelForMaskedLM

    from spatialprobe.sharding import input_device, placement

    model = AutoModelForMaskedLM.from_pretrained(bert)
    assert input_device(model) == torch.device("cpu")  # whole, no map: where its weights are
    model.hf_device_map = {"bert.embeddings": 1, "bert.encoder": 0, "cls": 0}
    assert input_device(model) == torch.device("cuda:1")
    assert placement(model) == "device map: cuda:1 (1 module), cuda:0 (2 modules)"
    model.hf_device_map = {"bert.embeddings": "cpu", "bert.encoder": 0, "cls": "disk"}
    model._hf_hook = SimpleNamespace(execution_device=0)  # accelerate runs offloaded layers on GPU 0
    assert input_device(model) == torch.device("cuda:0")
    model.hf_device_map = {"": "disk"}
    model._hf_hook = SimpleNamespace(execution_device="cpu")
    assert input_device(model) == torch.device("cpu")


@pytest.mark.parametrize("command", [["synthesize"], ["judge"], ["vsr-train"]])
def test_commands_whose_models_are_never_spread_do_not_take_the_option(command):
    # synthesis backends, detectors and depth models, ViLT fine-tuning: click's one line, exit 2
    result = CliRunner().invoke(app, [*command, "--device-map", "auto"])
    assert result.exit_code == 2
    assert "No such option: --device-map" in result.output


@pytest.mark.parametrize("pair", ["7=1GiB", "0=10GiB"])
def test_a_max_memory_for_a_gpu_this_machine_lacks_is_one_sentence(gpt2, tmp_path, pair):
    """a GPU index past the visible GPUs (every index on a machine without one)
    is refused before accelerate loads anything."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if int(pair.split("=")[0]) < count:
        pytest.skip(f"this machine has GPU {pair.split('=')[0]}")
    have = f"GPUs {', '.join(map(str, range(count)))} only" if count else "no GPU"
    result = CliRunner().invoke(app, ["probe", "size", "--model", str(gpt2), "--device-map", "auto",
                                      "--max-memory", pair, "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output + repr(result.exception)
    assert (f"Error: --max-memory {pair}: this machine has {have} (as CUDA_VISIBLE_DEVICES shows them); name a "
            "GPU it has, or cap the CPU with --max-memory cpu=SIZE.") in " ".join(result.output.split())
