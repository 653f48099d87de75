"""VQGAN+CLIP images per hour against batch size, measured side by side in one run.

    python bench/synthesis_throughput.py [--device auto|cpu|cuda] [--batch-sizes 1,4,8,16]
        [--compare] [--precision auto|fp32|bf16] [--checkpoint]

``--compare`` times the plain and the fast path (``speed`` setting) at every batch size in the
same run and prints fast/plain; without it the device's default speed is timed.
``--checkpoint`` checkpoints the VQGAN decoder in both (recomputed in the backward pass: less
memory, so batches of 32-64 fit on one GPU).

On CUDA: the paper's settings (512x512, 32 cutouts, bf16 autocast) with randomly initialised
models of the real shapes (the taming ImageNet f=16/16384 VQGAN, CLIP ViT-B/32): the cost of an
iteration does not depend on the weights. Each batch size runs ``--measure-iterations`` steps
after a warm-up, and images/hour is extrapolated to the preset's 600 iterations.
On CPU: the tiny test models (32x32 images, 8 cutouts, 20 iterations, one torch thread,
best of two timings), because a real-shape
model at 512x512 takes minutes per step on a shared 2-core machine; the CPU ratio says how
well batching amortises per-step overhead, not what a GPU will do.

Each batch size also prints its distance to the limit: the FLOPs of the timed optimisation
(FlopCounterMode on a 1- and a 2-iteration run: the difference is one step, forward and backward)
over the peak of a matmul of the autocast dtype (bf16 on CUDA, fp32 on CPU) timed in the same
run. ``--device cuda`` without a CUDA device is an error.

The last line is the batching speed-up (of the fast path with ``--compare``): best images/hour
over images/hour at batch size 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from _limits import bench_device, count_flops, peak_matmul

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

IMAGENET_F16_16384 = {
    "embed_dim": 256, "n_embed": 16384,
    "ddconfig": {"double_z": False, "z_channels": 256, "resolution": 256, "in_channels": 3,
                 "out_ch": 3, "ch": 128, "ch_mult": [1, 1, 2, 2, 4], "num_res_blocks": 2,
                 "attn_resolutions": [16], "dropout": 0.0},
}


def build_models(root: Path, real_shapes: bool) -> tuple[str, str]:
    from spatialprobe.tiny.image_generators import vqmodel
    from spatialprobe.tiny.image_text import clip
    from spatialprobe.tiny.vocab import clip_characters

    if not real_shapes:  # the tests' tiny shapes (tests/synthesis_helpers.py)
        return str(vqmodel(root / "vq")), str(clip(root / "clip", hidden=32, image_size=16, patch=8, max_length=32,
                                                  processor=False))
    from diffusers import VQModel
    from transformers import CLIPConfig, CLIPModel

    from spatialprobe.convert.vqgan import vqmodel_config

    VQModel(**vqmodel_config(IMAGENET_F16_16384)).save_pretrained(str(root / "vq"))
    clip_characters(root / "clip", 32)  # tokenizer speed is irrelevant here
    config = CLIPConfig()  # the defaults are the ViT-B/32 shapes
    config.text_config.vocab_size = 514
    config.text_config.bos_token_id, config.text_config.eos_token_id = 512, 513
    CLIPModel(config).save_pretrained(str(root / "clip"))
    return str(root / "vq"), str(root / "clip")


def timed_step(synth, prompts, seeds, iterations: int, gpu: bool) -> float:
    """Seconds per optimisation step for this batch."""
    import torch

    if gpu:
        torch.cuda.synchronize()
    start = time.perf_counter()
    synth.optimize(prompts, seeds)
    if gpu:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / iterations


def optimisation_flops(synth, prompts, seeds, iterations: int) -> float:
    """FLOPs of ``synth.optimize`` over ``iterations`` steps: counted on 1 and on 2 iterations,
    whose difference is one step (the rest is the per-image set-up: text encoding, latents)."""
    counts = []
    for steps in (1, 2):
        synth.settings = dataclasses.replace(synth.settings, iterations=steps)
        counts.append(count_flops(synth.optimize, prompts, seeds)[1])
    return counts[0] + (iterations - 1) * (counts[1] - counts[0])


def main() -> None:
    import torch

    from spatialprobe.synthesis.vqgan_clip import VQGANCLIP

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-sizes", default=None, help="comma-separated")
    parser.add_argument("--measure-iterations", type=int, default=None)
    parser.add_argument("--compare", action="store_true", help="time plain and fast side by side")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--checkpoint", action="store_true", help="checkpoint the VQGAN decoder")
    args = parser.parse_args()
    device = bench_device(args.device)
    gpu = device.type == "cuda"
    if not gpu:
        torch.set_num_threads(1)  # a shared CPU: one thread gives steady, comparable timings
    sizes = [int(b) for b in (args.batch_sizes or ("1,4,8,16" if gpu else "1,2,4,8")).split(",")]
    measured = args.measure_iterations or (10 if gpu else 20)
    settings = {} if gpu else {"size": 32, "iterations": 20, "cutouts": 8, "large_cutouts": 1}
    with tempfile.TemporaryDirectory() as tmp:
        vq, clip = build_models(Path(tmp), real_shapes=gpu)
        speeds = ("plain", "fast") if args.compare else ("auto",)
        synths = {speed: VQGANCLIP(vq, clip, settings={**settings, "speed": speed},
                                   device=str(device), precision=args.precision,
                                   checkpoint=args.checkpoint)
                  for speed in speeds}
    synth = synths[speeds[0]]
    full = synth.settings.iterations
    peak = peak_matmul(device, synth.amp_dtype if gpu else torch.float32)
    print(f"device {device} ({torch.cuda.get_device_name(device) if gpu else 'cpu'}), "
          f"{'real-shape random models, paper settings' if gpu else 'tiny test models'}: "
          f"{synth.settings.size}px, {synth.settings.cutouts} cutouts, {full} iterations per image"
          f"{f', timed over {measured}' if measured != full else ''}"
          f"{', decoder checkpointed' if args.checkpoint else ''}; {peak.describe()}")
    rates: dict[int, float] = {}
    for batch, (speed, synth) in ((b, item) for b in sizes for item in synths.items()):
        prompts = [f"A man number {i} washes the car." for i in range(batch)]
        seeds = list(range(batch))
        if gpu:
            torch.cuda.reset_peak_memory_stats(device)
        try:
            synth.settings = dataclasses.replace(synth.settings, iterations=2)
            synth.optimize(prompts, seeds)  # warm-up: allocator, kernels, autotuning
            synth.settings = dataclasses.replace(synth.settings, iterations=measured)
            per_step = min(timed_step(synth, prompts, seeds, measured, gpu) for _ in range(2))
        except torch.cuda.OutOfMemoryError:  # larger batches will not fit either
            torch.cuda.empty_cache()
            print(f"batch {batch:3d}: out of GPU memory; larger batch sizes skipped")
            break
        memory = f", peak {torch.cuda.max_memory_allocated(device) / 2**30:5.1f} GiB" if gpu else ""
        rate = 3600 * batch / (per_step * full)
        ratio = f", fast/plain {rate / rates[batch]:.2f}x" if speed == "fast" else ""
        rates[batch] = rate
        flops = optimisation_flops(synth, prompts, seeds, measured)
        synth.settings = dataclasses.replace(synth.settings, iterations=full)
        print(f"batch {batch:3d}{f' {speed:5s}' if args.compare else ''}: "
              f"{per_step * 1000:8.1f} ms/iteration, {rate:9.1f} images/hour{memory}{ratio}; "
              f"{peak.line(flops, per_step * measured, f'{measured} iterations')}")
    if not rates:
        sys.exit("no batch size fitted in memory")
    best = max(rates, key=rates.get)
    print(f"batching speed-up (batch {best} vs batch {sizes[0]}, images/hour ratio):")
    print(f"{rates[best] / rates[sizes[0]]:.2f}x")


if __name__ == "__main__":
    main()
