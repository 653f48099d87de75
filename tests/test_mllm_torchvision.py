"""A Qwen2.5-VL processor without torchvision: one whole sentence saying how to install it."""
import importlib.util
from pathlib import Path

import pytest
from transformers import AutoProcessor

from spatialprobe.errors import ModelLoadError
from spatialprobe.models.mllm import _load_processor

QWEN = Path(__file__).resolve().parents[2] / "shared" / "models" / "qwen2.5-vl-3b-instruct"


@pytest.mark.skipif(not QWEN.is_dir(), reason="../shared/models/qwen2.5-vl-3b-instruct is absent")
@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None, reason="torchvision is installed")
def test_missing_torchvision_says_how_to_install_it() -> None:
    with pytest.raises(ModelLoadError) as caught:
        _load_processor(AutoProcessor, str(QWEN))
    message = str(caught.value)
    assert message.endswith("then run again.")
    assert "needs torchvision, which no spatialprobe extra installs" in message
    assert "the torchvision build that matches your torch" in message and "pytorch.org" in message
