"""What a run's inputs ARE, not what they are called: fingerprints of models and files.

A run names its model by a path or a hub id and its data by a path; the content behind a name
can change (a checkpoint folder replaced in place, a data file edited). Each run kind lists its
inputs (:func:`model_input`, :func:`file_input`) in its spec, so the identity holds their
fingerprints and a resume or replay with any of them changed is refused naming it
(:mod:`spatialprobe.runner.spec`).

- a **local folder** (a checkpoint): sha256 over its files' relative paths and contents;
- a **hub id**: the commit the local Hugging Face cache resolves it to (what
  :func:`spatialprobe.loading.load_pretrained` loads: it reads the cache first), else the hub's
  answer when it can be reached, else the id and the revision asked for;
- a **file**: sha256 of its content.

Hashing a 70 GB folder takes minutes, so each file's digest is cached in
``$SPATIALPROBE_HOME/fingerprints.json`` by (absolute path, size, mtime in ns): a file is read
again only when one of them changes. The cache is only a cache: unreadable, corrupt or
unwritable, it is ignored and the digests are computed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

CACHE_FILE = "fingerprints.json"
SHORT = 16
"""Hex digits kept of a sha256 (64 bits: no accidental collision among a user's inputs)."""


def _cache_path() -> Path:
    from spatialprobe.store import home

    return home() / CACHE_FILE


def _load_cache() -> dict[str, list[Any]]:
    try:
        data = json.loads(_cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_cache(cache: dict[str, list[Any]]) -> None:
    from spatialprobe.files import atomic_write_text

    try:  # another process may save meanwhile: the last one wins, the other's digests are recomputed
        _cache_path().parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(_cache_path(), json.dumps(cache, sort_keys=True))
    except OSError:
        pass  # a read-only home: fingerprints are still right, only not remembered


def sha256_file(path: Path) -> str:
    """sha256 of a file's content, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digests(paths: list[Path]) -> list[str]:
    """Each file's sha256, from the cache where its (size, mtime) are those recorded."""
    cache, changed, out = _load_cache(), False, []
    for path in paths:
        stat, key = path.stat(), str(path.resolve())
        entry = cache.get(key)
        if isinstance(entry, list) and entry[:2] == [stat.st_size, stat.st_mtime_ns]:
            out.append(str(entry[2]))
            continue
        digest = sha256_file(path)
        cache[key], changed = [stat.st_size, stat.st_mtime_ns, digest], True
        out.append(digest)
    if changed:
        _save_cache(cache)
    return out


def file_fingerprint(path: str | os.PathLike[str]) -> str:
    """``sha256:`` and the first :data:`SHORT` hex digits of the file's content."""
    return f"sha256:{digests([Path(path)])[0][:SHORT]}"


def folder_files(folder: Path) -> list[Path]:
    """The files that make a model folder, sorted; hidden files and folders (``.git``,
    ``.cache``) are not part of the model."""
    return sorted(p for p in folder.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """``sha256:`` over the folder's files: each relative path and its content's digest."""
    folder = Path(folder)
    files = folder_files(folder)
    digest = hashlib.sha256()
    for path, content in zip(files, digests(files), strict=True):
        digest.update(f"{path.relative_to(folder).as_posix()}\0{content}\n".encode())
    return f"sha256:{digest.hexdigest()[:SHORT]}"


_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".ckpt", ".pt", ".pth")


def local_dir(name_or_path: str) -> Path | None:
    """The local directory of a model: the path itself, or its Hub cache snapshot if present."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception:  # not cached, not a repo id
        return None


def weights_hash(name_or_path: str) -> str | None:
    """sha256 (first 16 hex digits) over the weight files of a model directory, or None. Each
    file's digest comes from the cache (by size and mtime), so a
    large checkpoint is read once, not at every run."""
    folder = local_dir(name_or_path)
    if folder is None:
        return None
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    if not files:
        return None
    digest = hashlib.sha256()
    for path, content in zip(files, digests(files), strict=True):
        digest.update(f"{path.relative_to(folder)}\0{content}\n".encode())
    return digest.hexdigest()[:16]


def hub_revision(repo_id: str, revision: str | None = None) -> str | None:
    """The commit a hub id (at ``revision``, default its main branch) resolves to: the local
    cache's snapshot if it has one, else the hub's answer if it can be reached, else None."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, revision=revision, local_files_only=True)).name
    except Exception:  # not cached, not a repo id, no huggingface_hub
        pass
    from spatialprobe.loading import hub_reachable, looks_local

    if looks_local(repo_id) or not hub_reachable():
        return None
    try:
        from huggingface_hub import HfApi

        return HfApi().model_info(repo_id, revision=revision).sha
    except Exception:  # unknown id, no access: the load will say so in its own sentence
        return None


def model_fingerprint(name_or_path: str, revision: str | None = None) -> dict[str, Any]:
    """``{"fingerprint": ..., "revision": ...}`` of a model (a local folder or file, or a hub id)."""
    path = Path(str(name_or_path))
    if path.is_dir():
        return {"fingerprint": folder_fingerprint(path), "revision": None}
    if path.is_file():  # a single checkpoint file (a VQGAN .ckpt, say)
        return {"fingerprint": file_fingerprint(path), "revision": None}
    resolved = hub_revision(str(name_or_path), revision)
    if resolved is not None:
        return {"fingerprint": f"commit:{resolved}", "revision": resolved}
    return {"fingerprint": f"unresolved:{name_or_path}@{revision or 'default'}", "revision": revision}


def local_path(name_or_path: str) -> str:
    """A model named by a local path as its absolute path (``~`` expanded), so that a run's
    config names the same folder from any working directory, on every Ray worker and in every
    replay; a hub id, or a path that does not exist here (the loader refuses it), as given."""
    path = Path(str(name_or_path)).expanduser()
    return str(path.resolve()) if path.exists() else str(name_or_path)


def model_input(what: str, name_or_path: str, revision: str | None = None) -> dict[str, Any]:
    """A model component as a run input: ``what`` names it in a refusal ("the detector"). The
    command's ``--revision`` and ``--trust-remote-code`` (:func:`spatialprobe.loading.hub_settings`)
    are recorded with it: the revision asked for beside the commit it resolved to."""
    from spatialprobe.loading import hub_defaults

    asked, trust = hub_defaults()
    revision = revision or (None if Path(str(name_or_path)).exists() else asked)
    entry = {"what": what, "model": local_path(name_or_path), **model_fingerprint(str(name_or_path), revision)}
    if revision is not None:
        entry["requested_revision"] = revision
    if trust:
        entry["trust_remote_code"] = True
    return entry


def identity_of(adapter: Any, what: str, name: str) -> dict[str, Any] | None:
    """The model input a run records for ``adapter`` (``what`` names it in a refusal): what the
    adapter's own ``fingerprint()`` says (:meth:`spatialprobe.models.base.Declared.fingerprint`), so
    a run is named by what it asks (a server: its endpoint and served model); a stand-in without
    one is fingerprinted by ``name``. None where the adapter runs no model."""
    fingerprint = getattr(adapter, "fingerprint", None)
    if not callable(fingerprint):
        return model_input(what, name)
    found = fingerprint()
    return {"what": what, **found} if found else None


def hub_settings_of(inputs: dict[str, Any]) -> tuple[str | None, bool]:
    """The (revision, trust_remote_code) a run's recorded inputs were loaded with (a replay
    loads them so again)."""
    asked = {entry.get("requested_revision") for entry in inputs.values() if isinstance(entry, dict)} - {None}
    trust = any(isinstance(entry, dict) and entry.get("trust_remote_code") for entry in inputs.values())
    return (asked.pop() if len(asked) == 1 else None), trust


def file_input(what: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    """An input file as a run input: ``what`` names it in a refusal ("the QA data file")."""
    return {"what": what, "file": str(Path(path).resolve()), "fingerprint": file_fingerprint(path)}


def component_inputs(what: str, spec: Any) -> dict[str, Any]:
    """A registered component (detector, depth estimator) as inputs: its ``model`` argument,
    where it has one (the colour detectors run no model: nothing to fingerprint)."""
    model = (getattr(spec, "args", None) or {}).get("model")
    if not model:
        return {}
    return {what.removeprefix("the ").replace(" ", "_"): model_input(what, model,
                                                                     spec.args.get("revision"))}


def changed_inputs(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One clause per input whose content (or name) differs between two runs' inputs."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = (e if isinstance(e, dict) else {} for e in (old.get(key), new.get(key)))
        if a.get("fingerprint") == b.get("fingerprint"):
            continue
        what = b.get("what") or a.get("what") or key
        name_a, name_b = a.get("model", a.get("file")), b.get("model", b.get("file"))
        if not a or not b or name_a != name_b:
            out.append(f"{what}: {name_a!r} -> {name_b!r}")
        elif "served_model" in b:  # a model behind a server: what its /models answers now
            out.append(f"the server at {b.get('endpoint')} now serves {name_b!r} as {_served(b)}, not "
                       f"{_served(a)} as when this run began")
        elif "model" in b:
            out.append(f"the weights of {what} {name_b!r} changed since this run "
                       f"(fingerprint {_short(a)} -> {_short(b)})")
        else:
            out.append(f"{what} {name_b!r} changed since this run (fingerprint {_short(a)} -> {_short(b)})")
    return out


def _served(entry: dict[str, Any]) -> str:
    """A served model's ``/models`` entry in a few words: ``id=..., root=...``."""
    served = entry.get("served_model")
    if not isinstance(served, dict):
        return str(entry.get("fingerprint"))
    return ", ".join(f"{k}={v}" for k, v in sorted(served.items())) or "an entry without fields"


def _short(entry: dict[str, Any]) -> str:
    return str(entry.get("fingerprint"))[:19]
