"""A tiny LLaVA wired to answer "A", shared by the lettered-benchmark tests (built once per session)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import pytest
from mllm_helpers import SHARED

needs_a_llava = pytest.mark.skipif(not (SHARED / "llava-1.5-7b-hf").is_dir(),
                                   reason="../shared/models (LLaVA processor) is absent")
"""The mark of a test that builds :func:`a_llava` (it needs the genuine LLaVA processor)."""


@functools.lru_cache(maxsize=1)
def a_llava() -> Path:
    """A tiny LLaVA (tests/mllm_helpers.py) whose every reply is "A"; the caller skips without ../shared/models."""
    from mllm_helpers import build

    folder = Path(tempfile.mkdtemp(prefix="a-llava-"))
    atexit.register(shutil.rmtree, folder, True)
    return build("llava", folder, bias_word="A")


def bench_a(name: str, data: Path, out: Path, *more: str) -> dict:
    """``spatialprobe bench NAME --data DATA`` asked of :func:`a_llava` by generation (one token),
    ``more`` options added: the run's metrics (the command must succeed)."""
    import json

    from typer.testing import CliRunner

    from spatialprobe.cli import app

    said = CliRunner().invoke(app, ["bench", name, "--model", str(a_llava()), "--data", str(data), "--out", str(out),
                                    "--protocol", "generate", "--max-new-tokens", "1", *more])
    assert said.exit_code == 0, said.output
    return json.loads((out / "summary.json").read_text())["metrics"]
