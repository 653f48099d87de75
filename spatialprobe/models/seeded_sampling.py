"""Sampling at a temperature with one seed per request, so a sampled reply is the same whatever
batch it is generated in (a killed run resumes sample by sample, :mod:`spatialprobe.engine.sampling`).

``transformers``' ``do_sample=True`` draws every row of a batch from one global generator, so a
row's reply depends on its batch. Here each row has its own ``torch.Generator`` seeded with its
request's seed, and decoding stays greedy over ``logits / T + G``, G standard Gumbel noise from
that generator: the argmax of logits plus Gumbel noise is a draw from ``softmax(logits / T)``
(the Gumbel-max trick; Gumbel 1954, Maddison et al. 2014). No top-k or top-p truncation: plain
sampling at temperature T, as the OpenAI API's ``temperature`` with ``top_p`` 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DESCRIBED = "temperature T, no top-k/top-p; greedy over logits/T + Gumbel noise from a generator per request seed"
"""What an adapter's ``describe()`` says of its sampling."""


def seeded_sampler(temperature: float, seeds: Sequence[int | None]) -> Any:
    """A ``transformers`` logits processor that turns greedy decoding into sampling at
    ``temperature``, row r drawing from a generator seeded with ``seeds[r]``."""
    import torch
    from transformers import LogitsProcessor

    class SeededSampling(LogitsProcessor):
        def __init__(self) -> None:
            self.generators = [torch.Generator().manual_seed(int(seed or 0)) for seed in seeds]

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            tiny = torch.finfo(torch.float64).tiny
            uniform = torch.stack([torch.rand(scores.shape[-1], generator=g, dtype=torch.float64)
                                   for g in self.generators]).clamp_(min=tiny)
            gumbel = -torch.log(-torch.log(uniform))
            return (scores / temperature + gumbel.to(scores.device, scores.dtype)).to(scores.dtype)  # type: ignore[return-value]

    return SeededSampling()
