"""The image store: the images of a synthesis run, read from its run directory.

Written by ``spatialprobe synthesize`` (a kind of the run spine), read by the judge, the
QA-from-images probe, VISOR, the annotation page and the ViLT probe. A finished image is a file
``RUN/images/NAME.png`` and one row of the spine's per-run cache (``results(key, value)`` in
``RUN/run.sqlite``), keyed ``PROMPT_ID#IMAGE_INDEX``, whose JSON value is (documented in the
README too)::

    {"prompt_id": "size-0003",      # dataset instance id, or "line-0007" for prompt files
     "prompt": "An ant and a bird.", # the text the model was given
     "meta": {...},                  # the dataset instance (obj_a, obj_b, label, task, ...) or
                                     #   a prompt file's metadata; {} if none
     "prompt_index": 3,              # the prompt's position in the run's prompt list
     "image_index": 0,               # index among this prompt's images (0-based)
     "seed": 123456,                 # the seed this image was generated from
     "path": "images/size-0003_00.png",  # relative to the run directory
     "backend": "vqgan-clip", "model": "vqgan=...;clip=...",
     "weights_hash": "...;...",      # hash of the weights used, or null
     "settings": {...},              # generation settings, device and dtype included
     "clip_score": 0.31,             # final CLIP similarity (VQGAN+CLIP), else null
     "seconds": 2.5,                 # this image's share of its batch's wall time
     "created": "2026-11-23T13:00:00"}

The file is written under a temporary name, fsynced and renamed before its row is committed, so
a finished image always has both; an interrupted run leaves at most stray ``*.PID.tmp`` files.
``RUN/prompts.jsonl`` lists the run's prompts in order (``{prompt_id, prompt, meta}`` per line),
including those without images yet; each invocation records it before making any image.

Readers (judge, visor, annotate, qa image) open a run with :func:`open_image_run`, the one
reader of image runs: it refuses a run that ``synthesize`` is still writing (its ``run.lock``
is held) or that holds fewer images than prompts x images per prompt (unfinished or killed),
unless ``partial``, and it opens ``run.sqlite`` read-only (a run on a read-only mount reads).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spatialprobe.errors import DataError, RunInUse, UsageError
from spatialprobe.files import commit_file, read_jsonl, write_jsonl
from spatialprobe.runner.spine import ResultCache
from spatialprobe.store import RunDir, lock_holder, require_own_folder

PROMPTS_FILE = "prompts.jsonl"


@dataclass(frozen=True)
class PromptItem:
    """One prompt to synthesize, with what the judge needs to score its images."""

    prompt_id: str
    """Stable id: the dataset instance id, or ``line-NNNN`` for a prompt file."""
    prompt: str
    """Text given to the synthesis model."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The dataset instance as a dict (obj_a, obj_b, label, task, ...) or a prompt file's metadata."""

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_id": self.prompt_id, "prompt": self.prompt, "meta": self.meta}


@dataclass(frozen=True)
class ImageRecord:
    """A finished image as the run records it."""

    prompt_id: str
    """Id of the prompt it was generated for."""
    prompt: str
    """Prompt text."""
    image_index: int
    """Index among the images of this prompt (0-based)."""
    seed: int
    """Seed it was generated from."""
    path: Path
    """Absolute path of the image file."""
    backend: str
    """Synthesis backend name."""
    model: str
    """Model ids used."""
    meta: dict[str, Any]
    """The prompt's metadata (dataset instance)."""
    clip_score: float | None = None
    """Final CLIP similarity for VQGAN+CLIP images."""


def image_key(prompt_id: str, image_index: int) -> str:
    """The image's key in the run's cache."""
    return f"{prompt_id}#{image_index}"


def image_file(prompt_id: str, image_index: int, suffix: str = ".png") -> str:
    """The image's path relative to the run directory."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in prompt_id)
    return f"images/{safe}_{image_index:02d}{suffix}"


def write_image(image, final: Path) -> None:
    """Write a PIL image to ``final`` atomically: a temporary name in the same folder (carrying
    this process's id, so a later run can tell a dead writer's leftovers), fsync, rename."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(final.name + f".{os.getpid()}.tmp")
    image.save(tmp, format="PNG")
    commit_file(tmp, final)  # fsync, the umask's mode, rename, directory fsync


