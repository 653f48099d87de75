"""The strict reading of a reply to a lettered item, read beside each benchmark's official reader:
the stripped reply is exactly an option's letter (upper case) or exactly an option's text in any
case (the plain reader of tests/official/README.md); anything else ("(B)", "The answer is B", "b",
"B or C") reads nothing and counts wrong. It never guesses, so its accuracy is a floor no phrasing
raises, and a reply the official reader reads otherwise shows as a gap between the two numbers."""

from __future__ import annotations

from collections.abc import Sequence


def read_strict(reply: str | None, options: Sequence[str], labels: Sequence[str]) -> str | None:
    """The label the reply names strictly (module docstring), or None."""
    text = (reply or "").strip()
    letters = [chr(65 + n) for n in range(len(options))]
    if text in letters:
        return labels[letters.index(text)]
    return next((label for option, label in zip(options, labels, strict=True) if text.lower() == option.lower()),
                None)
