"""bench/_scorer_compare.py: the old-against-new report the scorer benches print, on stub scorers."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from _scorer_compare import Meter, alternate, report, size_requests


class Stub:
    """Scores request ``r`` as (0, 1), or (2, 1) for ``odd``; one 2x3 @ 3x4 matmul per request (48 FLOPs)."""

    def __init__(self, odd=None):
        self.odd, self.calls = odd, []

    def score(self, requests, progress=None):
        self.calls.append(len(requests))
        out = []
        for r in requests:
            torch.matmul(torch.ones(2, 3), torch.ones(3, 4))
            out.append((2.0, 1.0) if r == self.odd else (0.0, 1.0))
        return out


def test_size_requests_are_the_probes_cells():
    requests = size_requests(3)
    assert len(requests) == 10 * 3 and len(requests[0].options) == 20
    chat = size_requests(2, chat=True)
    assert [r.options for r in chat] == [("An ant", "A bird"), ("An ant", "A cup")]


def test_paths_alternate_in_the_probes_chunks():
    old, new = Stub(), Stub()
    seconds, scores = alternate({"old": old, "new": new}, list(range(1100)))
    assert old.calls == new.calls == [512, 512, 76] and set(seconds) == {"old", "new"}
    assert scores["old"] == scores["new"] == [(0.0, 1.0)] * 1100


def test_report_states_differences_changed_answers_and_flops(capsys):
    ratios = report({"old": Stub(), "new": Stub(odd=5)}, list(range(128)), torch.device("cpu"), torch.float32, "stub")
    lines = capsys.readouterr().out.splitlines()
    clock = "CPU" if torch.get_num_threads() == 1 else "wall"
    assert lines[0] == f"128 requests (stub); {clock} time"
    assert lines[1].startswith("measured peak ") and lines[1].endswith("(the higher of two, before and after)")
    assert lines[2] == ("old against new: largest score difference over 256 scores: 2.0e+00; "
                        "best word differs in 1 of 128 requests")
    assert lines[3].startswith("old scoring: 6.14 kFLOP in ") and lines[4].startswith("new scoring: 6.14 kFLOP in ")
    assert lines[5].startswith("old ") and lines[5].endswith(f"speed-up of new: {ratios['old']:.2f}x over old")


def test_report_compares_every_older_path_and_prints_the_meters(capsys):
    """Three paths, the newest last, and a part of one timed by a Meter (48 FLOPs per request)."""
    meter = Meter("new matmul")

    class Metered(Stub):
        def score(self, requests, progress=None):
            return meter.run(48 * len(requests), super().score, requests)

    ratios = report({"older": Stub(), "old": Stub(odd=3), "new": Metered()}, list(range(64)),
                    torch.device("cpu"), torch.float32, "stub", (meter,))
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("older against new: ") and lines[2].endswith("differs in 0 of 64 requests")
    assert lines[3].startswith("old against new: ") and lines[3].endswith("differs in 1 of 64 requests")
    assert [line.split(":")[0] for line in lines[4:8]] == ["older scoring", "old scoring", "new scoring", "new matmul"]
    assert lines[7].startswith("new matmul: 3.07 kFLOP in ") and meter.flops == 48 * 64
    assert set(ratios) == {"older", "old"} and lines[8].endswith(
        f"speed-up of new: {ratios['older']:.2f}x over older, {ratios['old']:.2f}x over old")