def image_row(prompt: PromptItem, prompt_index: int, image_index: int, *, seed: int, backend: str,
              model: str, settings: Mapping[str, Any], weights_hash: str | None = None,
              clip_score: float | None = None, seconds: float | None = None) -> dict[str, Any]:
    """The cache row of a finished image (see the module docstring)."""
    return {"prompt_id": prompt.prompt_id, "prompt": prompt.prompt, "meta": prompt.meta,
            "prompt_index": prompt_index, "image_index": image_index, "seed": seed,
            "path": image_file(prompt.prompt_id, image_index), "backend": backend, "model": model,
            "weights_hash": weights_hash, "settings": dict(settings), "clip_score": clip_score,
            "seconds": seconds, "created": time.strftime("%Y-%m-%dT%H:%M:%S")}


def write_prompt_list(run: Path, items: Iterable[PromptItem]) -> None:
    """Record a run's prompt list (``RUN/prompts.jsonl``), replacing the one there."""
    write_jsonl(run / PROMPTS_FILE, [item.to_dict() for item in items])


class ImageRunDir(RunDir):
    """An image run's directory; :meth:`config` also lifts the run's settings to the top level,
    where readers of image runs look up ``prompts`` (the prompts' source) and ``task``."""

    def config(self) -> dict[str, Any] | None:
        config = super().config()
        if config is None or not isinstance(config.get("settings"), dict):
            return config
        return {**config["settings"], **config}


class ReadOnlyCache:
    """The rows of ``RUN/run.sqlite`` read without writing a byte: the database is opened with
    SQLite's ``mode=ro`` (it still sees rows a killed writer left in the write-ahead log), or,
    where the folder cannot be written (a read-only mount: SQLite could not create the WAL's
    shared-memory file), ``immutable=1``, which reads the database file as it lies."""

    def __init__(self, run: RunDir):
        self.db_path = run.db_path

    def _connect(self) -> sqlite3.Connection:
        uri = self.db_path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # fails here, not later
            return conn
        except sqlite3.OperationalError:
            return sqlite3.connect(f"{uri}?immutable=1", uri=True)

    def get_all(self) -> dict[str, Any]:
        import json

        try:
            conn = self._connect()
            try:
                rows = conn.execute("SELECT key, value FROM results").fetchall()
            finally:
                conn.close()
        except sqlite3.DatabaseError as err:  # no results table, or not a database at all
            raise DataError(self.db_path, None, None, f"not a readable image run database ({err})") from None
        return {k: json.loads(v) for k, v in rows}


