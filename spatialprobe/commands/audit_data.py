"""``spatialprobe audit data BENCHMARK|RUN...``: a test set's quality report (:mod:`spatialprobe.audit.data_quality`).

The targets are a benchmark (read as ``audit blind`` reads one, with ``--data``) or run folders
(native or imported) on the same items: the items are the benchmark's, or the first run's source.
Internal checks always; suspect items with two runs or more; image overlap with ``--against``
and ``--training``; composition of each run with ``--by``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from spatialprobe.commands.declared import MODULE_OPTIONS, take_options


@take_options(MODULE_OPTIONS)
def data_command(
    *,
    targets: list[str] = typer.Argument(..., help="A benchmark (with --data) or run folders on the same items, "
                                        "native or imported (spatialprobe import)."),
    data: Path | None = typer.Option(None, "--data", help="The benchmark's local copy (as audit blind reads it)."),
    images: Path | None = typer.Option(None, "--images", help="The folder the items' images are relative to: "
                                       "checks that each exists, and hashes them for --against."),
    split: str | None = typer.Option(None, "--split", help="VSR: random or zeroshot; a benchmark module: its split."),
    subset: str | None, limit: int | None, option: list[str],  # declared in MODULE_OPTIONS
    part: str = typer.Option("test", "--part", help="VSR, SpatialMQA: the part audited (its train split is "
                             "compared for shared images)."),
    agree: int | None = typer.Option(None, "--agree", min=1, help="Suspect an item where at least this many runs "
                                     "give one answer that is not the gold \\[default: half the runs, at least 2]."),
    top: int = typer.Option(20, "--top", min=1, help="Suspect items listed in the table (all in --out)."),
    against: list[str] = typer.Option([], "--against", help="NAME=PATH: a set whose images are compared with the "
                                      "items' (a folder of images or a run folder); repeatable."),
    training: Path | None = typer.Option(None, "--training", help="A declared training set's images (a folder)."),
    distance: int = typer.Option(6, "--hash-distance", min=0, max=32, help="Bits (of 64) two perceptual hashes "
                                 "may differ by and still be one image."),
    by: list[str] = typer.Option([], "--by", help="answer or an item field (object, question_type, ...): each run's "
                                 "score re-weighted to uniform groups of it; repeatable."),
    bins: int = typer.Option(5, "--bins", min=2, help="--by answer on numeric golds: quantile bins."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap of the suspects' change."),
    out: Path | None = typer.Option(None, "--out", help="Write the report as JSON here (every list in full)."),
) -> None:
    """A test set's own quality: conflicting duplicates, answers outside the options or of the wrong
    type, repeated options, missing or shared images; the items most runs answer alike against the
    gold, with each run's score without them; images shared with other sets (perceptual hash); the
    score re-weighted to uniform answer values or groups."""
    from spatialprobe.audit.data_quality import data_table

    found = audit(targets, data, images, (split, subset, limit, option), part, agree, top, against, training,
                  distance, by, bins, seed)
    typer.echo(data_table(found))
    if out is not None:
        out.write_text(json.dumps(found, indent=1, default=str) + "\n", encoding="utf-8")
        typer.echo(f"Audit written to {out}")


def audit(targets: list[str], data: Path | None, images: Path | None, module: tuple[Any, ...], part: str,
          agree: int | None, top: int, against: list[str], training: Path | None, distance: int,
          by: list[str], bins: int, seed: int) -> dict[str, Any]:
    """The report's parts (see the command)."""
    from spatialprobe.audit.data_quality import internal
    from spatialprobe.errors import UsageError

    runs = [Path(t) for t in targets if (Path(t) / "config.json").is_file()]
    if runs and len(runs) != len(targets):
        raise UsageError("audit data takes one benchmark or run folders, not both: "
                         f"{next(t for t in targets if Path(t) not in runs)} is no run folder.")
    if not runs and len(targets) > 1:
        raise UsageError(f"audit data takes one benchmark at a time, not {len(targets)}; give run folders to "
                         "compare runs.")
    if runs and (data is not None or module != (None, None, None, [])):
        raise UsageError("--data, --split, --subset, --limit and --option name a benchmark; a run folder's items are "
                         "its own.")
    if by and not runs:
        raise UsageError("--by re-weights a run's score: give run folders.")
    items, others = _items(targets[0], runs, data, module, part)
    resolve = _resolver(images) if images is not None else None
    named = [Path(t).name for t in targets] if runs else targets
    shown = ", ".join(named) if len(named) <= 3 else f"{len(named)} runs ({named[0]}, …, {named[-1]})"
    found: dict[str, Any] = {"target": shown, "internal": internal(items, others, resolve),
                             "distance": distance}
    if len(runs) > 1:
        found["suspects"] = _suspects(runs, agree, top, seed)
    elif agree is not None:
        raise UsageError("--agree counts runs: give two run folders or more.")
    if against or training is not None:
        found["overlap"] = _overlap(items, resolve, against, training, distance)
    if by:
        found["composition"] = {path.name: _composition(path, by, bins) for path in runs}
    return found


