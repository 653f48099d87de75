"""Known answer for the vision gain through the engine's public path .

A tiny image model is trained here to read one relation from an image: whether a red square is
left of a blue one. The images are drawn with PIL (40 to train, 24 to test); the model is one
linear layer (torch) on the image downsampled to 8 x 1 pixels (a column profile), trained by
full-batch gradient descent. It is saved as a folder (``config.json`` with a test-only ``model_type``, ``weights.pt``),
chosen from that configuration by its adapter's own ``accepts`` (registered for this file only),
and asked the test items through :func:`spatialprobe.engine.build.run_ask` with ``--blind``:

* the seeing model scores exactly 100 on the real images and its gain over each blind condition
  (blank, none, shuffled) has an interval that excludes 0;
* the same model trained with the images withheld (every pixel 0, so its pixel weights never leave
  their zero start and only the bias learns the training labels' log-odds) answers the training
  majority everywhere: exactly the answer prior's share, and a gain of exactly 0 with the interval
  [0, 0].

Each test image is its own scene (``objects`` names it), so any other test image can stand in for
it under ``shuffled``; its squares are placed independently, so it says nothing of this item's answer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from spatialprobe.benchmarks.base import Source, SourceItem
from spatialprobe.engine.build import AskOptions, run_ask
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.models.base import Declared, Option, Progress, ScoreRequest

MODEL_TYPE = "spatialprobe-test-red-left-of-blue"
"""The test-only ``model_type`` the adapter accepts."""
QUESTION = "Is the red square left of the blue square? Answer Yes or No."
SIZE, THUMB, SIDE = (32, 16), (8, 1), 6
"""Image size, the downsampled size the model reads (eight columns' mean colours), and a square's
side, in pixels. With these, the model scores 100 on the test images for each of the first 40
seeds of the drawing (checked when this test was written), not only for the seed used here."""
LABELS = ("yes", "no")


def draw(path: Path, red_left: bool, rng: random.Random) -> None:
    """A white image with a red and a blue square at random heights, the red one left of the blue
    one (or right of it) by at least one square's width."""
    from PIL import Image, ImageDraw

    while True:
        xr, xb = rng.randrange(0, SIZE[0] - SIDE), rng.randrange(0, SIZE[0] - SIDE)
        if (xb - xr >= 2 * SIDE) if red_left else (xr - xb >= 2 * SIDE):
            break
    image = Image.new("RGB", SIZE, (255, 255, 255))
    pen = ImageDraw.Draw(image)
    for x, colour in ((xr, (255, 0, 0)), (xb, (0, 0, 255))):
        y = rng.randrange(0, SIZE[1] - SIDE)
        pen.rectangle((x, y, x + SIDE - 1, y + SIDE - 1), fill=colour)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def pixels(image: Any):
    """The model's input: the image downsampled to :data:`THUMB`, RGB in [0, 1], flattened; all
    zeros where there is no image."""
    import torch

    from spatialprobe.vision import open_image

    if image is None:
        return torch.zeros(3 * THUMB[0] * THUMB[1])
    import numpy as np

    small = open_image(image).resize(THUMB, resample=2)  # bilinear
    return torch.from_numpy(np.asarray(small, dtype=np.float32)).flatten() / 255.0


class RelationReader(Declared):
    """A one-layer image model of one relation: the logit of "the red square is left of the blue
    one" from the downsampled pixels; ``Yes`` scores its log-probability, ``No`` the complement's."""

    name = "test-relation-reader"
    sees_images: ClassVar[bool] = True
    gpus: ClassVar[int] = 0
    protocols: ClassVar[tuple[str, ...]] = ("score",)
    wordings: ClassVar[tuple[str, ...]] = ("question",)
    options: ClassVar[dict[str, Option]] = {}

    @classmethod
    def accepts(cls, config: Mapping[str, Any]) -> bool:
        return config.get("model_type") == MODEL_TYPE

    def __init__(self, model: str, device: str = "auto"):
        import torch

        self.model_name = str(model)
        self.layer = torch.nn.Linear(3 * THUMB[0] * THUMB[1], 1)
        self.layer.load_state_dict(torch.load(Path(model) / "weights.pt", weights_only=True))

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, **self.fingerprint()}

    def score(self, requests: Sequence[ScoreRequest], progress: Progress | None = None
              ) -> list[tuple[float, ...]]:
        import torch

        out = []
        for r in requests:
            with torch.no_grad():
                logit = float(self.layer(pixels(r.image))[0])
            sides = {"yes": torch.nn.functional.logsigmoid(torch.tensor(logit)).item(),
                     "no": torch.nn.functional.logsigmoid(torch.tensor(-logit)).item()}
            out.append(tuple(sides[o.casefold()] for o in r.options))
        if progress:
            progress(len(requests))
        return out