class ImageStore:
    """The images of a run directory (created if missing, so that tests can build one; a folder
    that holds no image run yet is taken only if a run may own it: ``require_own_folder``);
    ``read_only=True`` (readers: :func:`open_image_run`) writes nothing there."""

    def __init__(self, run: RunDir | str | os.PathLike[str], read_only: bool = False):
        path = Path(run.path if isinstance(run, RunDir) else run)
        if not read_only and not (path / "run.sqlite").is_file():  # about to create its cache: ours?
            require_own_folder(path)
        self.run = ImageRunDir(path)
        self.read_only = read_only
        self.cache: ResultCache | ReadOnlyCache = ReadOnlyCache(self.run) if read_only else ResultCache(self.run)

    @property
    def path(self) -> Path:
        return self.run.path

    def source(self) -> str | None:
        """Where the prompts came from: a dataset's ``name@version`` or the prompt file."""
        value = (self.run.config() or {}).get("prompts")
        return str(value) if value else None

    def rows(self) -> list[dict[str, Any]]:
        """Every image row, whether or not its file exists, in no particular order."""
        return [row for row in self.cache.get_all().values()
                if isinstance(row, dict) and "image_index" in row]

    def prompts(self) -> list[PromptItem]:
        """The run's prompts in order: its prompt list, then any prompt only an image row names."""
        listed = [PromptItem(p["prompt_id"], p["prompt"], p.get("meta") or {})
                  for p in self._listed()]
        known = {p.prompt_id for p in listed}
        extra: dict[str, tuple[int, PromptItem]] = {}
        for row in self.rows():
            if row["prompt_id"] not in known:
                extra.setdefault(row["prompt_id"], (int(row.get("prompt_index", 0)), PromptItem(
                    row["prompt_id"], row["prompt"], row.get("meta") or {})))
        return listed + [item for _, item in sorted(extra.values(), key=lambda e: e[0])]

    def _listed(self) -> list[dict[str, Any]]:
        path = self.run.file(PROMPTS_FILE)
        return read_jsonl(path) if path.exists() else []

    def add_prompts(self, items: Iterable[PromptItem]) -> None:
        """Add prompts to the list, or update the text and metadata of known ids (keeping their order)."""
        merged = {p.prompt_id: p for p in self.prompts()}
        merged.update({item.prompt_id: item for item in items})
        write_prompt_list(self.path, merged.values())

    def finished(self) -> set[tuple[str, int]]:
        """(prompt_id, image_index) of every image whose row and file both exist."""
        return {(rec.prompt_id, rec.image_index) for rec in self.images()}

    def image_path(self, prompt_id: str, image_index: int, suffix: str = ".png") -> Path:
        return self.path / image_file(prompt_id, image_index, suffix)

    def save_image(self, image, prompt_id: str, image_index: int, *, seed: int, backend: str,
                   model: str, settings: dict[str, Any], weights_hash: str | None = None,
                   clip_score: float | None = None, seconds: float | None = None) -> Path:
        """Write an image of a listed prompt atomically, then record it (for runs built by hand;
        ``spatialprobe synthesize`` writes its rows through the run spine). Returns its path."""
        assert isinstance(self.cache, ResultCache), "a read-only store writes no image"
        order = {p.prompt_id: (n, p) for n, p in enumerate(self.prompts())}
        if prompt_id not in order:
            raise UsageError(f"{self.path} lists no prompt {prompt_id!r}; add it with add_prompts first.")
        index, prompt = order[prompt_id]
        final = self.image_path(prompt_id, image_index)
        write_image(image, final)
        row = image_row(prompt, index, image_index, seed=seed, backend=backend, model=model,
                        settings=settings, weights_hash=weights_hash, clip_score=clip_score,
                        seconds=seconds)
        self.cache.put([(image_key(prompt_id, image_index), row)])
        return final

    def records(self) -> Iterator[ImageRecord]:
        """Every image the run records, in prompt order then image index, whether or not its
        file exists (readers split them with :func:`present_images`)."""
        return self._records()

    def _records(self) -> Iterator[ImageRecord]:
        """Every image row, in prompt order then image index, whether or not its file exists."""
        order = {p.prompt_id: n for n, p in enumerate(self.prompts())}
        for row in sorted(self.rows(), key=lambda r: (order[r["prompt_id"]], r["image_index"])):
            yield ImageRecord(row["prompt_id"], row["prompt"], row["image_index"], row["seed"],
                              self.path / row["path"], row["backend"], row["model"],
                              row.get("meta") or {}, row.get("clip_score"))

    def images(self) -> Iterator[ImageRecord]:
        """Finished images in prompt order, then image index."""
        return (rec for rec in self._records() if rec.path.exists())

    def missing_images(self) -> list[ImageRecord]:
        """Images the run records but whose file is gone (deleted or moved since)."""
        return [rec for rec in self._records() if not rec.path.exists()]


# ---- the one reader of image runs --------------------------------------------------------------

PARTIAL_ADVICE = "or pass --partial"


@dataclass(frozen=True)
class Completeness:
    """How much of an image run exists: recorded images against prompts x images per prompt."""

    images: int
    """Images the run records."""
    expected: int
    """Prompts x images per prompt."""
    partial: bool = False
    """Read although unfinished or being written (``--partial``)."""
    writer: str | None = None
    """Process id of the ``synthesize`` still writing it when it was read (``--partial`` only)."""

    def to_dict(self) -> dict[str, Any]:
        return {"images": self.images, "expected": self.expected, "partial": self.partial,
                "being_written": self.writer is not None}

    @staticmethod
    def line(recorded: Mapping[str, Any] | None) -> str:
        """The first line of a table made from an image run: what share of the run it read."""
        if not recorded:
            return ""
        counts = f"{recorded['images']:,} of {recorded['expected']:,} images"
        if not recorded.get("partial"):
            return f"Image run: {counts} (complete).\n\n"
        writing = ", still being written" if recorded.get("being_written") else ""
        return (f"Image run: PARTIAL, {counts} (prompts x images per prompt{writing}; read with "
                "--partial).\n\n")


