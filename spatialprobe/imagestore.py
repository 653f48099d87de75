"""The image store: a run directory of generated images with an SQLite manifest.

Written by ``spatialprobe synthesize``, read by the judge, the QA-from-images probe and the
reports. Schema of ``RUN/run.sqlite`` (documented in the README too)::

    prompts(prompt_id TEXT PRIMARY KEY,  -- dataset instance id, or "line-0007" for prompt files
            prompt TEXT NOT NULL,        -- the text the model was given
            meta TEXT NOT NULL)          -- JSON: the dataset instance (obj_a, obj_b, label, task, ...)
                                         --   or any metadata a prompt file carried; {} if none
    images(prompt_id TEXT NOT NULL, image_index INTEGER NOT NULL,
           seed INTEGER NOT NULL,        -- the seed this image was generated from
           path TEXT NOT NULL,           -- file path relative to the run directory
           backend TEXT NOT NULL,        -- vqgan-clip, diffusers, ...
           model TEXT NOT NULL,          -- model ids, e.g. "vqgan=...;clip=..."
           weights_hash TEXT,            -- hash of the weights used
           settings TEXT NOT NULL,       -- JSON of the generation settings
           clip_score REAL,              -- final CLIP similarity (VQGAN+CLIP), else NULL
           seconds REAL,                 -- generation time of this image's batch share
           created TEXT NOT NULL,
           PRIMARY KEY (prompt_id, image_index))

A row in ``images`` is written only after its file has been renamed to its final name, so a
finished image always has both; an interrupted run leaves at most stray ``*.tmp`` files.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .store import RunDir, commit_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS prompts (
    prompt_id TEXT PRIMARY KEY, prompt TEXT NOT NULL, meta TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS images (
    prompt_id TEXT NOT NULL, image_index INTEGER NOT NULL, seed INTEGER NOT NULL,
    path TEXT NOT NULL, backend TEXT NOT NULL, model TEXT NOT NULL, weights_hash TEXT,
    settings TEXT NOT NULL, clip_score REAL, seconds REAL, created TEXT NOT NULL,
    PRIMARY KEY (prompt_id, image_index));
"""


@dataclass(frozen=True)
class PromptItem:
    """One prompt to synthesize, with what the judge needs to score its images."""

    prompt_id: str
    """Stable id: the dataset instance id, or ``line-NNNN`` for a prompt file."""
    prompt: str
    """Text given to the synthesis model."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The dataset instance as a dict (obj_a, obj_b, label, task, ...) or a prompt file's metadata."""


@dataclass(frozen=True)
class ImageRecord:
    """A finished image as the manifest holds it."""

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


class ImageStore:
    """Open (or create) the image store of a run directory."""

    def __init__(self, run: RunDir | str | os.PathLike[str]):
        self.run = run if isinstance(run, RunDir) else RunDir(run)
        with self.run.db() as conn:
            conn.executescript(SCHEMA)

    @property
    def path(self) -> Path:
        return self.run.path

    def add_prompts(self, items: Iterable[PromptItem]) -> None:
        """Add prompts, or update the text and metadata of known ids (keeping their order)."""
        with self.run.db() as conn:
            conn.executemany(
                "INSERT INTO prompts VALUES (?, ?, ?) ON CONFLICT (prompt_id) DO UPDATE "
                "SET prompt = excluded.prompt, meta = excluded.meta",
                [(i.prompt_id, i.prompt, json.dumps(i.meta, ensure_ascii=False)) for i in items],
            )

    def finished(self) -> set[tuple[str, int]]:
        """(prompt_id, image_index) of every image whose row and file both exist."""
        with self.run.db() as conn:
            rows = conn.execute("SELECT prompt_id, image_index, path FROM images").fetchall()
        return {(pid, idx) for pid, idx, rel in rows if (self.path / rel).exists()}

    def image_path(self, prompt_id: str, image_index: int, suffix: str = ".png") -> Path:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in prompt_id)
        return self.path / "images" / f"{safe}_{image_index:02d}{suffix}"

    def save_image(self, image, prompt_id: str, image_index: int, *, seed: int, backend: str,
                   model: str, settings: dict[str, Any], weights_hash: str | None = None,
                   clip_score: float | None = None, seconds: float | None = None) -> Path:
        """Write a PIL image atomically, then record it. Returns the final path."""
        final = self.image_path(prompt_id, image_index)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(final.name + f".{os.getpid()}.tmp")
        image.save(tmp, format="PNG")  # named by pid, so a later run can tell a dead writer's strays
        commit_file(tmp, final)
        with self.run.db() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO images VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (prompt_id, image_index, seed, str(final.relative_to(self.path)), backend, model,
                 weights_hash, json.dumps(settings, sort_keys=True), clip_score, seconds,
                 time.strftime("%Y-%m-%dT%H:%M:%S")),
            )
        return final

    def prompts(self) -> list[PromptItem]:
        with self.run.db() as conn:
            rows = conn.execute("SELECT prompt_id, prompt, meta FROM prompts ORDER BY rowid").fetchall()
        return [PromptItem(pid, text, json.loads(meta)) for pid, text, meta in rows]

    def _records(self) -> Iterator[ImageRecord]:
        """Every image row, in prompt order then image index, whether or not its file exists."""
        with self.run.db() as conn:
            rows = conn.execute(
                "SELECT i.prompt_id, p.prompt, i.image_index, i.seed, i.path, i.backend, i.model, "
                "p.meta, i.clip_score FROM images i JOIN prompts p USING (prompt_id) "
                "ORDER BY p.rowid, i.image_index"
            ).fetchall()
        for pid, prompt, idx, seed, rel, backend, model, meta, clip in rows:
            yield ImageRecord(pid, prompt, idx, seed, self.path / rel, backend, model,
                              json.loads(meta), clip)

    def images(self) -> Iterator[ImageRecord]:
        """Finished images in prompt order, then image index."""
        return (rec for rec in self._records() if rec.path.exists())

    def missing_images(self) -> list[ImageRecord]:
        """Images the manifest records but whose file is gone (deleted or moved since)."""
        return [rec for rec in self._records() if not rec.path.exists()]
