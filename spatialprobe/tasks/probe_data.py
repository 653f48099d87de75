"""A probe's data as ``probe`` and ``datasets validate`` read it: ``--data``, ``--pairs`` or the
task's built-in set, every line checked against the task (:mod:`spatialprobe.validate` holds the
field checks), and ``--folds`` checked against the objects before anything is scored."""

from __future__ import annotations

from pathlib import Path

from spatialprobe.errors import UsageError
from spatialprobe.validate import task_name


def repeated_pairs(dataset) -> int:
    """How many instances repeat an earlier instance's (first, action, second): posrel's person
    and object under another action (its design: each object comes with two actions) is no
    repeat."""
    pairs = [(i.obj_a.lower(), i.action.lower(), i.obj_b.lower()) for i in dataset.instances]
    return len(pairs) - len(set(pairs))


def task_data(task: str, data: Path | None = None, pairs: Path | None = None, *,
              first: str | None = None, second: str | None = None, answer: str | None = None,
              delimiter: str | None = None, allow_duplicates: bool = False):
    """(dataset, source) of ``--data``, ``--pairs`` or the task's built-in set, every line checked
    against the task; options that do not apply are refused."""
    from spatialprobe.tasks import data as sets
    from spatialprobe.tasks import origin

    task_name(task)
    if data and pairs:
        raise UsageError("give either --data (release format) or --pairs (comparison pairs), not both.")
    pair_options(bool(pairs), first, second, answer, delimiter, allow_duplicates)
    if pairs:
        first, second, answer = first or "obj_a", second or "obj_b", answer or "label"
        dataset = sets.load_pairs(pairs, task, first=first, second=second, answer=answer,
                                      delimiter=delimiter, allow_duplicates=allow_duplicates)
        return dataset, origin.pairs_source(pairs, first, second, answer, delimiter, allow_duplicates)
    if data:
        return sets.load_release(data, task=task), origin.release_source(data)
    return sets.load(task), origin.builtin_source(task)


def pair_options(pairs: bool, first: str | None, second: str | None, answer: str | None,
                 delimiter: str | None, allow_duplicates: bool) -> None:
    """The options of a ``--pairs`` file apply to one only."""
    given = [name for name, value in (("--first", first), ("--second", second), ("--answer", answer),
                                      ("--delimiter", delimiter)) if value is not None]
    if allow_duplicates:
        given.append("--allow-duplicates")
    if given and not pairs:
        raise UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to a --pairs "
                         f"file; without --pairs {'it does' if len(given) == 1 else 'they do'} not apply.")


def workable_folds(dataset, most: int) -> int | None:
    """The largest number of folds up to ``most`` that leaves every fold dev and test instances."""
    from spatialprobe.tasks.data import make_folds

    objects = len({key for inst in dataset.instances for key in inst.fold_keys})
    for k in range(min(most, objects), 1, -1):
        if all(f.dev and f.test for f in make_folds(dataset, k)):
            return k
    return None


def check_folds(dataset, folds: int, seed: int = 0) -> list[str]:
    """``--folds`` against the dataset before anything is scored: refused where a fold would have
    no dev or no test instances (the message names the most folds that work). Returns a note on
    the instances no fold tests: a fold tests only instances with no object in it, so with two
    folds a pair whose objects fall in different folds is tested by neither."""
    from spatialprobe.tasks.data import make_folds

    objects = {key for inst in dataset.instances for key in inst.fold_keys}
    best = workable_folds(dataset, min(folds, len(objects)))
    advice = (f"use --folds {best} or fewer" if best else
              f"no number of folds works: its {len(objects)} objects are too few for object-disjoint "
              "dev and test sets (use more objects)")
    if folds > len(objects):
        raise UsageError(f"--folds {folds} is more than the {len(objects)} objects of {dataset.name}: "
                         f"each object-disjoint fold needs at least one; {advice}.")
    made = make_folds(dataset, folds, seed)
    empty = [f.index for f in made if not f.dev or not f.test]
    if empty:
        best = workable_folds(dataset, folds - 1) if folds > 2 else None
        advice = f"use --folds {best} or fewer" if best else advice
        raise UsageError(f"--folds {folds} leaves fold(s) {', '.join(map(str, empty))} of {dataset.name} "
                         f"without dev or test instances; {advice}.")
    tested = {i for f in made for i in f.test}
    untested = len(dataset.instances) - len(tested)
    if not untested:
        return []
    what = "pairs" if len(next(iter(dataset.instances)).fold_keys) == 2 else "instances"
    return [f"{untested} of {len(dataset.instances)} {what} of {dataset.name} are never tested with "
            f"--folds {folds} (their objects fall in different folds; more folds test them)"]


def data_notes(dataset, folds: int, seed: int = 0, allow_duplicates: bool = False) -> list[str]:
    """What a run of ``dataset`` with ``folds`` folds should say before it starts (refusing it
    where the folds do not work): repeated instances kept (naming ``--allow-duplicates`` only
    where it was given), instances no fold tests."""
    repeats = repeated_pairs(dataset)
    why = " (--allow-duplicates)" if allow_duplicates else ": each is scored and counted"
    kept = [f"{dataset.name}: {repeats} repeated pair(s) kept{why}"] if repeats else []
    return kept + check_folds(dataset, folds, seed)
