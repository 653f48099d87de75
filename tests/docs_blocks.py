"""The command blocks of the README and docs/, as the documentation tests read them.

A ```` ```console ```` block shows commands and what they print: a line ``$ COMMAND`` (continued
by a trailing ``\\``) is a command, the lines after it, up to the next command, its output. The
tests run every such block (``tests/test_docs.py``) and compare the output, numbers included. In the
expected output, a line ``...`` stands for any number of lines and ``...`` inside a line for any
text (a time, a temporary path), as doctest's ELLIPSIS.

A block that shows a command and its output but cannot run here (a GPU, a real checkpoint, a
dataset that is not public) is a ```` ```text ```` block whose first line says so:
``# not run here: REASON``. Any other block with a ``$ spatialprobe`` line is an error.

Commands shown without output (```` ```bash ```` blocks) are not run, but each ``spatialprobe``
command in them must parse: its subcommand exists and every option it names is one of that
subcommand's (``tests/test_docs.py``), so a renamed option fails the build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = "# not run here:"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Step:
    """One command of a console block and the output the page shows for it."""

    command: str
    """The command as typed (continuation lines joined)."""
    expected: tuple[str, ...]
    """The lines the page shows after it."""


@dataclass(frozen=True)
class Block:
    """A fenced block of a page."""

    page: Path
    """The markdown file."""
    line: int
    """Line of the opening fence (1-based)."""
    kind: str
    """The fence's language (``console``, ``bash``, ``text``, ...)."""
    body: str
    """The block's text."""
    steps: tuple[Step, ...] = field(default=())
    """For a console block, its commands and their outputs."""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        kind, body = match.group(1), match.group(2)
        found.append(Block(page, line, kind, body, parse_steps(body) if kind == "console" else ()))
    return found


def parse_steps(body: str) -> tuple[Step, ...]:
    steps: list[Step] = []
    command: list[str] = []
    output: list[str] = []
    lines = body.rstrip("\n").split("\n")
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("$ "):
            if command:
                steps.append(Step(" ".join(command), tuple(output)))
            command, output = [line[2:].rstrip("\\").strip()], []
            while lines[k].endswith("\\") and k + 1 < len(lines):
                k += 1
                command.append(lines[k].rstrip("\\").strip())
        else:
            output.append(line)
        k += 1
    if command:
        steps.append(Step(" ".join(command), tuple(output)))
    return tuple(steps)


def shown_commands(block: Block) -> list[str]:
    """The ``spatialprobe`` commands of a bash block (continuations joined, comments cut)."""
    joined = re.sub(r"\\\n\s*", " ", block.body)
    commands = []
    for line in joined.split("\n"):
        line = line.split(" #")[0].strip()
        for part in re.split(r"&&|;|\|", line):
            part = part.strip().removeprefix("$ ")
            if part.startswith("spatialprobe "):
                commands.append(part)
    return commands


def matches(expected: list[str], actual: list[str]) -> bool:
    """Doctest's ELLIPSIS on lines: ``...`` alone matches any lines, inside a line any text."""
    if not expected:
        return not actual
    head = expected[0]
    if head.strip() == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    if not actual:
        return False
    pattern = "^" + ".*".join(re.escape(part) for part in head.rstrip().split("...")) + "$"
    return re.match(pattern, actual[0].rstrip()) is not None and matches(expected[1:], actual[1:])


VOLATILE = (re.compile(r"[━╸╺]|\d+:\d\d:\d\d|it/s\]|^Loading weights"),)
"""Lines that differ from run to run (progress bars, elapsed times): shown as ``...``."""
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}|/tmp/[^\s`'\")]+")
"""Parts of a line that differ from run to run (a time stamp, a temporary path): ``...``."""


def shown(actual: list[str]) -> list[str]:
    """What a page shows for ``actual`` output: volatile lines folded into one ``...``, time
    stamps and temporary paths inside a line as ``...``."""
    out: list[str] = []
    for line in actual:
        if any(p.search(line) for p in VOLATILE):
            if not out or out[-1] != "...":
                out.append("...")
            continue
        out.append(STAMP.sub("...", line))
    return out


def regenerate(page: Path, run_step) -> str:
    """The page with every console block's output replaced by what its commands print now (run in
    order in one fresh folder, as the test does; a step whose output the page shows as one ``...``
    stays so): ``python tests/docs_blocks.py PAGE`` after a change that moves a documented number."""
    text = page.read_text(encoding="utf-8")
    pieces, last = [], 0
    for match in FENCE.finditer(text):
        if match.group(1) != "console":
            continue
        body = []
        for step in parse_steps(match.group(2)):
            body.append("$ " + step.command)
            actual = shown(run_step(step.command))
            body += ["..."] if step.expected == ("...",) else actual  # a step the page elides stays elided
        opening = text[match.start():text.index("\n", match.start()) + 1]
        pieces += [text[last:match.start()], opening + "\n".join(body) + "\n```"]
        last = match.end()
    return "".join(pieces) + text[last:]


if __name__ == "__main__":
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from test_docs import SHARED, run_step

    for name in sys.argv[1:]:
        target = Path(name).resolve()
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "work"
            work.mkdir()
            if SHARED.is_dir():
                (Path(tmp) / "shared").symlink_to(SHARED)
            target.write_text(regenerate(target, lambda command, w=work: run_step(command, w)), encoding="utf-8")
        print(f"rewrote {target}")
