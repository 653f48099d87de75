"""Run the spatialprobe CLI, counting the model's work in a file: ``python call_counter.py ARGS``.

Before every model call it appends one line to ``$SPATIALPROBE_CALLS``: ``cells N`` (a masked-LM
``score`` call on N prompt x instance cells), ``forward N`` (one forward pass on N sequences) or
``images N`` (a synthesizer ``generate`` call on N images). Written before the call, so a call
that a ``kill -9`` cuts short is counted too. The crash-safety tests add these lines up;
production code carries no hook for them.
"""

from __future__ import annotations

import os
import sys


def _record(kind: str, n: int) -> None:
    with open(os.environ["SPATIALPROBE_CALLS"], "a", encoding="ascii") as handle:
        handle.write(f"{kind} {n}\n")


def _install() -> None:
    import torch

    torch.set_num_threads(1)
    from spatialprobe.models.masked_lm import MaskedLMScorer
    from spatialprobe.synthesis import run as synthesis_run

    score = MaskedLMScorer.score

    def counted_score(self, requests, progress=None):
        _record("cells", len(requests))
        return score(self, requests, progress)

    logits = MaskedLMScorer._logits_at

    def counted_logits(self, ids, attention, positions):
        _record("forward", len(ids))
        return logits(self, ids, attention, positions)

    build = synthesis_run.build_synthesizer

    def counted_build(backend, args):
        synth = build(backend, args)
        generate = synth.generate

        def counted_generate(jobs):
            _record("images", len(jobs))
            return generate(jobs)

        synth.generate = counted_generate
        return synth

    MaskedLMScorer.score = counted_score
    MaskedLMScorer._logits_at = counted_logits
    synthesis_run.build_synthesizer = counted_build


if __name__ == "__main__":
    _install()
    from spatialprobe.cli import main

    sys.argv[0] = "spatialprobe"
    main()
