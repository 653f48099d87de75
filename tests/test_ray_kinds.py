"""Every run command with ``--ray ADDRESS --workers 2`` (the shared local cluster) writes what it
writes without: predictions.jsonl byte for byte, the same metrics and details, the same identity;
and ``spatialprobe run CONFIG --ray`` replays a run on a cluster."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from judge_helpers import write_run
from mlm_helpers import tiny_wordpiece_bert
from qa_helpers import make_t5
from typer.testing import CliRunner
from vl_helpers import solid_image, tiny_clip

from spatialprobe import registry
from spatialprobe.cli import app
from spatialprobe.files import write_jsonl
from spatialprobe.models.masked_lm import MaskedLMScorer
from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.yes_no import build_qa, to_qa_records

pytest.importorskip("ray")
runner = CliRunner()


def local_and_on_ray(address: str, args: list[str], tmp_path: Path, workers: int = 2,
                     before_ray: Callable[[], None] = lambda: None) -> dict:
    """Run ``args`` here and on Ray; check both wrote the same; the Ray run's execution record.

    Here runs with one torch thread, as a CPU worker does: with more threads a matmul sums in
    another order, and a float32 score can differ in its last bits (docs/scale-out.md)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        here = runner.invoke(app, [*args, "--out", str(tmp_path / "local")])
    finally:
        torch.set_num_threads(threads)
    assert here.exit_code == 0, here.output
    before_ray()
    there = runner.invoke(app, [*args, "--out", str(tmp_path / "ray"), "--ray", address, "--workers",
                                str(workers)])
    assert there.exit_code == 0, there.output
    sa, sb = same_run(tmp_path / "local", tmp_path / "ray")
    assert sa["provenance"]["execution"]["where"] == "local"
    return sb["provenance"]["execution"]


def same_run(a: Path, b: Path) -> tuple[dict, dict]:
    """predictions.jsonl byte for byte, the same metrics, details and identity; both summaries."""
    assert (a / "predictions.jsonl").read_bytes() == (b / "predictions.jsonl").read_bytes()
    sa, sb = (json.loads((p / "summary.json").read_text()) for p in (a, b))
    assert (sa["metrics"], sa["details"], sa["identity"]) == (sb["metrics"], sb["details"], sb["identity"])
    return sa, sb


def test_probe_with_a_tiny_bert_whose_driver_never_loads_it_and_its_replay_on_ray(ray_cluster, tmp_path,
                                                                                   monkeypatch):
    bert = tiny_wordpiece_bert(tmp_path / "bert")
    data = tmp_path / "size.jsonl"  # 100 instances: 100 x the builtin templates = several batches
    assert runner.invoke(app, ["datasets", "export", "size", "--out", str(data)]).exit_code == 0
    data.write_text("".join(data.read_text().splitlines(keepends=True)[:100]))
    def no_model_here():  # the Ray workers load it, in their own processes; the driver must not
        def refuse(*args, **kwargs):
            raise AssertionError("the driver loaded the model")
        monkeypatch.setattr(MaskedLMScorer, "__init__", refuse)

    from spatialprobe.loading import resolved_devices

    resolved_devices()  # forget what earlier tests in this process resolved
    monkeypatch.chdir(tmp_path)  # a relative --model, resolved in the driver (the workers
    # run in folders of their own, where "bert" names nothing)
    done = local_and_on_ray(ray_cluster, ["probe", "size", "--model", "bert", "--data", str(data),
                                          "--device", "cpu"], tmp_path, before_ray=no_model_here)
    assert done == {"where": "ray", "workers": 2, "gpus": 0, "batches": 2, "items": 1000, "retried_batches": 0}
    config = json.loads((tmp_path / "ray" / "config.json").read_text())
    assert config["settings"]["model"] == str(bert.resolve())
    # provenance.devices says where the workers' model ran, as a local run does
    devices = [json.loads((tmp_path / run / "summary.json").read_text())["provenance"]["devices"]
               for run in ("local", "ray")]
    assert devices[1] == devices[0] == [{"component": "text scorers", "device": "cpu", "dtype": "float32"}]
    replay = runner.invoke(app, ["run", str(tmp_path / "local"), "--out", str(tmp_path / "replay"),
                                 "--ray", ray_cluster, "--workers", "2"])
    assert replay.exit_code == 0, replay.output
    local = json.loads((tmp_path / "local" / "summary.json").read_text())
    assert f"confirmed: identity {local['identity'][:12]}" in replay.output
    assert ((tmp_path / "replay" / "predictions.jsonl").read_bytes()
            == (tmp_path / "local" / "predictions.jsonl").read_bytes())
    replayed = json.loads((tmp_path / "replay" / "summary.json").read_text())
    assert replayed["metrics"] == local["metrics"]  # (a replay's scorer_choice names its --scorer)
    assert replayed["provenance"]["execution"]["where"] == "ray"
    config = json.loads((tmp_path / "replay" / "config.json").read_text())
    assert config["runtime"] == {"device": "cpu", "batch_size": 64, "ray": ray_cluster, "workers": 2}


