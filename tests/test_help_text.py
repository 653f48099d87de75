"""Every option's help is shown whole by ``--help``: no bracketed default is taken for rich markup."""

import re
from typing import Any

import pytest
import typer
from rich.text import Text
from typer.testing import CliRunner

from spatialprobe.cli import app

runner = CliRunner()


def _commands(command: Any, path: tuple[str, ...] = ()):
    """Each (path, command) pair of the command tree below ``command``."""
    yield path, command
    if hasattr(command, "commands"):  # a group (typer may carry its own click)
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


def test_no_help_text_is_lost_to_markup() -> None:
    lost = []
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            text = getattr(param, "help", None) or ""
            shown = Text.from_markup(text).plain
            if shown != text.replace("\\[", "["):
                lost.append(f"{' '.join(path)} {param.name}: {text!r} shows as {shown!r}")
    assert not lost, "\n".join(lost)


@pytest.mark.parametrize("args, defaults", [
    (["judge", "size", "--help"], ["[default: owlvit]", "[default: dpt]", "[default: runs/judge-TASK-DETECTOR-ID]"]),
    (["judge", "posrel", "--help"], ["[default: vdg]"]),
    (["qa", "text", "--help"], ["[default: runs/ask-qa-text-SOURCE-MODEL-ID]"]),
    (["bench", "--help"], ["[default: runs/ask-NAME-MODEL-IDENTITY8]", "[default: 8]"]),
])
def test_help_prints_bracketed_defaults(args: list[str], defaults: list[str]) -> None:
    result = runner.invoke(app, args, env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert result.exit_code == 0, result.output
    for default in defaults:
        assert default in result.output


def test_every_default_is_shown_in_one_style() -> None:
    # typer prints "[default: X]" for a default it knows; a default resolved later is written so too
    other = []
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            text = " ".join((getattr(param, "help", None) or "").split())
            if re.search(r"\\\[(?!default: )", text) or re.search(r"\(default\b|[;.] [Dd]efault:", text):
                other.append(f"{' '.join(path)} {param.name}: {text!r}")
    assert not other, "\n".join(other)


@pytest.mark.parametrize("args, said, unsaid", [
    (["probe", "--help"], "any model whose adapter asks", "Probe a masked or causal LM"),
    (["vsr", "--help"], "Any checkpoint whose adapter asks", "A contrastive image-text checkpoint"),
])
def test_help_names_every_adapter_family(args: list[str], said: str, unsaid: str) -> None:
    result = runner.invoke(app, args, env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert said in text and unsaid not in text