def _items(target: str, runs: list[Path], data: Path | None, module: tuple[Any, ...], part: str
           ) -> tuple[list[Any], dict[str, list[Any]]]:
    """(the audited items, another split's items by name)."""
    from spatialprobe.audit.run_rows import run_source
    from spatialprobe.commands.audit_sources import benchmark

    if runs:
        source, _ = run_source(runs[0])
        return list(source.items), {}
    split, subset, limit, option = module
    source, train = benchmark(target, data, split, part, None, (subset, limit, option))
    return list(source.items), ({"train": list(train)} if train else {})


def _resolver(folder: Path) -> Any:
    def resolve(name: str) -> Path | None:
        if name.startswith("embedded"):
            return None
        path = Path(name)
        return path if path.is_absolute() else folder / path
    return resolve


def _suspects(runs: list[Path], agree: int | None, top: int, seed: int) -> dict[str, Any]:
    from spatialprobe.audit.suspects import answers_of, suspects, without_suspects
    from spatialprobe.errors import UsageError

    answered = dict(answers_of(path) for path in runs)
    if len(answered) < len(runs):
        raise UsageError("two of the run folders have the same name; give each run's folder a name of its own.")
    if not set.intersection(*(set(r) for r in answered.values())):
        raise UsageError("the runs share no item (their instance ids differ): they were not run on the same items.")
    k = agree or max(2, (len(runs) + 1) // 2)
    if k > len(runs):
        raise UsageError(f"--agree {k} is more than the {len(runs)} runs given.")
    found = suspects(answered, k)
    return {"k": k, "runs": len(runs), "items": len(set.intersection(*(set(r) for r in answered.values()))),
            "top": top, "suspects": found,
            "headlines": without_suspects(answered, [s["key"] for s in found], seed=seed)}


def _overlap(items: list[Any], resolve: Any, against: list[str], training: Path | None,
             distance: int) -> list[dict[str, Any]]:
    from spatialprobe.audit.data_checks import image_paths
    from spatialprobe.audit.overlap import items_set, overlap
    from spatialprobe.errors import UsageError

    if resolve is None:
        raise UsageError("--against and --training compare the items' images: give --images, the folder they are in.")
    shown = [(item.key, str(path)) for item in items for name in image_paths(item)
             if (path := resolve(name)) is not None and path.is_file()]
    sets = [items_set("audited", shown)]
    for entry in against:
        name, sep, where = entry.partition("=")
        if not sep or not name or not where:
            raise UsageError(f"--against takes NAME=PATH (a folder of images or a run folder), not {entry!r}.")
        sets.append(_image_set(name, Path(where)))
    if training is not None:
        sets.append(_image_set("training", training))
    return overlap(sets, distance)


def _image_set(name: str, path: Path) -> Any:
    from spatialprobe.audit.data_checks import image_paths
    from spatialprobe.audit.overlap import folder_set, items_set
    from spatialprobe.errors import UsageError

    if (path / "config.json").is_file():
        from spatialprobe.audit.run_rows import run_source

        source, _ = run_source(path)
        return items_set(name, [(i.key, p) for i in source.items for p in image_paths(i) if Path(p).is_file()])
    if not path.is_dir():
        raise UsageError(f"--against {name}={path}: no such folder.")
    return folder_set(name, path)


def _composition(path: Path, by: list[str], bins: int) -> list[dict[str, Any]]:
    from spatialprobe.audit.composition import reweighted
    from spatialprobe.audit.run_rows import run_source

    source, rows = run_source(path)
    return [reweighted(rows, source.spec, field, bins) for field in by]
