"""The diffusers backend with a tiny Stable Diffusion pipeline built here (no download)."""

from __future__ import annotations

import numpy as np
import pytest
from synthesis_helpers import one_torch_thread, tiny_stable_diffusion  # noqa: F401

from spatialprobe.imagestore import ImageStore
from spatialprobe.loading import ModelLoadError
from spatialprobe.synthesis import load_prompts, synthesize
from spatialprobe.synthesis.jobs import Job


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory):
    return str(tiny_stable_diffusion(tmp_path_factory.mktemp("sd")))


def backend(path, **kwargs):
    from spatialprobe.synthesis.diffusion import DiffusersPipeline

    return DiffusersPipeline(path, **{"steps": 2, "height": 16, "width": 16, "device": "cpu",
                                      **kwargs})


def test_batch_matches_one_at_a_time_and_seeds_matter(pipeline_dir):
    synth = backend(pipeline_dir)
    jobs = [Job("a", "An ant and a bird.", 0, 1), Job("a", "An ant and a bird.", 1, 2),
            Job("b", "A man washes the car.", 0, 3)]
    batch = [np.asarray(r.image, dtype=int) for r in synth.generate(jobs)]
    alone = [np.asarray(synth.generate([j])[0].image, dtype=int) for j in jobs]
    assert batch[0].shape == (16, 16, 3)
    for b, a in zip(batch, alone, strict=True):
        assert np.abs(b - a).max() <= 1  # PNG-level equality up to rounding
    assert np.abs(batch[0] - batch[1]).max() > 10  # different seeds, different images
    described = synth.describe()
    assert described["model"] == pipeline_dir and len(described["weights_hash"]) == 16
    assert described["settings"]["steps"] == 2
    assert (described["settings"]["device"], described["settings"]["dtype"]) == ("cpu", "float32")


def test_images_per_prompt_through_the_store(tmp_path, pipeline_dir):
    (tmp_path / "p.txt").write_text("An ant and a bird.\nA man washes the car.\n")
    args = {"model": pipeline_dir, "steps": 2, "guidance": 3.0, "height": 16, "width": 16,
            "negative_prompt": "", "device": "cpu", "precision": "auto"}
    summary = synthesize(load_prompts(str(tmp_path / "p.txt")), tmp_path / "run", "diffusers",
                         args, images_per_prompt=2, batch_size=3)
    assert summary.generated == 4
    records = list(ImageStore(tmp_path / "run").images())
    assert [(r.prompt_id, r.image_index) for r in records] == [
        ("line-0001", 0), ("line-0001", 1), ("line-0002", 0), ("line-0002", 1)]
    assert all(r.backend == "diffusers" and r.clip_score is None for r in records)


def test_unloadable_model_says_what_to_do(tmp_path):
    with pytest.raises(ModelLoadError, match="Could not load the diffusion pipeline"):
        backend(str(tmp_path / "missing-model"))
