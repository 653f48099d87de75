"""Probe throughput: spatialprobe's cached, batched 5-fold search against a naive fill-mask loop.

Model: a randomly initialized BertForMaskedLM with BERT-large's shape (24 layers, hidden 1024,
16 heads, vocabulary 30,522: the same compute as the real checkpoint) and the genuine
bert-base-uncased tokenizer from ../shared/models. Task: size, 500 instances, the built-in
10 prompt x 10 answer-set candidates, 5 object-disjoint folds.

* spatialprobe: ``run_probe`` end to end (scoring, per-fold selection, metrics, files).
* naive baseline: transformers' ``fill-mask`` pipeline with ``targets`` = the candidate answer
  words, called once per (fold, prompt candidate, instance of that fold's dev and test sets),
  batch size 1. It is timed on a sample of ``--sample`` calls and scaled to the full count
  (stated in the output); the scaled figure is what the ratio uses.

Usage: python bench/probe_throughput.py [--sample 60] [--batch-size 64] [--layers 24]
The last line is the speed-up followed by ``x``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_TOKENIZER = ROOT.parent / "shared" / "models" / "bert-base-uncased"


def build_model(directory: Path, layers: int) -> None:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    config = BertConfig.from_pretrained(SHARED_TOKENIZER)
    config.update({"hidden_size": 1024, "num_hidden_layers": layers, "num_attention_heads": 16,
                   "intermediate_size": 4096})
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(directory)
    AutoTokenizer.from_pretrained(SHARED_TOKENIZER).save_pretrained(directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=60, help="baseline calls actually timed")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--layers", type=int, default=24)
    args = parser.parse_args()
    if not SHARED_TOKENIZER.is_dir():
        sys.exit(f"needs the genuine tokenizer at {SHARED_TOKENIZER}")

    import torch
    from transformers import pipeline

    from spatialprobe import datasets
    from spatialprobe.probes.run import ProbeSettings, run_probe
    from spatialprobe.prompts.templates import builtin, fill

    work = Path(tempfile.mkdtemp(prefix="probe-bench-"))
    model_dir = work / "bert-large-random"
    build_model(model_dir, args.layers)
    ds = datasets.load("size")
    cands = builtin("size")
    print(f"model: random BERT-large shape ({args.layers} layers, hidden 1024), torch threads "
          f"{torch.get_num_threads()}; task size, {len(ds)} instances, {len(cands.templates)} prompts x "
          f"{len(cands.answer_sets(ds.labels))} answer sets, 5 folds")

    start = time.perf_counter()
    summary = run_probe(ds, cands, ProbeSettings(model=str(model_dir), device="cpu",
                                                 batch_size=args.batch_size), work / "run")
    ours = time.perf_counter() - start
    print(f"spatialprobe: {ours:.1f} s for the full 5-fold search "
          f"(accuracy {summary['accuracy']['mean']:.1f}, random weights)")

    fill_mask = pipeline("fill-mask", model=str(model_dir), device=-1)
    mask = fill_mask.tokenizer.mask_token
    words = sorted({w for answers in cands.answer_sets(ds.labels) for w in answers})
    folds = datasets.make_folds(ds)
    by_id = {i.id: i for i in ds.instances}
    calls = [(t, by_id[i]) for f in folds for t in cands.templates for i in f.dev + f.test]
    sample = random.Random(0).sample(calls, min(args.sample, len(calls)))
    start = time.perf_counter()
    for template, inst in sample:
        prefix, suffix = fill(template, inst)
        fill_mask(prefix + mask + suffix, targets=words)
    per_call = (time.perf_counter() - start) / len(sample)
    naive = per_call * len(calls)
    print(f"naive fill-mask baseline: {per_call * 1000:.1f} ms per call x {len(calls)} calls "
          f"(5 folds x {len(cands.templates)} prompts x dev+test instances, all answer words as targets) "
          f"= {naive:.0f} s, timed on a sample of {len(sample)} calls and scaled")
    print(f"speed-up: {naive / ours:.1f}x")


if __name__ == "__main__":
    main()
