"""EWoK (Ivanova et al. 2024, ewok-core/ewok): minimal pairs of world knowledge - two contexts
and two targets, each target plausible after one context only (C1 ⇒ T1, C2 ⇒ T2) - in its
spatial and physical domains (``spatial-relations``, ``physical-relations``,
``physical-dynamics``, ``physical-interactions``; ``--option domains=a,b`` for others).

**Read from the user's password-protected archive, in memory only.** ``--data`` is a ZIP file;
``--option password_env=VAR`` names the environment variable holding its password (the password
itself is never an option nor recorded). Its members are read with :mod:`zipfile` (``pyzipper``
where installed, which also reads AES archives) into memory; nothing is extracted to disk. The
compiled items are its CSV, JSONL or Parquet members with ``Context1, Context2, Target1,
Target2, Domain`` (as ``ewok.compile`` writes its test suites and EWoK-core-1.0 is laid out); the
repository's own ``config.zip`` holds the templates these are compiled from, and is refused
naming what to do. The run records the archive's path and the hash of its (encrypted) bytes; its
rows name each item by id, never by its text.

Scored as EWoK scores minimal pairs (the ``logprobs`` evaluation): the log-probability of each
target after the matched and after the mismatched context (``context + " " + target``, the
target's tokens only). Each EWoK item is two rows, one per target: right where the target is
strictly more likely after its own context (a tie is wrong). An item scores 1, ½ or 0, and the
benchmark's score - the mean over items - is the accuracy over the rows (every item has two),
broken down per domain and resampled by item. Wording: ``cloze`` and ``question`` both carry the
target and its two contexts (the options are the labels ``mismatched``/``matched``, so neither the
run's rows nor its cache hold item text), so causal LMs score the target after each context, chat
models as the reply to it (likelihood only: a generated reply does not apply).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spatialprobe.benchmarks import base
from spatialprobe.benchmarks.base import Official, Source, SourceItem, Wording
from spatialprobe.errors import DataError, UsageError
from spatialprobe.metrics.intervals import Resampling
from spatialprobe.registry import component

OPTIONS: dict[str, str] = {
    "password_env": "the environment variable that holds the archive's password (required)",
    "domains": "comma-separated EWoK domains (default: spatial-relations and the physical ones)",
}
DOMAINS = ("spatial-relations", "physical-relations", "physical-dynamics", "physical-interactions")
COLUMNS = ("Context1", "Context2", "Target1", "Target2", "Domain")
LABELS = ("matched", "mismatched")
OFFICIAL = (Official({"accuracy": "accuracy"}, ("domain",)),)


def _archive(path: Path) -> Any:
    try:
        import pyzipper  # type: ignore[import-untyped]  # reads AES archives too

        return pyzipper.AESZipFile(path)
    except ImportError:
        import zipfile

        return zipfile.ZipFile(path)


def _bad_zip() -> tuple[type[Exception], ...]:
    """The errors of a damaged archive or a wrong password's bad CRC (stdlib's and pyzipper's)."""
    import zipfile

    try:
        import pyzipper

        return (zipfile.BadZipFile, pyzipper.BadZipFile)
    except ImportError:
        return (zipfile.BadZipFile,)


def _password(options: Mapping[str, str]) -> bytes:
    variable = options.get("password_env")
    if not variable:
        raise UsageError("ewok reads a password-protected archive: pass --option password_env=VAR, the "
                         "environment variable that holds its password.")
    value = os.environ.get(variable)
    if not value:
        raise UsageError(f"--option password_env={variable}: the environment variable {variable} is not set.")
    return value.encode()


def _rows(name: str, data: bytes) -> list[dict[str, Any]]:
    """The records of one archive member, parsed in memory."""
    if name.endswith(".parquet"):
        from spatialprobe.extras import require

        pq = require("pyarrow.parquet", "benchmarks")
        return [dict(r) for r in pq.read_table(io.BytesIO(data)).to_pylist()]
    text = data.decode("utf-8")
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [dict(r) for r in csv.DictReader(io.StringIO(text), delimiter="\t" if name.endswith(".tsv") else ",")]


def read_archive(path: Path, password: bytes) -> tuple[list[tuple[str, int, dict[str, Any]]], str]:
    """(member, row number, record) of every compiled item in the archive, and its version."""
    from spatialprobe.benchmarks.local_copy import version_of

    bad_zip = _bad_zip()
    wrong: tuple[type[Exception], ...] = (RuntimeError, *bad_zip)
    unreadable: tuple[type[Exception], ...] = (OSError, *bad_zip)
    if not path.is_file():
        raise UsageError(f"{path}: no such file (ewok reads your copy of its password-protected archive)")
    found: list[tuple[str, int, dict[str, Any]]] = []
    try:
        with _archive(path) as archive:
            for member in sorted(archive.namelist()):
                if not member.endswith((".csv", ".tsv", ".jsonl", ".parquet")):
                    continue
                try:
                    data = archive.read(member, pwd=password)
                except wrong as err:  # "Bad password for file ...", a bad CRC
                    raise UsageError(f"{path}: the password in --option password_env does not open it "
                                     f"({err})") from None
                except NotImplementedError as err:  # an AES archive without pyzipper
                    raise UsageError(f"{path}: {err}; install the benchmarks extra (pyzipper) to read it") from None
                rows = _rows(member, data)
                if rows and set(COLUMNS) <= set(rows[0]):
                    found += [(member, n, row) for n, row in enumerate(rows, 1)]
    except unreadable as err:
        raise DataError(path, None, None, f"not a readable ZIP archive ({err})") from None
    if not found:
        raise DataError(path, None, None, f"holds no compiled EWoK items (members with {', '.join(COLUMNS)}); "
                        "EWoK's config.zip holds the templates: compile them (ewok: make ewok-core) and zip "
                        "the test suites under the same password")
    return found, version_of([path])


