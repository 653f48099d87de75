"""ViLT cloze scoring, before and after the shared-pass change: one pass per answer word against one per prompt.

Model: a randomly initialised ViltForMaskedLM of ``../shared/models/vilt-b32-mlm``'s configuration
shrunk (default 2 layers, width 32: the issue's tiny model; the image side keeps 384-pixel images
in 32-pixel patches), with that checkpoint's genuine image processor and bert-base-uncased's
tokenizer (``../shared/models``). Task: size, every built-in prompt x every instance x every answer
word, as ``spatialprobe probe size`` scores them, with the scorer's default blank image.

* old: the previous code (tests/vilt_reference.py): one forward row per answer word, the image
  processed for every row.
* new: ``ViltMaskedLMScorer.score``: one row per (prompt, image, number of pieces), read for every
  word of that length; each distinct image of a batch processed once.

Both on the same model object, chunk by chunk alternating (bench/_scorer_compare.py); printed:
both times, their ratio, the largest score difference, whether every request's best word is the
same, and the achieved FLOP/s of each against the matmul peak measured in this run.
``--device cuda``: autocast (the scorer's CUDA path) and an fp16 peak; without a GPU it is an error.

Usage: python bench/vilt_throughput.py [--device cpu|cuda] [--instances N] [--layers 2]
       [--hidden 32] [--batch-size 16]
The last line is the speed-up followed by ``x``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _limits import bench_device
from _scorer_compare import arguments, report, size_requests

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's package; the reference scorer
SHARED = ROOT.parent / "shared" / "models"


def build_model(directory: Path, layers: int, hidden: int, heads: int) -> None:
    import torch
    from transformers import BertTokenizerFast, ViltConfig, ViltForMaskedLM, ViltImageProcessorPil, ViltProcessor

    config = ViltConfig.from_pretrained(SHARED / "vilt-b32-mlm")
    config.update({"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
                   "intermediate_size": 4 * hidden})
    torch.manual_seed(0)
    ViltForMaskedLM(config).save_pretrained(directory)
    ViltProcessor(ViltImageProcessorPil.from_pretrained(SHARED / "vilt-b32-mlm"),
                  BertTokenizerFast.from_pretrained(SHARED / "bert-base-uncased")).save_pretrained(directory)


def main() -> None:
    parser = arguments(__doc__, 16, "ViLT masked-LM")
    args = parser.parse_args()
    if not args.model and not (SHARED / "vilt-b32-mlm").is_dir():
        sys.exit(f"needs the ViLT configuration at {SHARED / 'vilt-b32-mlm'}")
    device = bench_device(args.device)

    import torch
    from vilt_reference import ReferenceVilt

    from spatialprobe.models.vilt import ViltMaskedLMScorer

    model_dir = Path(args.model) if args.model else Path(tempfile.mkdtemp(prefix="vilt-bench-")) / "vilt"
    if not args.model:
        build_model(model_dir, args.layers, args.hidden, args.heads)
    scorer = ViltMaskedLMScorer(str(model_dir), device=str(device), batch_size=args.batch_size)
    print(f"model: {model_dir} ({scorer.model.num_parameters():,} parameters), {device}, "
          f"torch threads {torch.get_num_threads()}, batch size {args.batch_size}, blank image")
    requests = size_requests(args.instances or None)
    ratios = report({"old": ReferenceVilt(scorer), "new": scorer}, requests, device,
                   torch.float16 if device.type == "cuda" else torch.float32,
                   "size prompts x instances, every answer word")
    print(f"{ratios['old']:.2f}x")


if __name__ == "__main__":
    main()
