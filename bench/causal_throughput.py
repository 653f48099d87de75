"""Causal-LM scoring, before and after issue 21: full passes against one pass per shared context.

Model: a randomly initialised GPT-2 (default 2 layers, width 32: the issue's tiny model) with
GPT-2's genuine byte-level BPE (``../shared/models/roberta-base``'s merges and vocabulary, 50,265
ids). Task: size, every built-in prompt x every instance x every answer word, as
``spatialprobe probe size`` scores them (``--format chat``: the chat question, two options).

* old: the previous code (tests/causal_reference.py): one full forward pass per distinct sentence,
  the LM head at every position.
* new: ``CausalLMScorer.score``: one pass per distinct context, the options as continuations of
  its key/value cache, the LM head only where a log-probability is read.

Both on the same model object, chunk by chunk alternating (bench/_scorer_compare.py); printed:
both times, their ratio, the largest score difference, whether every request's best word is the
same, and the achieved FLOP/s of each against the matmul peak measured in this run.
``--device cuda``: the scorer's CUDA default (fp16) and an fp16 peak; without a GPU it is an error.

Usage: python bench/causal_throughput.py [--device cpu|cuda] [--instances N] [--layers 2]
       [--hidden 32] [--batch-size 64] [--format plain|chat]
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


def main() -> None:
    parser = arguments(__doc__, 64, "causal LM")
    parser.add_argument("--format", default="plain", choices=("plain", "chat"))
    args = parser.parse_args()
    if not args.model and not BPE.is_dir():
        sys.exit(f"needs GPT-2's BPE at {BPE}")
    device = bench_device(args.device)

    import torch
    from causal_reference import ReferenceCausalLM

    from spatialprobe.models.causal_lm import CausalLMScorer

    model_dir = Path(args.model) if args.model else Path(tempfile.mkdtemp(prefix="causal-bench-")) / "gpt2"
    if not args.model:
        build_model(model_dir, args.layers, args.hidden, args.heads)
    scorer = CausalLMScorer(str(model_dir), device=str(device), batch_size=args.batch_size, format=args.format)
    if scorer._shared is None:
        sys.exit(f"{model_dir} failed the shared-prefix check: the new path is the old one for this model")
    print(f"model: {model_dir} ({scorer.model.num_parameters():,} parameters), {device}"
          f"{' fp16' if scorer.half else ' fp32'}, torch threads {torch.get_num_threads()}, "
          f"batch size {args.batch_size}, --format {args.format}")
    requests = size_requests(args.instances or None, chat=args.format == "chat")
    ratio = report({"old": ReferenceCausalLM(scorer), "new": scorer}, requests, device,
                   torch.float16 if scorer.half else torch.float32, "size prompts x instances, every answer word")
    print(f"{ratio:.2f}x")


if __name__ == "__main__":
    main()
