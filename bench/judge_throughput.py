"""Images judged per second against batch size: detector + depth + size rule, on this device.

Models are RANDOMLY INITIALIZED (no weights can be downloaded here), built in a temporary
directory and loaded through the same adapters the judge uses, so the compute is that of the
architecture, not of a trained checkpoint:

* ``--shape tiny`` (default): 1-2 layer OWL-ViT and DPT (hidden 16, 32 px inputs) - measures the
  pipeline's own overhead (pre/post-processing, rules) more than the networks.
* ``--shape base``: OWL-ViT B/32 text+vision towers at 768 px (the VISOR detector's shape) and a
  DPT ViT-B/16 at 384 px. Slow on a shared CPU; meant for a GPU (``--device cuda``).

Each batch size is timed twice, side by side: ``plain`` is the judge before the fast path
(processor preprocessing, per-image decoding, one host copy per box: ``tests/judge_plain.py``),
``fast`` resizes and normalises as tensor ops on the device and decodes the batch at once
(``preprocess="tensor"``); ``--path`` times only one of them.

Each batch size also prints its distance to the limit: the FLOPs of judging one batch (counted
with FlopCounterMode on one call) over the peak of a matmul timed in the same run (fp32 on CPU;
fp16 on CUDA, where the adapters run under fp16 autocast). ``--device cuda`` without a CUDA
device is an error.

Run: ``PYTHONPATH=. python bench/judge_throughput.py [--shape tiny|base] [--batches 1,2,4,8]
[--device cpu|cuda] [--path both|fast|plain]``.
The last line is the throughput at the largest batch over batch 1, followed by ``x``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _limits import bench_device, count_flops, peak_matmul


def build_models(root: Path, shape: str) -> tuple[Path, Path]:
    from judge_helpers import tiny_dpt, tiny_owlvit

    if shape == "tiny":
        return tiny_owlvit(root / "owl"), tiny_dpt(root / "dpt")
    from transformers import (
        DPTConfig,
        DPTForDepthEstimation,
        DPTImageProcessor,
        OwlViTConfig,
        OwlViTForObjectDetection,
        OwlViTImageProcessor,
        OwlViTProcessor,
    )

    owl = tiny_owlvit(root / "owl")  # reuse the tiny tokenizer files, replace model and images
    config = OwlViTConfig(text_config={"vocab_size": 64, "max_position_embeddings": 16,
                                        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0},
                          vision_config={"image_size": 768, "patch_size": 32})
    OwlViTForObjectDetection(config).save_pretrained(owl)
    processor = OwlViTProcessor.from_pretrained(owl)
    processor.image_processor = OwlViTImageProcessor(size={"height": 768, "width": 768},
                                                     crop_size={"height": 768, "width": 768})
    processor.save_pretrained(owl)
    dpt = root / "dpt"
    DPTForDepthEstimation(DPTConfig(image_size=384, hidden_size=768, num_hidden_layers=12,
                                    num_attention_heads=12, intermediate_size=3072,
                                    backbone_out_indices=[2, 5, 8, 11])).save_pretrained(dpt)
    DPTImageProcessor(size={"height": 384, "width": 384}, keep_aspect_ratio=False).save_pretrained(dpt)
    return owl, dpt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("tiny", "base"), default="tiny")
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--images", type=int, default=16, help="images judged per batch size")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--path", choices=("both", "fast", "plain"), default="both")
    args = parser.parse_args()
    device = bench_device(args.device)

    import torch
    from judge_helpers import scene
    from judge_plain import PlainDepth, PlainOwl

    from spatialprobe.detectors.hf import HFDepth, OwlDetector
    from spatialprobe.judging.box import JudgeConfig
    from spatialprobe.registry import Spec

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        owl, dpt = build_models(Path(tmp), args.shape)
        cfg = JudgeConfig(task="size", detector=Spec("owlvit", {"model": str(owl), "threshold": 0.0,
                                                                "device": str(device)}),
                          depth=Spec("dpt", {"model": str(dpt), "device": str(device)}),
                          rule="area*depth^2")
        paths = {"plain": (PlainOwl(str(owl), threshold=0.0, device=str(device)),
                           PlainDepth(str(dpt), device=str(device))),
                 "fast": (OwlDetector(str(owl), threshold=0.0, device=str(device), preprocess="tensor"),
                          HFDepth(str(dpt), device=str(device), preprocess="tensor"))}
        paths = {k: v for k, v in paths.items() if args.path in ("both", k)}
        meta = {"obj_a": "ant", "obj_b": "dog", "label": "smaller"}
        images = [scene("size", "ant", "dog", "smaller").resize((256, 256)) for _ in range(args.images)]
        rates = {}
        peak = peak_matmul(device, torch.float16 if device.type == "cuda" else torch.float32)
        print(f"shape={args.shape} (random init) device={device} threads={torch.get_num_threads()}; {peak.describe()}")
        for batch in [int(b) for b in args.batches.split(",")]:
            side, seconds = {}, {}
            for path, (detector, depth) in paths.items():
                judge_once(detector, depth, cfg, images[:batch], meta)  # warm-up
                start = time.perf_counter()
                for i in range(0, len(images), batch):
                    judge_once(detector, depth, cfg, images[i:i + batch], meta)
                seconds[path] = time.perf_counter() - start
                side[path] = len(images) / seconds[path]
            chosen = "fast" if "fast" in side else "plain"
            rates[batch] = side[chosen]
            detector, depth = paths[chosen]
            flops = count_flops(judge_once, detector, depth, cfg, images[:batch], meta)[1] * len(images) / batch
            versus = f"  fast/plain {side['fast'] / side['plain']:.2f}x" if len(side) == 2 else ""
            print(f"batch {batch:3d}: " + "  ".join(f"{k} {v:8.2f} images/s" for k, v in side.items())
                  + f"  ({rates[batch] / rates[min(rates)]:.2f}x batch 1){versus}; "
                  + f"{chosen}: {peak.line(flops, seconds[chosen], f'{len(images)} images')}")
        largest = max(rates)
        print(f"batch {largest} vs batch {min(rates)}: {rates[largest] / rates[min(rates)]:.2f}x")


def judge_once(detector, depth, cfg, images, meta):
    from spatialprobe.judging.box import judge_image

    found = detector.detect(images, [[meta["obj_a"], meta["obj_b"]]] * len(images))
    maps = depth.estimate(images)
    return [judge_image(cfg, f, d, meta) for f, d in zip(found, maps, strict=True)]


if __name__ == "__main__":
    main()
