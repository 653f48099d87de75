"""Probe throughput: spatialprobe's cached, batched 5-fold search against a naive fill-mask loop.

Model: a randomly initialized BertForMaskedLM with BERT-large's shape (24 layers, hidden 1024,
16 heads, vocabulary 30,522: the same compute as the real checkpoint) and the genuine
bert-base-uncased tokenizer from ../shared/models. Task: size, 500 instances, the built-in
10 prompt x 10 answer-set candidates, 5 object-disjoint folds.

* spatialprobe: ``run_probe`` end to end (scoring, per-fold selection, metrics, files).
* naive baseline (the headline): transformers' ``fill-mask`` pipeline with ``targets`` = one
  candidate's answer words, called once per (fold, candidate = prompt x answer set, instance of
  that fold's dev and test sets), batch size 1.
* kinder baseline (printed too): one call per (fold, prompt, instance) with every answer word of
  every answer set as targets.
  Baselines are timed on a sample of ``--sample`` calls each and scaled to the full count
  (stated in the output).

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
    parser.add_argument("--sample", type=int, default=40, help="baseline calls actually timed")
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
    answer_sets = cands.answer_sets(ds.labels)
    folds = datasets.make_folds(ds)
    by_id = {i.id: i for i in ds.instances}
    fold_instances = [by_id[i] for f in folds for i in f.dev + f.test]
    rng = random.Random(0)

    def time_calls(calls) -> float:
        start = time.perf_counter()
        for template, inst, targets in calls:
            prefix, suffix = fill(template, inst)
            fill_mask(prefix + mask + suffix, targets=list(targets))
        return (time.perf_counter() - start) / len(calls)

    # the baseline: one call per (fold, candidate = prompt x answer set, instance)
    per_candidate = [(t, inst, a) for t in cands.templates for a in answer_sets for inst in fold_instances]
    per_call = time_calls(rng.sample(per_candidate, min(args.sample, len(per_candidate))))
    naive = per_call * len(per_candidate)
    print(f"naive fill-mask baseline: {per_call * 1000:.1f} ms per call x {len(per_candidate)} calls "
          f"(5 folds x {len(cands.templates)} prompts x {len(answer_sets)} answer sets x dev+test instances) "
          f"= {naive:.0f} s, timed on a sample of {min(args.sample, len(per_candidate))} calls and scaled")
    # a kinder baseline: all answer words as targets, one call per (fold, prompt, instance)
    all_words = sorted({w for a in answer_sets for w in a})
    per_prompt = [(t, inst, all_words) for t in cands.templates for inst in fold_instances]
    per_call_prompt = time_calls(rng.sample(per_prompt, min(args.sample, len(per_prompt))))
    kinder = per_call_prompt * len(per_prompt)
    print(f"kinder baseline (all {len(all_words)} answer words as targets, one call per fold, prompt and "
          f"instance): {per_call_prompt * 1000:.1f} ms x {len(per_prompt)} calls = {kinder:.0f} s "
          f"-> speed-up {kinder / ours:.1f}x")
    print(f"speed-up over the naive baseline: {naive / ours:.1f}x")


if __name__ == "__main__":
    main()