def train(folder: Path, images: Sequence[Path], red_left: Sequence[bool], see: bool) -> Path:
    """Train the one-layer model (zero start, full-batch Adam) and save it as a model folder;
    ``see=False`` trains it on no image at all (every input 0)."""
    import torch

    torch.manual_seed(0)
    x = torch.stack([pixels(p if see else None) for p in images])
    y = torch.tensor([[float(v)] for v in red_left])
    layer = torch.nn.Linear(x.shape[1], 1)
    torch.nn.init.zeros_(layer.weight)
    torch.nn.init.zeros_(layer.bias)
    optimiser = torch.optim.Adam(layer.parameters(), lr=0.05)
    for _ in range(300):
        optimiser.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(layer(x), y).backward()
        optimiser.step()
    folder.mkdir(parents=True)
    torch.save(layer.state_dict(), folder / "weights.pt")
    (folder / "config.json").write_text(json.dumps({"model_type": MODEL_TYPE}))
    return folder


TRAIN = [True] * 24 + [False] * 16
TEST = [True] * 15 + [False] * 9
"""Gold of the training and test images (red left of blue: ``yes``); the majority is ``yes``."""


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(the source of the test images, the seeing model's folder, the blind model's folder)."""
    import torch

    torch.set_num_threads(1)
    root, rng = tmp_path_factory.mktemp("vision"), random.Random(0)
    train_images = [root / "train" / f"{n}.png" for n in range(len(TRAIN))]
    for path, left in zip(train_images, TRAIN, strict=True):
        draw(path, left, rng)
    items = []
    for n, left in enumerate(TEST):
        path = root / "test" / f"{n}.png"
        draw(path, left, rng)
        gold = "yes" if left else "no"
        items.append(SourceItem(f"t{n}", QUESTION, ("Yes", "No"), LABELS, gold, str(path), (f"scene {n}",),
                                {"image": f"t{n}"}, fact=("red square", "left of" if left else "right of",
                                                          "blue square")))
    source = Source("red-blue", "red-blue", "red-blue@1", LABELS, tuple(items),
                    Resampling(LABELS, ("image",), unit="images"),
                    prior_labels=tuple("yes" if v else "no" for v in TRAIN), settings={"name": "red-blue"})
    return (source, train(root / "seeing", train_images, TRAIN, see=True),
            train(root / "blind", train_images, TRAIN, see=False))


@pytest.fixture()
def registered(monkeypatch):
    from spatialprobe import registry

    monkeypatch.setitem(registry._REGISTRY.setdefault("model", {}), RelationReader.name,
                        (f"{__name__}:RelationReader", "test only: reads whether red is left of blue"))


def _ask(source: Source, model: Path, out: Path) -> dict[str, Any]:
    _, summary = run_ask(source, str(model), AskOptions(blind=True, device="cpu"), out, "test")
    return summary


def test_a_model_trained_to_read_the_relation_scores_100_and_gains_over_every_blind_condition(
        made, registered, tmp_path):
    source, seeing, _ = made
    summary = _ask(source, seeing, tmp_path / "run")
    m, gains = summary["metrics"], summary["details"]["vision_gain"]
    assert m["accuracy"]["mean"] == 100.0
    assert set(gains) == {"blank", "none", "shuffled"}
    for blind, gain in gains.items():
        assert gain["gain"] == 100.0 - m[f"accuracy_{blind}"]["mean"] > 0
        assert gain["ci"][0] > 0, (blind, gain)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["model"]["name"] == RelationReader.name  # chosen by its own accepts(config)


def test_the_same_model_trained_without_images_scores_exactly_the_prior_and_gains_exactly_0(
        made, registered, tmp_path):
    source, _, blind = made
    summary = _ask(source, blind, tmp_path / "run")
    m, d = summary["metrics"], summary["details"]
    prior = 100 * TEST.count(True) / len(TEST)  # the training majority (yes) on the test items: 62.5
    assert d["answer_prior"]["label"] == "yes" and m["answer_prior"]["mean"] == prior
    assert m["accuracy"]["mean"] == prior
    for gain in d["vision_gain"].values():
        assert gain["gain"] == 0.0 and gain["ci"] == [0.0, 0.0] and gain["p"] == 1.0
