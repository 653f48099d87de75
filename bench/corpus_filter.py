"""Throughput of the corpus filter (Aho-Corasick, streamed) against a naive per-pattern scan.

A synthetic corpus of scenario-like sentences (default 32 MB) is written to a temporary
directory and ``--patterns`` generalized scenarios (default 3000, some planted in the corpus)
are looked up. The filter is timed on the whole file, end to end (read, decode, normalise,
match). The naive scan (normalise, then ``str.find`` for every pattern in turn, with the same
word-boundary check) is timed on the first ``--sample-mb`` MB only and its MB/s is taken as
its throughput on the whole file (its time grows linearly with the text, so this scaling is
fair; it is said in the output). Both must find the same phrases in the sample.

Distance to the limit: the filter does no floating-point work, so its limit is not a matmul peak
but reading the text at all: the same file read and decoded (UTF-8) in the same streamed blocks,
timed in the same run; the filter's MB/s is printed as a share of that. The filter runs on the
CPU only: ``--device cuda`` checks that a CUDA device exists (an error if not, as in the other
benches) and says that nothing here runs on it.

    python bench/corpus_filter.py [--mb 32] [--patterns 3000] [--sample-mb 2] [--device cpu|cuda]

The last line is the speed-up, e.g. ``123.4x``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from _limits import bench_device

from spatialprobe.generalize.corpus_filter import CorpusFilter, normalize, normalize_phrase

PERSONS = ["man", "woman", "boy", "girl", "wizard", "enchantress", "ballerina", "archer", "nun",
           "pilot", "sailor", "farmer", "knight", "queen", "monk", "chef", "doctor", "miner"]
ACTIONS = ["drives", "rides", "paints", "washes", "carries", "lights", "climbs", "is riding",
           "is painting", "watches", "cleans", "pulls", "flies", "is flying", "explores"]
OBJECTS = ["car", "bus", "camel", "sled", "kite", "bridge", "canoe", "drone", "sparkler", "lantern",
           "ladder", "wagon", "tractor", "balloon", "raft", "horse", "boat", "tower", "cave", "tram"]
FILLER = ["the", "of", "and", "to", "in", "was", "he", "she", "it", "that", "his", "her", "with", "as",
          "had", "for", "on", "at", "by", "not", "but", "from", "they", "this", "were", "be", "which",
          "said", "all", "one", "there", "when", "so", "an", "their", "would", "what", "if", "out", "up",
          "into", "about", "then", "them", "could", "some", "time", "have", "more", "very", "little", "old",
          "long", "way", "down", "night"]


def article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def make_patterns(n: int, rng: random.Random) -> list[str]:
    combos = [(p, a, o) for p in PERSONS for a in ACTIONS for o in OBJECTS]
    rng.shuffle(combos)
    return [f"{article(p).capitalize()} {p} {a} the {o}." for p, a, o in combos[:n]]


def write_corpus(path: Path, megabytes: int, planted: list[str], rng: random.Random) -> None:
    target, written = megabytes << 20, 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < target:
            words = rng.choices(FILLER + PERSONS + OBJECTS, k=rng.randint(6, 18))
            sentence = " ".join(words).capitalize() + ("." if rng.random() < 0.9 else ".\n\n")
            if rng.random() < 0.0005:
                sentence += " " + rng.choice(planted)
            written += handle.write(sentence + " ")


def naive_scan(patterns: list[str], text: str) -> set[str]:
    buffer, found = normalize(text), set()
    for pattern in patterns:
        start = buffer.find(pattern)
        while start >= 0:
            end = start + len(pattern)
            before = buffer[start - 1] if start else " "
            after = buffer[end] if end < len(buffer) else " "
            if not before.isalnum() and not after.isalnum():
                found.add(pattern)
                break
            start = buffer.find(pattern, start + 1)
    return found


def read_only(path: Path, block: int = 1 << 20) -> float:
    """Seconds to read and decode the file in 1 MiB blocks: the floor under any scan of it."""
    start = time.perf_counter()
    with open(path, encoding="utf-8") as handle:
        while handle.read(block):
            pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=32)
    parser.add_argument("--patterns", type=int, default=3000)
    parser.add_argument("--sample-mb", type=float, default=2.0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the filter runs on the CPU either way)")
    args = parser.parse_args()
    if bench_device(args.device).type == "cuda":
        print("--device cuda: the corpus filter is CPU work (streamed text, Aho-Corasick); it runs on the CPU")
    rng = random.Random(0)
    patterns = make_patterns(args.patterns, rng)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        write_corpus(corpus, args.mb, patterns[:200], rng)
        size_mb = corpus.stat().st_size / 1e6

        start = time.perf_counter()
        result = CorpusFilter(patterns).scan([corpus])
        fast_s = time.perf_counter() - start
        fast_mbps = size_mb / fast_s
        read_mbps = size_mb / min(read_only(corpus) for _ in range(3))

        sample_bytes = int(args.sample_mb * 1e6)
        with open(corpus, "rb") as handle:
            sample = handle.read(sample_bytes).decode("utf-8", errors="ignore")
        normalized = [normalize_phrase(p) for p in patterns]
        start = time.perf_counter()
        naive_found = naive_scan(normalized, sample)
        naive_s = time.perf_counter() - start
        naive_mbps = (sample_bytes / 1e6) / naive_s
        sample_path = Path(tmp) / "sample.txt"
        sample_path.write_text(sample, encoding="utf-8")
        check = CorpusFilter(patterns).scan([sample_path]).found
        assert set(check) == naive_found, "the two scans disagree on the sample"

    print(f"corpus: {size_mb:.1f} MB synthetic, {len(patterns)} patterns, "
          f"{len(result.found)} found in the corpus")
    print(f"aho-corasick filter (whole file, streamed): {fast_s:.2f} s, {fast_mbps:.1f} MB/s = "
          f"{100 * fast_mbps / read_mbps:.1f} % of the limit: reading and decoding the file alone, "
          f"{read_mbps:.0f} MB/s (best of 3, this run)")
    print(f"naive per-pattern str.find (first {args.sample_mb:g} MB, scaled): {naive_s:.2f} s, "
          f"{naive_mbps:.2f} MB/s; same {len(naive_found)} phrases found in the sample")
    print(f"{fast_mbps / naive_mbps:.1f}x")


if __name__ == "__main__":
    main()
