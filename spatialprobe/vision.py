"""Images as the vision-language models and the image synthesis models see them.

(Devices, precision and model loading are :mod:`spatialprobe.loading`'s.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError
from spatialprobe.extras import require


def blank_image(size: int = 384, gray: int = 128):
    """A neutral mid-gray RGB image: gives a vision-language model an image that shows nothing."""
    Image = require("PIL.Image", "vl")
    return Image.new("RGB", (size, size), (gray, gray, gray))


def open_image(image: Any):
    """A PIL RGB image from a PIL image or a path: the one guarded opener of image files. A
    missing, empty, corrupt or truncated file is a :class:`~spatialprobe.errors.DataError`
    naming it (one sentence), never a PIL traceback."""
    Image = require("PIL.Image", "vl")
    if not isinstance(image, (str, Path)):
        return image.convert("RGB")
    path = Path(image)
    try:
        with Image.open(path) as handle:
            return handle.convert("RGB")  # decodes every pixel: a truncated file fails here
    except FileNotFoundError:
        raise DataError(path, None, None, "image file is missing") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as err:
        # PIL raises SyntaxError for some broken PNG chunks, OSError for truncated data and
        # UnidentifiedImageError (an OSError) for empty or non-image files
        empty = path.is_file() and path.stat().st_size == 0
        raise DataError(path, None, None, "image file is empty (0 bytes)" if empty
                        else f"not a readable image ({err})") from None


def image_problem(path: str | Path) -> str | None:
    """Why the image file cannot be read (missing, empty, corrupt, truncated), or None: the file
    is decoded once, as :func:`open_image` would."""
    try:
        open_image(Path(path))
    except DataError as err:
        return str(err).removeprefix(f"{path}: ")
    return None


def to_pil(images):
    """(B, 3, H, W) tensor in [0, 1] -> list of PIL RGB images."""
    Image = require("PIL.Image", "synthesis", "Saving generated images")
    array = (images.detach().float().clamp(0, 1) * 255).round().to("cpu").byte()
    return [Image.fromarray(a.permute(1, 2, 0).numpy(), "RGB") for a in array]