def _items(member: str, n: int, row: Mapping[str, Any]) -> tuple[SourceItem, SourceItem]:
    """The two rows of one EWoK item: each target after (mismatched, matched) context, so that a
    tie goes to the mismatched one, as the authors' strict comparisons count it."""
    for column in COLUMNS:
        if not str(row.get(column) or "").strip():
            raise DataError(f"{member} (in the archive) row {n}", None, column, "missing or empty")
    key = str(row.get("id") or row.get("Unnamed: 0") or f"{Path(member).stem}-{n}")
    domain = str(row["Domain"]).replace("_", "-")
    fields = {"item": key, "domain": domain, "concept": str(row.get("ConceptA") or "")}
    out = []
    for t, (own, other) in ((1, ("Context1", "Context2")), (2, ("Context2", "Context1"))):
        wording = Wording(f"EWoK {key} target {t}", ("mismatched", "matched"), ("mismatched", "matched"),
                          target=str(row[f"Target{t}"]), contexts=(str(row[other]), str(row[own])))
        out.append(SourceItem(f"{key}/{t}", wording.prompt, wording.options, wording.labels, "matched", None,
                              (key,), {**fields, "target": t}, {"question": wording, "cloze": wording}))
    return out[0], out[1]


def ewok_source(found: Mapping[str, Any]) -> Source:
    """EWoK's items of the chosen domains from the user's archive (:func:`base.given`)."""
    options = found["options"]
    if found.get("images") or found.get("split") or found.get("subset"):
        raise UsageError("--images, --split and --subset do not apply to ewok; choose domains with "
                         "--option domains=.")
    if not found.get("data"):
        raise UsageError("ewok reads your copy of its password-protected archive: pass --data FILE.zip.")
    domains = tuple(d.strip() for d in (options.get("domains") or ",".join(DOMAINS)).split(",") if d.strip())
    records, version = read_archive(Path(str(found["data"])), _password(options))
    items: list[SourceItem] = []
    for member, n, row in records:
        if str(row["Domain"]).replace("_", "-") in domains:
            items += _items(member, n, row)
        if found.get("limit") and len(items) >= 2 * found["limit"]:
            break
    if not items:
        present = sorted({str(r["Domain"]) for _, _, r in records})
        raise UsageError(f"{found['data']}: no EWoK item of the domains {', '.join(domains)}; "
                         f"it has {', '.join(present)}")
    spec = Resampling(LABELS, ("item",), key=("instance_id",), pooled=True, unit="EWoK items")
    settings = base.recorded("ewok", found, str(found["data"]), version)
    return Source("ewok", "ewok", f"ewok@{version}", LABELS, tuple(items), spec, official=OFFICIAL, settings=settings,
                  details={"total": len(records), "what": "targets", "domains": list(domains)})


@component("source", "ewok",
           "EWoK spatial/physical minimal pairs from its password-protected archive, read in memory")
def from_settings(settings: Mapping[str, Any], seed: int) -> Source:
    """The source of ``spatialprobe bench ewok`` settings or of a run's recorded ones."""
    return ewok_source(base.given(settings))


def demo(folder: Path, seed: int = 0) -> Any:
    """A synthetic copy in EWoK's layout (:mod:`spatialprobe.benchmarks.demo_copy`): an AES-encrypted
    ZIP of compiled spatial test suites, its password ``demo`` in ``SPATIALPROBE_DEMO_EWOK_PASSWORD``."""
    import csv
    import io
    import random

    import pyzipper

    from spatialprobe.benchmarks.demo_copy import Demo

    rng, out = random.Random(seed), io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["", "Domain", "ConceptA", "ConceptB", "Context1", "Context2", "Target1", "Target2"])
    names = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal"]
    for k in range(6):
        a, b = rng.sample(names, 2)
        writer.writerow([k, "spatial-relations", "left", "right", f"{a} stands to the left of {b}.",
                         f"{a} stands to the right of {b}.", f"{b} is to the right of {a}.",
                         f"{b} is to the left of {a}."])
    path = folder / "ewok-core-1.0.zip"
    folder.mkdir(parents=True, exist_ok=True)
    with pyzipper.AESZipFile(path, "w", compression=pyzipper.ZIP_DEFLATED, encryption=pyzipper.WZ_AES) as archive:
        archive.setpassword(b"demo")
        archive.writestr("dataset/testsuite-spatial_relations.csv", out.getvalue().encode())
    return Demo(path, options={"password_env": "SPATIALPROBE_DEMO_EWOK_PASSWORD"},
                env={"SPATIALPROBE_DEMO_EWOK_PASSWORD": "demo"})
