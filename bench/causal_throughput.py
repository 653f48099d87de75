"""Causal-LM scoring, side by side in one run: full passes, the whole-logits head, the chunked head.

Model: a randomly initialised GPT-2 (default 2 layers, width 32: the issue's tiny model) with
GPT-2's genuine byte-level BPE (``../shared/models/roberta-base``'s merges and vocabulary, 50,265
ids). Task: size, every built-in prompt x every instance x every answer word, as
``spatialprobe probe size`` scores them (``--format chat``: the chat question, two options).

* ``full``: the earlier code (tests/causal_reference.py): one full forward pass per
  distinct sentence, the LM head at every position.
* ``whole``: the earlier main (tests/causal_reference.py's ``materialized``): one pass per
  shared context, the options as continuations of its key/value cache, the head only where a
  log-probability is read, its ``[positions, vocabulary]`` logits written out whole and
  ``torch.logsumexp``-ed, each pass read at once.
* ``new``: ``CausalLMScorer.score``: the same passes, the reads of a chunk of contexts pooled and
  normalised by the chunked head (spatialprobe/models/causal_prefix.py, ``HeadLogProbs``).

All on the same model object, chunk by chunk alternating (bench/_scorer_compare.py); printed: each
path's time, the new path's speed-up over each, the largest score difference and whether any
request's best word changed, each path's FLOP/s against the matmul peak measured in this run, and
**the scored tokens' head + normalisation** of ``whole`` and ``new`` against the same peak: its
FLOPs are the head's matrix product, 2 x hidden x vocabulary per normalised position (the
normalisation's max, exponentials and sums are not counted), its seconds those of the reads. On a
CPU with one torch thread every time is this thread's CPU time (bench/_limits.py ``bench_clock``).
``--device cuda``: the scorer's CUDA default (fp16) and an fp16 peak; without a GPU it is an error.

Usage: python bench/causal_throughput.py [--device cpu|cuda] [--instances N] [--layers 2]
       [--hidden 32] [--batch-size 64] [--format plain|chat] [--compare full,whole]
The last line is the new path's speed-up over the oldest compared, followed by ``x``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _limits import bench_device
from _scorer_compare import Meter, arguments, report, size_requests

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's package; the reference scorer
BPE = ROOT.parent / "shared" / "models" / "roberta-base"
CHAT_TEMPLATE = ("{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
                 "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}")


def build_model(directory: Path, layers: int, hidden: int, heads: int) -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    tokenizer = GPT2TokenizerFast(vocab=str(BPE / "vocab.json"), merges=str(BPE / "merges.txt"))
    tokenizer.chat_template = CHAT_TEMPLATE
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=128, n_embd=hidden, n_layer=layers,
                        n_head=heads, bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)


class MeteredReads:
    """A shared-prefix path's reads, timed by ``meter`` (2 x hidden x vocabulary FLOPs per normalised row)."""

    def __init__(self, reads, meter: Meter, per_row: int):
        self.reads, self.meter, self.per_row = reads, meter, per_row
        self.head, self.pools = reads.head, reads.pools

    def logprobs(self, states, rows, targets):
        return self.meter.run(self.per_row * len(states), self.reads.logprobs, states, rows, targets)


def metered(scorer, what: str) -> Meter:
    """Time ``scorer``'s head + normalisation from now on."""
    meter = Meter(what)
    vocabulary, hidden = scorer._shared.head.weight.shape
    scorer._shared.reads = MeteredReads(scorer._shared.reads, meter, 2 * hidden * vocabulary)
    return meter


def main() -> None:
    parser = arguments(__doc__, 64, "causal LM")
    parser.add_argument("--format", default="plain", choices=("plain", "chat"))
    parser.add_argument("--compare", default="full,whole",
                        help="older paths to time against the new one: full, whole or both (comma-separated)")
    args = parser.parse_args()
    older = [name for name in args.compare.split(",") if name]
    if not older or set(older) - {"full", "whole"}:
        sys.exit(f"--compare {args.compare}: name full, whole or both")
    if not args.model and not BPE.is_dir():
        sys.exit(f"needs GPT-2's BPE at {BPE}")
    device = bench_device(args.device)

    import torch
    from causal_reference import ReferenceCausalLM, materialized

    from spatialprobe.models.causal_lm import CausalLMScorer

    model_dir = Path(args.model) if args.model else Path(tempfile.mkdtemp(prefix="causal-bench-")) / "gpt2"
    if not args.model:
        build_model(model_dir, args.layers, args.hidden, args.heads)
    scorer = CausalLMScorer(str(model_dir), device=str(device), batch_size=args.batch_size, format=args.format)
    if scorer._shared is None or scorer._shared.head is None:
        sys.exit(f"{model_dir} does not take the head-only shared-prefix path: nothing here to compare")
    print(f"model: {model_dir} ({scorer.model.num_parameters():,} parameters), {device}"
          f"{' fp16' if scorer.half else ' fp32'}, torch threads {torch.get_num_threads()}, "
          f"batch size {args.batch_size}, --format {args.format}")
    requests = size_requests(args.instances or None, chat=args.format == "chat")
    paths = {"full": ReferenceCausalLM(scorer), "whole": materialized(scorer), "new": scorer}
    paths = {name: path for name, path in paths.items() if name in older or name == "new"}
    meters = tuple(metered(path, f"{name} head + normalisation") for name, path in paths.items() if name != "full")
    ratios = report(paths, requests, device, torch.float16 if scorer.half else torch.float32,
                    "size prompts x instances, every answer word", meters)
    print(f"{next(iter(ratios.values())):.2f}x")


if __name__ == "__main__":
    main()