def test_judge_of_a_shapes_run_with_the_colour_detector(ray_cluster, tmp_path, monkeypatch):
    plan = [("larger", "larger", True), ("smaller", "smaller", True), ("larger", "smaller", True),
            ("smaller", "smaller", False), ("larger", "larger", True)]
    write_run(tmp_path / "images", "size", plan)
    done = local_and_on_ray(ray_cluster, ["judge", "size", str(tmp_path / "images"), "--detector", "colour",
                                          "--depth", "colour", "--batch-size", "2"], tmp_path,
                            before_ray=lambda: monkeypatch.setattr(registry, "build", refuse_build))
    assert done == {"where": "ray", "workers": 2, "gpus": 0, "batches": 3, "items": 5, "retried_batches": 0}


def refuse_build(*args, **kwargs):
    raise AssertionError("the driver built a component")


def test_vsr_and_spatialmqa_with_a_tiny_clip(ray_cluster, tmp_path, monkeypatch):
    from test_vl_spatialmqa import RECORDS, write
    from test_vl_vsr import ZEROSHOT, write_split

    clip = tiny_clip(tmp_path / "clip")
    rows = [{**ZEROSHOT[0], "caption": f"The cat is touching the dog {n}."} for n in range(3)]
    write_split(tmp_path / "vsr", "zeroshot", "dev", rows)
    solid_image(tmp_path / "coco" / "val2017" / "000000000001.jpg")
    done = local_and_on_ray(ray_cluster, ["vsr", "--model", str(clip), "--data", str(tmp_path / "vsr"),
                                          "--images", str(tmp_path / "coco"), "--split", "zeroshot",
                                          "--part", "dev", "--device", "cpu", "--batch-size", "1"],
                            tmp_path / "v", before_ray=lambda: monkeypatch.setattr(registry, "build", refuse_build))
    assert done["items"] == 3 and done["batches"] == 3
    monkeypatch.undo()  # the local spatialmqa run below builds its model here
    write(tmp_path / "mqa" / "dev.jsonl", RECORDS[:2])
    for name in ("a.jpg", "b.jpg"):
        solid_image(tmp_path / "coco" / name)
    done = local_and_on_ray(ray_cluster, ["spatialmqa", "--model", str(clip), "--data", str(tmp_path / "mqa"),
                                          "--images", str(tmp_path / "coco"), "--part", "dev",
                                          "--device", "cpu", "--batch-size", "1"], tmp_path / "m",
                            before_ray=lambda: monkeypatch.setattr(registry, "build", refuse_build))
    assert done["items"] == 2 and done["batches"] == 2


def test_qa_text_with_a_tiny_t5(ray_cluster, tmp_path):
    qa = build_qa(task_data.load("posrel"))
    items = qa.items[:6]
    data = tmp_path / "qa.jsonl"
    write_jsonl(data, to_qa_records(type(qa)(qa.name, "test", qa.task, items)))
    t5 = make_t5(tmp_path / "t5", [i.full_text for i in items])
    done = local_and_on_ray(ray_cluster, ["qa", "text", "--model", str(t5), "--data", str(data),
                                          "--device", "cpu", "--batch-size", "2"], tmp_path)
    assert done["items"] == 6 and done["batches"] == 3


def test_workers_without_ray_is_one_sentence(tmp_path):
    result = runner.invoke(app, ["probe", "size", "--model", "dummy", "--workers", "2",
                                 "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert ("--workers sets the number of Ray workers and needs --ray; without it the run computes "
            "in this process.") in " ".join(result.output.split())
    assert not (tmp_path / "run").exists()


def test_bare_ray_means_a_local_cluster_and_a_deferred_component_loads_only_when_used():
    from spatialprobe.commands.scale_options import bare_ray_means_local
    from spatialprobe.runner.components import Deferred

    assert bare_ray_means_local(["judge", "size", "run", "--ray", "--workers", "2"]) == [
        "judge", "size", "run", "--ray", "local", "--workers", "2"]
    assert bare_ray_means_local(["probe", "size", "--ray"]) == ["probe", "size", "--ray", "local"]
    assert bare_ray_means_local(["probe", "--ray", "10.0.0.5:6379"]) == ["probe", "--ray", "10.0.0.5:6379"]
    deferred = Deferred("model", registry.Spec("dummy", {"seed": 0}), {"scorer": "as the cluster said"})
    assert deferred.describe() == {"scorer": "as the cluster said"} and deferred._built is None
    assert deferred.name == "dummy" and type(deferred._built).__name__ == "DummyScorer"


def test_a_multimodal_llm_asked_on_ray_is_never_loaded_by_the_driver(ray_cluster, tmp_path, monkeypatch):
    from mllm_helpers import SHARED, build
    from test_ask_cli import _vsr

    if not (SHARED / "llava-1.5-7b-hf").is_dir():
        pytest.skip("../shared/models (genuine LLaVA processor files) is absent")
    llava = build("llava", tmp_path / "llava", bias_word="Yes")
    data, images = _vsr(tmp_path, n=4)
    done = local_and_on_ray(ray_cluster, ["vsr", "--model", str(llava), "--data", str(data), "--images",
                                          str(images), "--protocol", "likelihood", "--batch-size", "2"],
                            tmp_path, before_ray=lambda: monkeypatch.setattr(registry, "build", refuse_build))
    assert done["where"] == "ray" and done["items"] == 4 and done["batches"] == 2

