"""A tiny LLaVA wired to answer "A", shared by the lettered-benchmark tests (built once per session)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path


@functools.lru_cache(maxsize=1)
def a_llava() -> Path:
    """A tiny LLaVA (tests/mllm_helpers.py) whose every reply is "A"; the caller skips without ../shared/models."""
    from mllm_helpers import build

    folder = Path(tempfile.mkdtemp(prefix="a-llava-"))
    atexit.register(shutil.rmtree, folder, True)
    return build("llava", folder, bias_word="A")
