"""Finding a rule's record by name or task, and refusing a rule, mode or argument that cannot judge.

Rules are registered in :mod:`spatialprobe.registry` under one of :data:`JUDGE_KINDS`, so
``spatialprobe ls`` lists them and an unknown name gets "did you mean". A task file's
``judge_rule`` is either the one rule of the task (``area*depth^2`` for size) or ``position``:
any registered rule that lists the task judges it, chosen with ``--rule``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from spatialprobe import registry, tasks
from spatialprobe.errors import UnknownComponent, UsageError
from spatialprobe.judging.rulebook.record import MODES, JudgeRule

JUDGE_KINDS = ("position-judge", "position-judge-3d", "comparison-judge")
"""The registry kinds whose entries are :class:`JudgeRule` records."""
CHOSEN = "position"
"""A task file's ``judge_rule`` where ``--rule`` chooses among the registered rules."""


def rule_names() -> list[str]:
    return sorted(name for kind in JUDGE_KINDS for name in registry.names(kind))


def rule_named(name: str) -> JudgeRule:
    """The record registered as ``name``; an unknown name is refused with the close matches."""
    for kind in JUDGE_KINDS:
        if name in registry.names(kind):
            return registry.lookup(kind, name)
    known = rule_names()
    close = difflib.get_close_matches(name, known, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownComponent(f"Unknown judge rule {name!r}.{hint} Available: {', '.join(known)}.")


def all_rules() -> list[JudgeRule]:
    return [rule_named(name) for name in rule_names()]


def judged_tasks() -> list[str]:
    """Every task whose task file names a judge rule, in table order (weight is not visible: none)."""
    return [name for name in tasks.names() if tasks.get(name).judge_rule]


def fixed_rule(task: str) -> str | None:
    """The one rule of a task that has one (size, height); None where ``--rule`` chooses."""
    rule = tasks.get(task).judge_rule
    return None if rule in (None, CHOSEN) else str(rule)


def default_rule(task: str) -> str:
    """The rule that judges ``task`` when no ``--rule`` is given."""
    fixed = fixed_rule(task)
    if fixed is not None:
        return fixed
    found = [rule.name for rule in all_rules() if task in rule.default_for]
    if not found:
        raise UsageError(f"judge {task} has no default rule; give --rule.")
    return found[0]


def rule_of(task: str, name: str | None) -> JudgeRule:
    """The record that judges ``task`` under ``--rule name`` (a task with one rule: that rule)."""
    return rule_named(fixed_rule(task) or name or default_rule(task))


def tasks_where(wanted: Callable[[JudgeRule], bool]) -> list[str]:
    """The judged tasks some rule of which is ``wanted``, in table order."""
    chosen = [rule for rule in all_rules() if wanted(rule)]
    return [task for task in judged_tasks() if any(task in rule.tasks for rule in chosen)]


def and_list(words: list[str]) -> str:
    """``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def check(task: str, name: str, mode: str, rule_args: Mapping[str, Any], depth_region: str | None) -> None:
    """Refuse a mode, rule or argument that cannot judge ``task``, in one sentence."""
    rule = rule_of(task, name)
    check_cuts(rule, rule_args)
    if mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}.")
    if task not in rule.tasks:
        needs_depth = [r.name for r in all_rules() if task in r.tasks and r.reads_depth]
        if needs_depth and not rule.reads_depth:
            raise UsageError(f"judge {task} needs a rule that reads depth ({', '.join(needs_depth)}); "
                             f"{rule.name} judges {rule.judges} only.")
        raise UsageError(f"--rule {rule.name} judges the {rule.judges} of judge {and_list(list(rule.tasks))}, "
                         f"not {task}.")
    if mode == "reference" and rule.reference is None:
        with_one = sorted(r.name for r in all_rules() if r.reference is not None and task in r.tasks)
        raise UsageError(f"--rule {rule.name} has no reference mode (rules with one: {', '.join(with_one)}); "
                         "use --mode corrected.")
    cuts = rule.score.cuts if rule.score else {}
    if rule_args and not rule.thresholds and not cuts:
        raise UsageError(f"--rule-arg does not apply to --rule {rule.name}: it has no arguments.")
    if mode == "reference" and rule_args and not rule.mode(mode).takes_thresholds:
        raise UsageError(f"--rule-arg does not apply to --rule {rule.name} --mode reference: the peer's "
                         "comparisons have no arguments.")
    if mode == "reference" and rule.depth_region and depth_region not in (None, "release"):
        raise UsageError("--depth-region covered does not apply to --mode reference: the release "
                         "averages the int()-truncated box.")
    unknown = [key for key in rule_args if key not in rule.thresholds and key not in cuts]
    if unknown:
        raise UsageError(f"--rule-arg {unknown[0]} does not apply to --rule {rule.name}: its arguments are "
                         f"{', '.join([*rule.thresholds, *cuts])}.")


def check_cuts(rule: JudgeRule, rule_args: Mapping[str, Any]) -> None:
    """A score's cut (GenEval's confidence cut) is an argument of its rule only, a number in [0, 1]."""
    for key, value in rule_args.items():
        owners = [r.name for r in all_rules() if r.score is not None and key in r.score.cuts]
        if not owners:
            continue
        if rule.name not in owners:
            raise UsageError(f"--rule-arg {key} applies to --rule {' or '.join(owners)} only (the cut of its "
                             "benchmark score).")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise UsageError(f"--rule-arg {key} must be a number in [0, 1], not {value!r}.")


def listing(name: str) -> str:
    """What ``spatialprobe ls`` adds to a rule's line: its tasks, thresholds, modes and score."""
    rule = rule_named(name)
    parts = [f"tasks {', '.join(rule.tasks)}"]
    if rule.thresholds:
        parts.append("thresholds " + ", ".join(f"{k}={v}" for k, v in rule.defaults().items()))
    if rule.same_in_modes:
        parts.append(f"the same in both modes ({rule.corrected.follows})")
    elif rule.reference is not None:
        parts.append(f"reference: {rule.reference.follows}")
    else:
        parts.append("no reference mode")
    if rule.score is not None:
        prompts = f" (per prompt: {rule.score.prompt_metric})" if rule.score.prompt_metric else ""
        cuts = "".join(f", cut {k}={v}" for k, v in rule.score.cuts.items())
        parts.append(f"its score {rule.score.metric}{prompts}{cuts}")
    return "; " + "; ".join(parts)
