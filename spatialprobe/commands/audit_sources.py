"""A benchmark read for an audit: its items without their images (``benchmarks.local_copy.text_only``),
whatever command or module reads it - the seed tasks, VSR, SpatialMQA, QA, any benchmark module."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def benchmark(name: str, data: Path | None, split: str | None, part: str, task: str | None,
              module: tuple[str | None, int | None, list[str]] = (None, None, [])) -> tuple[Any, tuple[Any, ...]]:
    """(the source ``name`` names, read without images; the items of its training split, where
    it has one beside ``part``). ``module``: a benchmark module's (subset, limit, options)."""
    from spatialprobe import tasks
    from spatialprobe.commands.bench import benchmarks, source_settings
    from spatialprobe.engine.rebuild import rebuild_source
    from spatialprobe.errors import UsageError
    from spatialprobe.tasks import data as task_data

    if task is not None and name != "qa":
        raise UsageError(f"--task applies to qa (the task whose questions are audited), not to {name}.")
    if split is not None and name != "vsr" and name not in benchmarks():
        raise UsageError(f"--split applies to vsr and the benchmark modules, not to {name}.")
    if name in benchmarks():
        if data is None:
            raise UsageError(f"audit blind {name} needs --data: your local copy of {name}.")
        from spatialprobe.benchmarks.local_copy import text_only

        with text_only():  # the questions alone: no image is looked for
            return rebuild_source(source_settings(name, str(data), None, split, *module), 0), ()
    if module != (None, None, []):
        raise UsageError("--subset, --limit and --option apply to a benchmark module (spatialprobe ls source), "
                         f"not to {name}.")

    if name in tasks.names():
        from spatialprobe.benchmarks.commonsense import task_source
        from spatialprobe.tasks.origin import builtin_source, release_source

        dataset = task_data.load(name) if data is None else task_data.load_release(data, task=name)
        return task_source(dataset, builtin_source(name) if data is None else release_source(data), "none")[0], ()
    if name == "qa":
        from spatialprobe.benchmarks.qa import qa_source

        return qa_source(task, None if data is None else str(data.resolve()))[0], ()
    if name not in ("vsr", "spatialmqa"):
        raise UsageError(f"{name} is neither a run folder (no config.json there) nor a benchmark: one of "
                         f"{', '.join((*tasks.names(), 'vsr', 'spatialmqa', 'qa', *benchmarks()))}.")
    if data is None:
        raise UsageError(f"audit blind {name} needs --data: the {name} folder of JSON lines.")
    if name == "vsr":
        from spatialprobe.benchmarks.vsr import split_file, vsr_source

        vsr_split = split or "random"
        train = split_file(data, vsr_split, "train")
        prior = vsr_source(train, None, vsr_split, "train")[0].items if part != "train" and train.is_file() else ()
        return vsr_source(split_file(data, vsr_split, part), None, vsr_split, part)[0], prior
    from spatialprobe.benchmarks.spatialmqa import spatialmqa_source

    train = data / "train.jsonl"
    prior = spatialmqa_source(train, None, "train")[0].items if part != "train" and train.is_file() else ()
    return spatialmqa_source(data / f"{part}.jsonl", None, part)[0], prior
