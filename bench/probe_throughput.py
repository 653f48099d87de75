"""Probe throughput: spatialprobe's cached, batched 5-fold search against a naive fill-mask loop.

Model: a randomly initialized BertForMaskedLM with BERT-large's shape (24 layers, hidden 1024,
16 heads, vocabulary 30,522: the same compute as the real checkpoint) and the genuine
bert-base-uncased tokenizer from ../shared/models. Task: size, 500 instances, the built-in
10 prompt x 10 answer-set candidates, 5 object-disjoint folds: 5,000 cells (prompt x instance),
20 answer words each.

* spatialprobe: ``run_probe`` end to end (scoring, per-fold selection, metrics, files); the time
  spent in the scorer is printed too, with its distance to the limit: the FLOPs of every forward
  pass (counted with FlopCounterMode: once per sequence width on one row, times the rows of each
  pass, plus the LM head per mask) over the peak of a matmul of the same dtype timed in this run.
* ``--compare-reference``: every cell scored again by the new code and by the previous code
  (tests/mlm_reference.py) on the same model object, in the run's chunks of ``CELLS_PER_COMMIT``
  cells, the two alternating chunk by chunk so that a shared machine's changing load weighs on
  both alike: both times, their ratio and the largest score difference; then all 5,000 cells in
  ONE scorer call, to show what the run's commit granularity costs.
* naive baseline (the headline): transformers' ``fill-mask`` pipeline with ``targets`` = one
  candidate's answer words, called once per (fold, candidate = prompt x answer set, instance of
  that fold's dev and test sets), batch size 1.
* kinder baseline (printed too): one call per (fold, prompt, instance) with every answer word of
  every answer set as targets.
  Baselines are timed on a sample of ``--sample`` calls each and scaled to the full count
  (stated in the output); ``--sample 0`` skips them.
* ``--device cuda``: the scorer in fp16 (its default on CUDA), the peak in fp16, the baselines on
  the GPU too. Without a CUDA device it is an error.

Usage: python bench/probe_throughput.py [--device cpu|cuda] [--compare-reference] [--sample 40]
       [--batch-size 64] [--layers 24] [--hidden 1024]
The last line is a speed-up followed by ``x``: over the naive baseline, or, with ``--sample 0``
and ``--compare-reference``, over the previous scoring code.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from _limits import bench_device, count_flops, peak_matmul

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's package; the reference scorer
SHARED_TOKENIZER = ROOT.parent / "shared" / "models" / "bert-base-uncased"


def build_model(directory: Path, layers: int, hidden: int) -> None:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    config = BertConfig.from_pretrained(SHARED_TOKENIZER)
    config.update({"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 16,
                   "intermediate_size": 4 * hidden})
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(directory)
    AutoTokenizer.from_pretrained(SHARED_TOKENIZER).save_pretrained(directory)


class Timed:
    """A scorer whose ``score`` calls are timed (the scores are on the host when it returns)."""

    def __init__(self, scorer):
        self.scorer, self.name, self.seconds, self.calls = scorer, scorer.name, 0.0, 0

    def describe(self):
        return self.scorer.describe()

    def score(self, requests, progress=None):
        start = time.perf_counter()
        out = self.scorer.score(requests, progress)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def record_passes(scorer) -> list[tuple[int, int, int]]:
    """(rows, width, masks) of every forward pass the scorer makes from now on (shapes only:
    nothing waits for the device)."""
    passes: list[tuple[int, int, int]] = []
    forward = scorer._logits_at

    def recording(ids, attention, positions):
        passes.append((ids.shape[0], ids.shape[1], positions.shape[0]))
        return forward(ids, attention, positions)

    scorer._logits_at = recording
    return passes


def workload_flops(scorer, passes) -> tuple[float, str]:
    """FLOPs of the recorded passes, and a check line: an encoder's FLOPs are linear in its rows,
    so each width is counted once on one row; the LM head is counted once on one mask row. One
    real pass of the commonest shape is counted whole, to show the scaling is exact."""
    import torch

    base, head, device = scorer.model.base_model, scorer._head, scorer.device
    dtype = next(scorer.model.parameters()).dtype
    with torch.inference_mode():
        per_row = {}
        for width in sorted({w for _, w, _ in passes}):
            ids = torch.full((1, width), scorer._mask_id, device=device)
            per_row[width] = count_flops(base if head else scorer.model, input_ids=ids,
                                         attention_mask=torch.ones_like(ids))[1]
        per_mask = count_flops(head, torch.zeros(1, scorer.model.config.hidden_size, device=device,
                                                 dtype=dtype))[1] if head else 0
        total = sum(rows * per_row[width] + masks * per_mask for rows, width, masks in passes)
        rows, width, masks = max(set(passes), key=passes.count)
        ids = torch.full((rows, width), scorer._mask_id, device=device)
        positions = torch.arange(masks, device=device) % (rows * width)  # FLOPs depend on shapes only
        whole = count_flops(type(scorer)._logits_at, scorer, ids, torch.ones_like(ids), positions)[1]
    scaled = rows * per_row[width] + masks * per_mask
    return total, (f"FLOPs of {len(passes)} passes counted with FlopCounterMode per width; check on one "
                   f"{rows}x{width} pass with {masks} masks: {whole / 1e9:.3f} GFLOP counted whole, "
                   f"{scaled / 1e9:.3f} GFLOP by scaling")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=40, help="baseline calls actually timed (0: none)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--hidden", type=int, default=1024,
                        help="hidden size (BERT-large: 1024); small values expose the host-side work")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--compare-reference", action="store_true",
                        help="also time the previous scoring code (tests/mlm_reference.py) side by side")
    args = parser.parse_args()
    if not SHARED_TOKENIZER.is_dir():
        sys.exit(f"needs the genuine tokenizer at {SHARED_TOKENIZER}")
    device = bench_device(args.device)

    import torch

    from spatialprobe.models.masked_lm import MaskedLMScorer
    from spatialprobe.probing.run import CELLS_PER_COMMIT, ProbeSettings, run_probe
    from spatialprobe.prompts.templates import builtin
    from spatialprobe.tasks import data as task_data

    work = Path(tempfile.mkdtemp(prefix="probe-bench-"))
    model_dir = work / "bert-large-random"
    build_model(model_dir, args.layers, args.hidden)
    ds = task_data.load("size")
    cands = builtin("size")
    cells = len(cands.templates) * len(ds)
    scorer = MaskedLMScorer(str(model_dir), device=str(device), batch_size=args.batch_size)
    passes = record_passes(scorer)
    peak_dtype = torch.float16 if scorer.half else torch.float32
    peak = peak_matmul(device, peak_dtype)
    print(f"model: random BERT-large shape ({args.layers} layers, hidden {args.hidden}), {device}"
          f"{' fp16' if scorer.half else ' fp32'}, torch threads {torch.get_num_threads()}; task size, "
          f"{len(ds)} instances, {len(cands.templates)} prompts x {len(cands.answer_sets(ds.labels))} "
          f"answer sets = {cells} cells, 5 folds; {peak.describe()}")

    settings = ProbeSettings(model=str(model_dir), device=str(device), batch_size=args.batch_size)
    timed = Timed(scorer)
    start = time.perf_counter()
    summary = run_probe(ds, cands, settings, work / "run", scorer=timed)
    ours = time.perf_counter() - start
    print(f"spatialprobe: {ours:.1f} s for the full 5-fold search, {timed.seconds:.1f} s of it scoring "
          f"({timed.calls} calls of up to {CELLS_PER_COMMIT} cells, {cells / timed.seconds:,.0f} cells/s; "
          f"accuracy {summary['accuracy']['mean']:.1f}, random weights)")
    flops, check = workload_flops(scorer, passes)
    print(peak.line(flops, timed.seconds, "scoring"))
    print(check)
    if args.compare_reference:
        previous, new = compare_reference(scorer, ds, cands)
        peak = max(peak, peak_matmul(device, peak_dtype), key=lambda p: p.flops_per_s)  # load varies
        print(f"again, {peak.describe()} (the higher of two, before and after)")
        print(peak.line(flops, new, "new scoring"))
        print(peak.line(flops, previous, "previous scoring"))
        print(f"scoring speed-up over the previous code: {previous / new:.2f}x")
    if args.sample > 0:
        baselines(model_dir, ds, cands, device, scorer.half, args.sample, ours)
    elif args.compare_reference:
        print(f"{previous / new:.2f}x")


def compare_reference(scorer, ds, cands) -> tuple[float, float]:
    """Seconds of the previous and of the new scoring code over every cell, in chunks of
    ``CELLS_PER_COMMIT`` as the run makes them, the two ALTERNATING chunk by chunk (a shared
    machine's load then weighs on both alike); each path starts with empty caches."""
    import numpy as np
    from _scorer_compare import alternate, size_requests
    from mlm_reference import ReferenceMaskedLM

    from spatialprobe.models.masked_lm import MaskedLMScorer
    from spatialprobe.probing.run import CELLS_PER_COMMIT

    requests = size_requests()  # the built-in size candidates' cells, as ds and cands hold them
    words = requests[0].options
    fresh = MaskedLMScorer(scorer.model_name, device=str(scorer.device), batch_size=scorer.batch_size,
                           model_obj=scorer.model, tokenizer=scorer.tokenizer)
    seconds, scores = alternate({"new": fresh, "previous": ReferenceMaskedLM(fresh)}, requests)
    difference = np.abs(np.array(scores["new"]) - np.array(scores["previous"])).max()
    print(f"previous scoring code (tests/mlm_reference.py) against the new, same model, chunk by chunk "
          f"alternating: {seconds['previous']:.1f} s against {seconds['new']:.1f} s; largest score "
          f"difference over {len(requests) * len(words):,} scores: {difference:.1e}")
    start = time.perf_counter()
    MaskedLMScorer(scorer.model_name, device=str(scorer.device), batch_size=scorer.batch_size,
                   model_obj=scorer.model, tokenizer=scorer.tokenizer).score(requests)
    single = time.perf_counter() - start
    print(f"all {len(requests)} cells in one scorer call (the run makes one call per {CELLS_PER_COMMIT}): "
          f"{single:.1f} s, {len(requests) / single:,.0f} cells/s, {seconds['new'] / single:.2f}x the chunked "
          f"new scoring")
    return seconds["previous"], seconds["new"]


def baselines(model_dir, ds, cands, device, half, sample, ours) -> None:
    import torch
    import transformers
    from transformers import pipeline

    from spatialprobe.prompts.templates import fill
    from spatialprobe.tasks import data as task_data

    transformers.logging.set_verbosity_error()  # not one warning per call for the 2-piece targets
    fill_mask = pipeline("fill-mask", model=str(model_dir), device=device,
                         dtype=torch.float16 if half else torch.float32)
    mask = fill_mask.tokenizer.mask_token
    answer_sets = cands.answer_sets(ds.labels)
    folds = task_data.make_folds(ds)
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
    per_call = time_calls(rng.sample(per_candidate, min(sample, len(per_candidate))))
    naive = per_call * len(per_candidate)
    print(f"naive fill-mask baseline: {per_call * 1000:.1f} ms per call x {len(per_candidate)} calls "
          f"(5 folds x {len(cands.templates)} prompts x {len(answer_sets)} answer sets x dev+test instances) "
          f"= {naive:.0f} s, timed on a sample of {min(sample, len(per_candidate))} calls and scaled")
    # a kinder baseline: all answer words as targets, one call per (fold, prompt, instance)
    all_words = sorted({w for a in answer_sets for w in a})
    per_prompt = [(t, inst, all_words) for t in cands.templates for inst in fold_instances]
    per_call_prompt = time_calls(rng.sample(per_prompt, min(sample, len(per_prompt))))
    kinder = per_call_prompt * len(per_prompt)
    print(f"kinder baseline (all {len(all_words)} answer words as targets, one call per fold, prompt and "
          f"instance): {per_call_prompt * 1000:.1f} ms x {len(per_prompt)} calls = {kinder:.0f} s "
          f"-> speed-up {kinder / ours:.1f}x")
    print(f"speed-up over the naive baseline: {naive / ours:.1f}x")


if __name__ == "__main__":
    main()
