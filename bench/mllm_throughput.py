"""Multimodal LLM adapter throughput: batched vs one-at-a-time generation and option scoring.

Model: a random model of a real architecture (``--family llava|smolvlm|mllama|qwen2.5-vl``) with the
genuine processor and chat template from ../shared/models: tiny (tests/mllm_helpers.py's shrink
recipe; the default) or ``--shape real`` (the genuine config unshrunk: LLaVA-1.5-7B's 7.06B
parameters, ... ; for a GPU). Workload: ``--items`` questions, each with its own 64x64 image,
``--options`` multi-token options (``left of``, ``right of``, ``above``, ``below``, ...).

Measured side by side in one run, each on the same adapter and items:

* **generate**: ``--batch-size`` requests per ``generate`` call (left-padded, greedy,
  ``--new-tokens`` new tokens) vs one request per call; the replies must be identical.
* **score**: the shipped path (``--batch-size`` requests per call, the prompt's pass shared by its
  options) vs one request per call with one padded row per option (prompt + option encoded
  again for every option: the image too), and the two middle ways (batched rows; one request per
  call with the shared prompt), so the ratio of batching and of prompt sharing each show.

FLOPs of the batched calls are counted with FlopCounterMode (run again, untimed) and printed as
achieved FLOP/s against a matmul peak of the same dtype measured in this run (bench/_limits.py);
on a CPU with one torch thread every time is this thread's CPU time (``bench_clock``). The line
``batching can give at most`` divides one-at-a-time generation by a batched one-token generate
(the processor, the vision tower and the prompt's pass: per-item work that batching does not
remove), a bound on the generate ratio. ``--device cuda``: the weights in the adapter's CUDA
default (bfloat16) and a bfloat16 peak.

Usage: python bench/mllm_throughput.py [--family llava] [--device cpu|cuda] [--shape tiny|real]
       [--items 16] [--batch-size 8] [--options 4] [--new-tokens 8]
The last line is the score speed-up of the shipped path over one request per call, one row per
option, followed by ``x``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _limits import bench_clock, bench_device, count_flops, peak_matmul, synchronize

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's package; the model builders

OPTIONS = ("left of", "right of", "above", "below", "in front of", "behind")


def build(family: str, shape: str, device):
    """(model, processor): random weights of ``family``'s real architecture, genuine processor."""
    import torch
    from mllm_helpers import FOLDERS, SHARED, shrink
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    folder = SHARED / FOLDERS[family]
    config = AutoConfig.from_pretrained(folder)
    if shape == "tiny":
        config = shrink(family, config)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, dtype=dtype)
    return model.eval(), AutoProcessor.from_pretrained(folder)


def timed(device, fn, *args):
    """(``fn(*args)``, its seconds by :func:`_limits.bench_clock`: CPU time on one CPU thread, else wall)."""
    clock = bench_clock(device)[0]
    synchronize(device)
    start = clock()
    out = fn(*args)
    synchronize(device)
    return out, clock() - start


def one_at_a_time(method, requests):
    return [out for r in requests for out in method([r])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="llava", choices=("llava", "smolvlm", "mllama", "qwen2.5-vl"))
    parser.add_argument("--shape", default="tiny", choices=("tiny", "real"))
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--options", type=int, default=4, choices=range(2, len(OPTIONS) + 1))
    parser.add_argument("--new-tokens", type=int, default=8)
    args = parser.parse_args()
    device = bench_device(args.device)

    import torch
    from PIL import Image

    from spatialprobe.models.base import GenerateRequest, ScoreRequest
    from spatialprobe.models.mllm import MultimodalLLM

    model, processor = build(args.family, args.shape, device)
    params = sum(p.numel() for p in model.parameters())
    images = [Image.new("RGB", (64, 64), ((37 * i) % 256, (91 * i) % 256, (151 * i) % 256))
              for i in range(args.items)]
    questions = [f"Where is object {i} relative to the {'large ' * (i % 4)}box?" for i in range(args.items)]
    generate = [GenerateRequest(q, im, max_new_tokens=args.new_tokens) for q, im in zip(questions, images, strict=True)]
    score = [ScoreRequest(q, "", OPTIONS[:args.options], im) for q, im in zip(questions, images, strict=True)]

    def adapter(batch_size: int, cache: str) -> MultimodalLLM:
        return MultimodalLLM("bench", device=str(device), batch_size=batch_size, prompt_cache=cache,
                             model_obj=model, processor=processor)

    shipped = adapter(args.batch_size, "on")
    prompt_ids = shipped.encode([shipped.chat_text(questions[0], True)], [images[0]])["input_ids"].shape[1]
    print(f"model: random {args.family} ({args.shape}, {params / 1e6:,.1f}M parameters), {device} "
          f"{shipped.describe()['dtype']}, torch threads {torch.get_num_threads()}; {args.items} items, one "
          f"64x64 image each ({prompt_ids} prompt ids), {args.options} options, {args.new_tokens} new tokens")
    shipped.generate(generate[:1])  # warm-up: kernel selection, allocator

    batched_text, batched_gen = timed(device, shipped.generate, generate)
    single_text, single_gen = timed(device, one_at_a_time, shipped.generate, generate)
    same = "identical" if batched_text == single_text else "DIFFERENT"
    print(f"generate: batch {args.batch_size} {batched_gen:.2f} s ({args.items / batched_gen:.2f} items/s) | "
          f"one at a time {single_gen:.2f} s ({args.items / single_gen:.2f} items/s) | "
          f"ratio {single_gen / batched_gen:.2f}x; replies {same}")
    # the per-item work no batching removes: the processor, the vision tower and the prompt's
    # pass (a one-token generate, batched); one at a time divided by it bounds the ratio
    first = [GenerateRequest(r.prompt, r.image, max_new_tokens=1) for r in generate]
    _, floor = timed(device, shipped.generate, first)
    print(f"generate: batched one-token generate (processor + vision + prompt pass) {floor:.2f} s: "
          f"batching can give at most {single_gen / floor:.2f}x here")

    rows = {}
    for label, size, cache in (("batched, shared prompt (shipped)", args.batch_size, "on"),
                               ("batched, one row per option", args.batch_size, "off"),
                               ("one at a time, shared prompt", 1, "on"),
                               ("one at a time, one row per option", 1, "off")):
        scorer = adapter(size, cache)
        rows[label] = timed(device, scorer.score, score)
    base = rows["batched, shared prompt (shipped)"]
    largest = max(abs(a - b) for label in rows for x, y in zip(rows[label][0], base[0], strict=True)
                  for a, b in zip(x, y, strict=True))
    for label, (_, seconds) in rows.items():
        print(f"score: {label:36s} {seconds:7.2f} s ({args.items / seconds:7.2f} items/s), "
              f"shipped {seconds / base[1]:.2f}x faster")
    print(f"score: largest difference between the four ways {largest:.2e}")
    peak = peak_matmul(device, torch.bfloat16 if device.type == "cuda" else torch.float32,
                       clock=bench_clock(device)[1])
    print(peak.describe())
    _, flops = count_flops(shipped.generate, generate)  # again, untimed
    print(peak.line(flops, batched_gen, "batched generate"))
    _, flops = count_flops(shipped.score, score)
    print(peak.line(flops, base[1], "batched score"))
    print(f"{rows['one at a time, one row per option'][1] / base[1]:.2f}x")


if __name__ == "__main__":
    main()
