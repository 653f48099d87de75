"""Fan-out over a local Ray cluster (2 CPUs, tiny models): same images as a run in-process."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from synthesis_helpers import one_torch_thread, tiny_clip, tiny_settings, tiny_vqmodel  # noqa: F401

from spatialprobe.imagestore import ImageStore
from spatialprobe.loading import ModelLoadError
from spatialprobe.synthesis import load_prompts, synthesize


def test_ray_workers_fill_the_same_store(ray_cluster, tmp_path):
    vq, clip = tiny_vqmodel(tmp_path / "vq"), tiny_clip(tmp_path / "clip")
    (tmp_path / "p.txt").write_text("".join(f"A boy number {i} rides the horse.\n"
                                            for i in range(3)))
    prompts = load_prompts(str(tmp_path / "p.txt"))
    args = {"vqgan": str(vq), "clip": str(clip), "preset": "paper",
            "settings": tiny_settings(iterations=3), "device": "cpu", "precision": "auto"}
    summary = synthesize(prompts, tmp_path / "ray-run", "vqgan-clip", args,
                         images_per_prompt=2, batch_size=2, ray=ray_cluster, workers=2)
    # a model the workers cannot load is the same one-sentence error as without Ray
    with pytest.raises(ModelLoadError, match=r"Could not load the VQGAN .*missing"):
        synthesize(prompts, tmp_path / "bad-run", "vqgan-clip",
                   {**args, "vqgan": str(tmp_path / "missing")}, ray="local", workers=1)
    assert summary.generated == 6
    here = synthesize(prompts, tmp_path / "local-run", "vqgan-clip", args, images_per_prompt=2,
                      batch_size=3)
    assert here.generated == 6
    remote = {(r.prompt_id, r.image_index): r for r in ImageStore(tmp_path / "ray-run").images()}
    local = {(r.prompt_id, r.image_index): r for r in ImageStore(tmp_path / "local-run").images()}
    assert remote.keys() == local.keys() and len(remote) == 6
    for key, r in remote.items():
        assert r.seed == local[key].seed
        a = np.asarray(Image.open(r.path), dtype=int)
        b = np.asarray(Image.open(local[key].path), dtype=int)
        assert np.abs(a - b).max() <= 1


def test_worker_plan_never_asks_for_more_than_the_cluster_holds():
    from spatialprobe.runner.cluster import worker_plan

    assert worker_plan({"CPU": 16.0, "GPU": 4.0}, None) == ({"num_gpus": 1}, 4)
    assert worker_plan({"CPU": 16.0, "GPU": 4.0}, 2) == ({"num_gpus": 1}, 2)
    assert worker_plan({"CPU": 16.0, "GPU": 4.0}, 8) == ({"num_gpus": 1}, 4)
    assert worker_plan({"CPU": 2.0}, None) == ({"num_cpus": 1}, 2)
    assert worker_plan({"CPU": 2.0}, 8) == ({"num_cpus": 1}, 2)  # 6 more would never start
    # what the model adapter declares: two GPUs a worker, or none (a server's client: one CPU each)
    assert worker_plan({"CPU": 16.0, "GPU": 4.0}, None, 2) == ({"num_gpus": 2}, 2)
    assert worker_plan({"CPU": 16.0, "GPU": 4.0}, None, 0) == ({"num_cpus": 1}, 16)
    import pytest

    from spatialprobe.errors import UsageError

    with pytest.raises(UsageError, match="needs 8 GPUs; the Ray cluster holds 4"):
        worker_plan({"CPU": 16.0, "GPU": 4.0}, None, 8)


def test_an_ask_run_asks_ray_for_the_gpus_its_adapter_declares():
    from spatialprobe import registry
    from spatialprobe.engine.run import AskRun, AskRunSettings
    from spatialprobe.runner.settings import Component

    for name, gpus in (("openai-api", 0), ("hf-mllm", 1)):
        run = object.__new__(AskRun)  # its settings only: no source read, no model loaded
        run.__dict__["settings"] = AskRunSettings(Component(name, {"model": "m"}), {}, "likelihood", ["none"], 0,
                                                  16, "cpu", 1)
        assert run.gpus_per_worker() == registry.lookup("model", name).gpus == gpus
