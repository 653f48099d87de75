"""Frames of a benchmark's video, sampled as its authors' model wrappers sample them, decoded with
PyAV (the ``video`` extra) and written once as PNG files, so that a video question is asked as
several images (``SourceItem.image`` and ``views``).

Which frames (:data:`RULES`, positions in a video of ``n`` decoded frames, ``k`` asked; transcribed
from vision-x-nyu/thinking-in-space @51e089c, where VSI-Bench's frames are sampled by each model
wrapper, not by the task):

* ``linspace`` (default) - decord's uniform sampling of the open models (``models/llava_onevision.py``
  ``load_video`` l. 383-384, also ``llava_vid.py``, ``longva.py``): ``np.linspace(0, n - 1, k, dtype=int)``;
* ``pyav`` - ``models/model_utils/load_video.py`` ``read_video_pyav`` l. 38-44: ``min(n, k)``
  positions by the same linspace, the last frame appended where it is missing;
* ``gpt4v`` - ``models/gpt4v.py`` ``encode_video`` l. 122-129: ``k`` positions, the last frame
  appended where missing;
* ``vila`` - ``models/vila.py`` ``load_video`` l. 219-221: ``np.linspace(0, n - 2, k, dtype=int)``
  (never the last frame);
* ``internvl2`` - ``models/internvl2.py`` ``get_index`` l. 91-100: segment midpoints
  ``int(seg / 2 + round(seg × i))``, ``seg = (n - 1) / k`` (numpy's round: halves to even);
* ``lmms`` - lmms-eval @75571cf ``sample_vsibench_video_frames`` l. 113-117:
  ``np.linspace(0, n - 1, min(k, n), dtype=int)``.

``n`` is the frame count the container declares (``stream.frames``), else the frames decoded.
The frames are cached under ``$SPATIALPROBE_HOME/cache/frames/`` by the video's path, size and
modification time, the rule and ``k`` (PNG: lossless, so a frame is the decoded pixels).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from spatialprobe.errors import DataError


def _linspace(n: int, k: int) -> list[int]:
    return np.linspace(0, n - 1, k, dtype=int).tolist()


def _with_last(indices: np.ndarray, n: int) -> list[int]:
    return (indices if n - 1 in indices else np.append(indices, n - 1)).tolist()


def _internvl2(n: int, k: int) -> list[int]:
    seg = float(n - 1) / k
    return [int(seg / 2 + np.round(seg * i)) for i in range(k)]


RULES: dict[str, Callable[[int, int], list[int]]] = {
    "linspace": _linspace,
    "pyav": lambda n, k: _with_last(np.linspace(0, n - 1, min(n, k), dtype=int), n),
    "gpt4v": lambda n, k: _with_last(np.linspace(0, n - 1, k, dtype=int), n),
    "vila": lambda n, k: np.linspace(0, n - 2, k, dtype=int).tolist(),
    "internvl2": _internvl2,
    "lmms": lambda n, k: _linspace(n, min(k, n)),
}
"""Frame positions ``(n, k) -> indices`` by rule (module docstring)."""


def frame_indices(rule: str, n: int, k: int) -> list[int]:
    """The positions of the frames ``rule`` samples from ``n`` frames when ``k`` are asked."""
    if rule not in RULES:
        raise ValueError(f"no frame sampling {rule!r}; the rules are {', '.join(RULES)}")
    if n < 1:
        raise ValueError("a video without frames")
    return RULES[rule](n, k)


def _av() -> Any:
    from spatialprobe.extras import require

    return require("av", "video")


def frame_count(path: Path) -> int:
    """The number of frames the video's container declares, else the number decoded."""
    with _av().open(str(path)) as container:
        stream = container.streams.video[0]
        if stream.frames:
            return int(stream.frames)
        return sum(1 for _ in container.decode(stream))


def _decoded(path: Path, wanted: list[int]) -> dict[int, object]:
    """The PIL images of the frames at ``wanted`` positions, decoded in one pass; a position past
    the frames decoded gets the last one (a container that declares more frames than it holds)."""
    found: dict[int, object] = {}
    last, needed, stop = None, set(wanted), max(wanted)
    with _av().open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for index, frame in enumerate(container.decode(stream)):
            if index in needed:
                found[index] = frame.to_image()
            last = frame
            if index >= stop:
                break
    if last is None:
        raise DataError(path, None, None, "a video with no frame PyAV can decode")
    for index in needed - set(found):
        found[index] = last.to_image()
    return found


def sampled_frames(path: str | Path, rule: str, k: int) -> list[str]:
    """The video's ``k`` frames sampled by ``rule``, as PNG files (written once; see the module)."""
    video = Path(path)
    try:
        stat = video.stat()
    except OSError:
        raise DataError(video, None, None, "video file not found") from None
    from spatialprobe.store import home

    key = hashlib.sha256(f"{video.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    folder = home() / "cache" / "frames" / f"{key}-{rule}-{k}"
    done = folder / "frames.txt"
    if done.is_file():
        return [str(folder / name) for name in done.read_text(encoding="utf-8").split()]
    try:
        indices = frame_indices(rule, frame_count(video), k)
        images = _decoded(video, indices)
    except DataError:
        raise
    except Exception as err:  # PyAV raises its own error types for a file it cannot read
        raise DataError(video, None, None, f"not a readable video ({type(err).__name__}: {err})") from None
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"{n:03d}-frame{index:06d}.png" for n, index in enumerate(indices)]
    for name, index in zip(names, indices, strict=True):
        images[index].save(folder / name, compress_level=1)  # type: ignore[attr-defined]
    done.write_text("\n".join(names), encoding="utf-8")
    return [str(folder / name) for name in names]


def write_video(path: Path, frames: int, size: int = 32) -> Path:
    """A tiny H.264 video (PyAV) whose frame ``i`` is grey level ``10 i`` (so a frame tells its position)."""
    import av
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        for i in range(frames):
            picture = np.full((size, size, 3), 10 * i % 256, dtype=np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(picture, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path
