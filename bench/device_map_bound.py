"""How far a model spread over devices (``--device-map auto``) is from the same model on one device.

For a masked LM (BERT), a causal LM (GPT-2) and a multimodal LLM (LLaVA-1.5), each tiny and built
here (tests/*_helpers.py; LLaVA needs ../shared/models), the same requests are scored by the model
whole on ``--device`` and spread by accelerate with ``max_memory`` = ``--share`` of the
checkpoint's bytes on the CPU, the rest on the disk (``--device cpu``, as in
tests/test_device_map.py), or that share on GPU 0 and the rest on the CPU (``--device cuda``;
the text LMs then in float16, spread or not). Printed per model: its
device map, the largest absolute difference of a score, and how many requests' arg-max option
(the prediction) changed.

Workload: the size task's 500 instances asked ``A is [larger|smaller] than B.`` (text models), and
16 questions with 64x64 images, 4 options each (the multimodal LLM).

Usage: python bench/device_map_bound.py [--device cpu] [--share 0.7]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's package; the model builders


def text_requests():
    from spatialprobe.models.base import ScoreRequest
    from spatialprobe.tasks import data as task_data

    return [ScoreRequest(f"The {i.obj_a} is", f" than the {i.obj_b}.", ("larger", "smaller"))
            for i in task_data.load("size").instances]


def image_requests():
    from PIL import Image

    from spatialprobe.models.base import ScoreRequest

    options = ("left of", "right of", "above", "below")
    return [ScoreRequest(f"Where is the cat {k} relative to the dog?", "", options,
                         Image.new("RGB", (64, 64), (16 * k, 90, 255 - 16 * k))) for k in range(16)]


def compare(name: str, adapter, path: Path, requests, device: str, share: float) -> str:
    """One line: the spread model's device map, max |score difference|, predictions changed."""
    size = (path / "model.safetensors").stat().st_size
    whole = adapter(str(path), device=device)
    cap = str(int(share * size))  # on a GPU: that much on GPU 0, the rest on the CPU
    spread = adapter(str(path), device_map="auto",
                     max_memory={"cpu": cap} if device == "cpu" else {"0": cap, "cpu": str(10 * size)})
    a, b = whole.score(requests), spread.score(requests)
    diff = max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))
    flips = sum(ra.index(max(ra)) != rb.index(max(rb)) for ra, rb in zip(a, b, strict=True))
    return (f"{name:<15} map {dict(spread.model.hf_device_map)}\n{'':<15} max |score difference| "
            f"{diff:.3g} over {sum(len(r.options) for r in requests)} scores; predictions changed: "
            f"{flips} of {len(requests)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--share", type=float, default=0.7)
    args = parser.parse_args()
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    from causal_helpers import tiny_bpe_gpt2
    from mllm_helpers import build, processor_loads
    from mlm_helpers import tiny_wordpiece_bert

    from spatialprobe.models.causal_lm import CausalLMScorer
    from spatialprobe.models.masked_lm import MaskedLMScorer
    from spatialprobe.models.mllm import MultimodalLLM

    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        print(compare("masked LM", MaskedLMScorer, tiny_wordpiece_bert(folder / "bert"), text_requests(),
                      args.device, args.share))
        print(compare("causal LM", CausalLMScorer, tiny_bpe_gpt2(folder / "gpt2"), text_requests(),
                      args.device, args.share))
        if processor_loads("llava") is None:  # its tied embedding and head: the CPU holds the rest at 1.0
            print(compare("multimodal LLM", MultimodalLLM, build("llava", folder / "llava"), image_requests(),
                          args.device, max(args.share, 1.0)))


if __name__ == "__main__":
    main()
