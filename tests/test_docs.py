"""Documentation that runs: every ```console block of the README and docs/ is executed and prints
what the page shows, numbers included; every other command shown parses (tests/docs_blocks.py says
how a page marks a block that cannot run here)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from docs_blocks import NOT_RUN, ROOT, Block, blocks, matches, pages, shown_commands
from typer.testing import CliRunner

from spatialprobe.cli import app

SHARED = ROOT.parent / "shared"
CONSOLE_PAGES = [p for p in pages() if any(b.kind == "console" for b in blocks(p))]


def run_step(command: str, cwd: Path) -> list[str]:
    """What the command prints (stdout and stderr as a terminal shows them), run in ``cwd``."""
    argv = shlex.split(command)
    if argv[0] == "spatialprobe":
        old = Path.cwd()
        os.chdir(cwd)
        try:
            result = CliRunner().invoke(app, argv[1:], env={"COLUMNS": "120", "NO_COLOR": "1"})
        finally:
            os.chdir(old)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        text = result.output
    else:
        done = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=300,
                              check=False)
        text = done.stdout + done.stderr
    return [line.rstrip() for line in text.rstrip("\n").split("\n")] if text.strip() else []


@pytest.mark.parametrize("page", CONSOLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_console_block_prints_what_the_page_shows(page, tmp_path):
    """The page's console blocks run in order in one fresh folder (later blocks use what earlier
    ones made), with ``../shared`` beside it when this checkout has one."""
    work = tmp_path / "work"
    work.mkdir()
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    for block in (b for b in blocks(page) if b.kind == "console"):
        if "../shared" in block.body and not SHARED.is_dir():
            pytest.skip(f"{block.where} reads ../shared, which this checkout does not have")
        for step in block.steps:
            actual = run_step(step.command, work)
            assert matches(list(step.expected), actual), (
                f"{block.where}: `{step.command}` printed\n" + "\n".join(actual)
                + "\n\nwhere the page shows\n" + "\n".join(step.expected))


def test_a_block_with_a_command_and_its_output_is_run_or_marked():
    unmarked = [b.where for p in pages() for b in blocks(p)
                if b.kind not in ("console", "bash", "python", "json")
                and any(line.startswith("$ spatialprobe") for line in b.body.split("\n"))
                and not b.body.startswith(NOT_RUN)]
    assert not unmarked, f"show these as ```console blocks (run by the tests) or start them with '{NOT_RUN}'"


def _parse(command: str) -> str | None:
    """None where ``command`` names an existing subcommand with options it has; else why not."""
    from spatialprobe.commands.scale_options import bare_ray_means_local

    # a synopsis: [--opt X] is an option like any other, A|B|C the first alternative
    argv = [word.split("|")[0] for word in shlex.split(command.replace("[", " ").replace("]", " "), comments=True)]
    argv = bare_ray_means_local(argv[1:])  # as the app's group reads --ray alone
    command_: Any = typer.main.get_command(app)  # typer's own click (typer._click), duck-typed here
    ctx = command_.make_context("spatialprobe", [], resilient_parsing=True)
    while hasattr(command_, "get_command") and argv and not argv[0].startswith("-"):
        sub = command_.get_command(ctx, argv[0])
        if sub is None:
            return f"no command {argv[0]!r}"
        command_, argv = sub, argv[1:]
        if hasattr(command_, "get_command"):
            ctx = command_.make_context(command_.name, [], parent=ctx, resilient_parsing=True)
    try:
        command_.make_context(command_.name, list(argv), parent=ctx)
    except Exception as err:  # click's UsageError family (typer vendors click)
        if not hasattr(err, "format_message"):
            raise
        if type(err).__name__ in ("MissingParameter",):
            return None  # a placeholder left out is fine: only names are checked
        return str(err.format_message())
    return None


def test_every_command_shown_parses():
    wrong = []
    for page in pages():
        for block in blocks(page):
            if block.kind == "console":
                commands = [s.command for s in block.steps if s.command.startswith("spatialprobe ")]
            else:
                commands = shown_commands(block)
            for command in commands:
                if "..." in command or "$" in command:  # elided, or a shell variable
                    continue
                why = _parse(command)
                if why:
                    wrong.append(f"{block.where}: `{command}`: {why}")
    assert not wrong, "\n".join(wrong)


def test_the_block_reader_reads_steps_and_ellipses():
    block = Block(ROOT / "README.md", 1, "console", "")
    assert block.where == "README.md:1"
    from docs_blocks import parse_steps

    steps = parse_steps("$ spatialprobe a \\\n    --b c\nline 1\n...\n$ ls\n")
    assert [(s.command, s.expected) for s in steps] == [("spatialprobe a --b c", ("line 1", "...")), ("ls", ())]
    assert matches(["a ... c", "...", "z"], ["a b c", "x", "y", "z"])
    assert not matches(["a 1"], ["a 2"])
    assert matches(["..."], [])


def test_the_readme_is_a_front_door_and_every_link_leads_somewhere():
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    broken = [f"{page.relative_to(ROOT)}: {target}" for page in pages()
              for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
              if not target.startswith(("http://", "https://", "mailto:")) and not (page.parent / target).exists()]
    assert not broken, "\n".join(broken)
    linked = set(re.findall(r"\(docs/([\w.-]+\.md)\)", readme))
    assert linked == {p.name for p in (ROOT / "docs").glob("*.md")}, "every docs page is one click from the README"


def test_no_issue_numbers_in_what_people_read():
    """The issue tracker is not the reader's: no "issue N" in the README, the docs, the package's
    code and messages, the tests or the benches (another project's issue, "#123", may be cited)."""
    import re

    pattern = re.compile(r"\bissues? \d+", re.IGNORECASE)
    files = [*pages(), *(ROOT / "spatialprobe").rglob("*.py"), *(ROOT / "tests").glob("*.py"),
             *(ROOT / "bench").glob("*.py"), ROOT / "setup.sh", *(ROOT / "bench").glob("*.sh")]
    found = [f"{path.relative_to(ROOT)}:{n}" for path in files
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not found, "\n".join(found)