def expected_images(store: ImageStore, rows: list[dict[str, Any]]) -> int:
    """Prompts x images per prompt, as ``synthesize`` recorded them in the run's settings; a
    run built by hand (no such settings) counts its prompt list x its most images of a prompt."""
    config = store.run.config() or {}
    per_prompt = config.get("images_per_prompt")
    count = (config.get("prompt_set") or {}).get("count") if isinstance(config.get("prompt_set"), dict) else None
    if not isinstance(per_prompt, int) or isinstance(per_prompt, bool):
        per_prompt = max((int(r["image_index"]) + 1 for r in rows), default=1)
    if not isinstance(count, int) or isinstance(count, bool):
        count = len(store.prompts())
    return count * per_prompt


def open_image_run(path: str | os.PathLike[str], *, partial: bool = False,
                   command: str = "spatialprobe synthesize") -> tuple[ImageStore, Completeness]:
    """The image run at ``path``, read-only, and how complete it is. Refused (one sentence) when
    it is no image run, when ``synthesize`` still holds its lock, or when it holds fewer images
    than prompts x images per prompt; ``partial`` reads what is there and says so."""
    path = Path(path)
    if not (path / "run.sqlite").is_file():
        raise DataError(path, None, None, f"not an image run (no run.sqlite); give the directory "
                        f"written by {command}")
    writer = lock_holder(path)
    if writer is not None and not partial:
        raise RunInUse(f"{path} is being written by another spatialprobe process (pid {writer}, "
                       "which holds its run.lock); wait for it to finish, or pass --partial to read "
                       "the images finished so far.")
    store = ImageStore(path, read_only=True)
    rows = store.rows()
    expected = expected_images(store, rows)
    if len(rows) < expected and not partial:
        raise DataError(path, None, None, f"holds {len(rows):,} of {expected:,} images (prompts x images "
                        "per prompt); it is unfinished or was killed: finish it with the same "
                        f"synthesize command, {PARTIAL_ADVICE} to use the images it holds")
    return store, Completeness(len(rows), expected, partial and (len(rows) < expected or writer is not None),
                               writer)


def missing_note(missing: Sequence[ImageRecord], present: int, unreadable: int = 0) -> str:
    """How many image files are gone (or unreadable), of how many, and the first three paths."""
    first = ", ".join(str(r.path) for r in missing[:3]) + (", ..." if len(missing) > 3 else "")
    what = f"missing or unreadable ({unreadable} unreadable)" if unreadable else "missing"
    return f"{len(missing)} of {len(missing) + present} image files are {what} ({first})"


def present_images(source: str | os.PathLike[str], records: Iterable[ImageRecord], skip_missing: bool,
                   what: str = "score") -> tuple[list[ImageRecord], list[ImageRecord]]:
    """(records whose file exists, records whose file is gone). A gone file is refused, naming
    it, unless ``skip_missing``: then damaged files (empty, corrupt, truncated: each decoded once
    here) are left out too, and the caller counts and records every skipped one."""
    present: list[ImageRecord] = []
    missing: list[ImageRecord] = []
    for rec in records:
        (present if rec.path.is_file() else missing).append(rec)
    if missing and not skip_missing:
        raise DataError(Path(source), None, None, f"{missing_note(missing, len(present))}; restore them, or "
                        f"pass --skip-missing to {what} the rest (recorded in the run)")
    if skip_missing:  # without it, a damaged file is refused where it is read, in one sentence
        from spatialprobe.vision import image_problem

        damaged = [rec for rec in present if image_problem(rec.path) is not None]
        gone = {(rec.prompt_id, rec.image_index) for rec in damaged}
        present = [rec for rec in present if (rec.prompt_id, rec.image_index) not in gone]
        missing += damaged
    return present, missing


def missing_record(store: ImageStore, missing: Sequence[ImageRecord], present: int) -> dict[str, Any]:
    """What a run records of the image files it skipped (``details.missing_images``): the gone
    ones and, by file, why each damaged one could not be read."""
    from spatialprobe.vision import image_problem

    problems = {str(r.path.relative_to(store.path)): image_problem(r.path) for r in missing if r.path.is_file()}
    return {"n": len(missing), "note": missing_note(missing, present, len(problems)),
            "files": [str(r.path.relative_to(store.path)) for r in missing],
            **({"unreadable": problems} if problems else {})}
