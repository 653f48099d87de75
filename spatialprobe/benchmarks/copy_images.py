"""A benchmark copy's images: an item's image is always a file path, its identity its bytes.

Images (:func:`image_file`) may be paths relative to an images folder or to the data file, or
embedded (``{"bytes": ..., "path": ...}`` as Parquet and ``datasets`` store them, raw bytes, a PIL
image): embedded ones are written once under ``$SPATIALPROBE_HOME/cache/images/`` by their content
hash. Inside :func:`text_only` (``audit blind``: the questions alone) no image is looked for or
written.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError


def image_cache() -> Path:
    """Where embedded images are written by their content hash."""
    from spatialprobe.store import home

    return home() / "cache" / "images"


_TEXT_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("text_only", default=False)


@contextlib.contextmanager
def text_only() -> Iterator[None]:
    """Read a benchmark's items without its images (``audit blind``: the questions alone): inside,
    :func:`image_file` gives each image's path as the item names it (``embedded-HASH`` for bytes),
    neither looked for nor written."""
    token = _TEXT_ONLY.set(True)
    try:
        yield
    finally:
        _TEXT_ONLY.reset(token)


def images_checked() -> bool:
    """Whether a source checks that its images exist (False inside :func:`text_only`)."""
    return not _TEXT_ONLY.get()


def _named(value: Any) -> str:
    """An image as :func:`text_only` names it: its path as given, or ``embedded-HASH`` for bytes
    (the hash of their content, so that items of one embedded image still share it as a cluster)."""
    if isinstance(value, Mapping):
        value = value.get("bytes") or value.get("path")
    if hasattr(value, "tobytes") and hasattr(value, "size"):  # a PIL image
        value = value.tobytes()
    if isinstance(value, (bytes, bytearray)):
        return f"embedded-{hashlib.sha256(bytes(value)).hexdigest()[:16]}"
    return str(value) if value else "embedded"


def image_file(value: Any, *, folders: Sequence[Path] = (), what: str = "image") -> str:
    """The path of an item's image: a relative path found in one of ``folders`` (the first that
    holds it), an absolute path, or embedded bytes written once under :func:`image_cache`.
    Raises DataError (naming ``what``, e.g. the row's file and line) where the image is neither
    found nor embedded. Under :func:`text_only`, the path as named, unchecked."""
    if _TEXT_ONLY.get():
        return _named(value)
    if isinstance(value, Mapping):
        data = value.get("bytes")
        if data:
            return _cached(bytes(data), Path(str(value.get("path") or "")).suffix)
        value = value.get("path")
    if isinstance(value, (bytes, bytearray)):
        return _cached(bytes(value), "")
    if hasattr(value, "save") and hasattr(value, "size"):  # a PIL image
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return _cached(buffer.getvalue(), ".png")
    if not value:
        raise DataError(what, None, None, "no image (neither a path nor embedded bytes)")
    path = Path(str(value))
    if path.is_absolute():
        if _is_file(path):
            return str(path)
        raise DataError(what, None, None, f"image {str(path)!r:.80} not found")
    for folder in folders:
        if _is_file(folder / path):
            return str((folder / path).resolve())
    raise DataError(what, None, None, f"image {str(path)!r:.80} not found in "
                    f"{', '.join(str(f) for f in folders) or 'any folder'}")


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; False for a name no file system holds (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _cached(data: bytes, suffix: str) -> str:
    from spatialprobe.files import atomic_write_bytes

    if not suffix:
        suffix = ".png" if data[:8] == b"\x89PNG\r\n\x1a\n" else ".jpg" if data[:3] == b"\xff\xd8\xff" else ".img"
    target = image_cache() / f"{hashlib.sha256(data).hexdigest()}{suffix.lower()}"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)
    return str(target)
