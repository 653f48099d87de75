"""The workloads ``bench/gpu_steps.py profile`` profiles: one step of each bench's fast (shipped)
path, built and warmed up, as ``(name, what one step is, the step)``. ``PARTS`` maps each part
(synthesis, judge, probe, mllm) to the function that builds its steps; ``bert_dir`` builds the
random BERT the probe part and the CLI stages share. Not a script: the bench modules each part
imports are its siblings in ``bench/`` (first on ``sys.path`` when a bench runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def bert_dir(work: Path, layers: int, hidden: int) -> tuple[Path, float]:
    """A random BERT of this shape (genuine bert-base-uncased tokenizer) under ``work``, built once
    per suite run (shared by the probe profile and the CLI stages): its directory, seconds built."""
    from probe_throughput import build_model

    directory = work / f"bert-{layers}x{hidden}"
    if (directory / "config.json").is_file():
        return directory, 0.0
    start = time.perf_counter()
    build_model(directory, layers, hidden)
    return directory, time.perf_counter() - start


Step = tuple[str, str, Callable[[], Any]]  # (name, what one step is, the step)


def part_synthesis(size: str, device, root: Path, work: Path) -> list[Step]:
    """The VQGAN+CLIP fast path at the paper preset, batch 16 (tiny: the test models, batch 2)."""
    import dataclasses

    import torch
    from synthesis_throughput import build_models

    from spatialprobe.synthesis.vqgan_clip import VQGANCLIP

    tiny = size == "tiny"
    vq, clip = build_models(root, real_shapes=not tiny)
    settings = {"size": 32, "cutouts": 8, "large_cutouts": 1} if tiny else {}
    synth = VQGANCLIP(vq, clip, settings={**settings, "speed": "fast"}, device=str(device))
    synth.settings = dataclasses.replace(synth.settings, iterations=2)
    batch = 2 if tiny else 16
    prompts, seeds = [f"A man number {i} washes the car." for i in range(batch)], list(range(batch))
    step, run = synth._step, synth._step.run

    def labelled(*args, **kwargs):  # each optimisation step as one row of the table
        with torch.profiler.record_function("vqgan_clip.step"):
            return run(*args, **kwargs)

    step.run = labelled
    synth.optimize(prompts, seeds)  # warm-up: compilation, allocator, kernel selection
    s = synth.settings
    return [("synthesis", f"VQGAN+CLIP fast path ({synth.speed}, {synth.amp_dtype}), batch {batch}, {s.size} px, "
             f"{s.cutouts} cutouts: optimize() of 2 iterations (text encoding, latents, 2 steps, "
             "final decode and similarity); rows 'vqgan_clip.step' are the steps",
             lambda: synth.optimize(prompts, seeds))]


def part_judge(size: str, device, root: Path, work: Path) -> list[Step]:
    """Detector + depth + size rule on a batch of 16 (tiny: 2), the fast path."""
    from judge_helpers import scene
    from judge_throughput import build_models, judge_once

    from spatialprobe.detectors.hf import HFDepth, OwlDetector
    from spatialprobe.judging.box import JudgeConfig
    from spatialprobe.registry import Spec

    shape = "tiny" if size == "tiny" else "base"
    owl, dpt = build_models(root, shape)
    detector = OwlDetector(str(owl), threshold=0.0, device=str(device), preprocess="tensor")
    depth = HFDepth(str(dpt), device=str(device), preprocess="tensor")
    cfg = JudgeConfig(task="size", rule="area*depth^2",
                      detector=Spec("owlvit", {"model": str(owl), "threshold": 0.0, "device": str(device)}),
                      depth=Spec("dpt", {"model": str(dpt), "device": str(device)}))
    meta = {"obj_a": "ant", "obj_b": "dog", "label": "smaller"}
    batch = 2 if size == "tiny" else 16
    images = [scene("size", "ant", "dog", "smaller").resize((256, 256)) for _ in range(batch)]
    judge_once(detector, depth, cfg, images, meta)  # warm-up
    return [("judge", f"judge fast path (tensor preprocessing), {shape} shapes, one batch of {batch} images: "
             "detect + depth + size rule", lambda: judge_once(detector, depth, cfg, images, meta))]


def part_probe(size: str, device, root: Path, work: Path) -> list[Step]:
    """The masked-LM scorer on one commit's chunk of size cells (BERT-large shape; tiny: 1x16)."""
    from _scorer_compare import size_requests

    from spatialprobe.models.masked_lm import MaskedLMScorer
    from spatialprobe.probing.run import CELLS_PER_COMMIT

    layers, hidden = (1, 16) if size == "tiny" else (24, 1024)
    model, _ = bert_dir(work, layers, hidden)
    scorer = MaskedLMScorer(str(model), device=str(device), batch_size=64)
    requests = size_requests()
    scorer.score(requests[CELLS_PER_COMMIT:CELLS_PER_COMMIT + 64])  # warm-up on other cells
    chunk = requests[:CELLS_PER_COMMIT]
    return [("probe", f"probe scoring, random BERT {layers}x{hidden} ({'fp16' if scorer.half else 'fp32'}), "
             f"one chunk of {len(chunk)} size cells x {len(chunk[0].options)} answer words (one commit of a run)",
             lambda: scorer.score(chunk))]


def part_mllm(size: str, device, root: Path, work: Path) -> list[Step]:
    """The multimodal-LLM adapter, batch 8: option scoring and generation (LLaVA-1.5-7B shape)."""
    from mllm_throughput import OPTIONS, build
    from PIL import Image

    from spatialprobe.models.base import GenerateRequest, ScoreRequest
    from spatialprobe.models.mllm import MultimodalLLM

    shape, batch = ("tiny", 2) if size == "tiny" else ("real", 8)
    model, processor = build("llava", shape, device)
    adapter = MultimodalLLM("bench", device=str(device), batch_size=batch, prompt_cache="on",
                            model_obj=model, processor=processor)
    images = [Image.new("RGB", (64, 64), ((37 * i) % 256, (91 * i) % 256, (151 * i) % 256)) for i in range(batch + 1)]
    questions = [f"Where is object {i} relative to the box?" for i in range(batch + 1)]
    score = [ScoreRequest(q, "", OPTIONS[:4], im) for q, im in zip(questions, images, strict=True)]
    generate = [GenerateRequest(q, im, max_new_tokens=8) for q, im in zip(questions, images, strict=True)]
    adapter.score(score[-1:])  # warm-up on an item not profiled
    adapter.generate(generate[-1:])
    what = f"multimodal LLM adapter, random llava ({shape}), batch {batch}, one 64x64 image each"
    return [("mllm-score", f"{what}: score() of 4 options each (shared prompt pass)",
             lambda: adapter.score(score[:-1])),
            ("mllm-generate", f"{what}: generate() of 8 new tokens each", lambda: adapter.generate(generate[:-1]))]


PARTS: dict[str, Callable[..., list[Step]]] = {
    "synthesis": part_synthesis, "judge": part_judge, "probe": part_probe, "mllm": part_mllm}
