"""A model adapter whose replies a test writes: a folder holding ``config.json`` (``model_type``
``scripted-replies``) and ``replies.json`` (the first line of a question -> the reply). Registered
by a test (:func:`registered`) so that ``spatialprobe bench --model FOLDER`` chooses and loads it
through the real command path, as it would a checkpoint."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from spatialprobe.models.base import Declared, GenerateRequest, Option, Progress

MODEL_TYPE = "scripted-replies"


class ScriptedReplier(Declared):
    name = "scripted-replies"
    gpus: ClassVar[int] = 0
    sees_images: ClassVar[bool] = True
    multi_image: ClassVar[bool] = True
    protocols: ClassVar[tuple[str, ...]] = ("generate",)
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    options: ClassVar[dict[str, Option]] = {}

    def __init__(self, model: str, **_: Any):
        self.model_name = model
        self.replies = json.loads((Path(model) / "replies.json").read_text())

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        return config.get("model_type") == MODEL_TYPE

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, "untrained": True, "replies": len(self.replies)}

    def generate(self, requests: Sequence[GenerateRequest], progress: Progress | None = None) -> list[str]:
        out = [self.replies[r.prompt.split("\n")[0]] for r in requests]
        if progress:
            progress(len(requests))
        return out


def write(folder: Path, replies: Mapping[str, str]) -> Path:
    """The model folder: its config and its replies (question's first line -> reply)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": MODEL_TYPE}))
    (folder / "replies.json").write_text(json.dumps(dict(replies)))
    return folder


@contextlib.contextmanager
def registered() -> Iterator[None]:
    """The adapter registered as model ``scripted-replies`` for the duration."""
    from spatialprobe import registry

    registry.register("model", ScriptedReplier.name, f"{__name__}:ScriptedReplier", "a test's scripted replies")
    try:
        yield
    finally:
        registry._REGISTRY["model"].pop(ScriptedReplier.name, None)
