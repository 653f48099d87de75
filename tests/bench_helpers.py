"""Tiny models the benchmark-module tests share (built once per test session)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path


@functools.lru_cache(maxsize=1)
def yes_llava() -> Path | None:
    """A tiny LLaVA wired to answer "Yes" (tests/mllm_helpers.py), or None without ../shared/models."""
    from mllm_helpers import SHARED, build

    if not (SHARED / "llava-1.5-7b-hf").is_dir():
        return None
    folder = Path(tempfile.mkdtemp(prefix="yes-llava-"))
    atexit.register(shutil.rmtree, folder, True)
    return build("llava", folder, bias_word="Yes")
