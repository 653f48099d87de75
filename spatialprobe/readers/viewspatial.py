"""ViewSpatial-Bench's reader of a reply, as its authors' ``evaluate.py`` reads it (quirks kept).

Source: ZJU-REAL/ViewSpatial-Bench @2e85a5e ``evaluate.py`` (Apache-2.0): ``extract_option``
(l. 125-127) is ``re.search(r"\\b([A-D])\\b", text, re.IGNORECASE)``, the first match upper-cased;
``evaluate_vlm`` (l. 343-344) reads only the reply's **last line** (``split("\\n")[-1]``) with it and
compares the letter with ``extract_option`` of the gold (``"C. left"`` -> ``C``). So:

* the article "a" is option A, "I'd" is D, and the first whole letter of the last line wins
  ("It is a B" -> A);
* a reply ending in a newline reads nothing (its last line is empty);
* a reply of ``None`` (a failed call) counts wrong.

lmms-eval's ``viewspatial`` task (``lmms_eval/tasks/viewspatial/utils.py`` @75571cf) carries the
same reader. The question the authors send is ``question + choices + PROMPT_FORMAT`` (l. 36, 336).
"""

from __future__ import annotations

import re

from spatialprobe.readers.base import Reader, letter_reader
from spatialprobe.registry import component

PROMPT_FORMAT = "\nReply only to the corresponding option.\nAnswer:"
"""``evaluate.py`` l. 36: appended to the question and its choices (no separator before the choices)."""
_LETTER = re.compile(r"\b([A-D])\b", re.IGNORECASE)


def extract_option(text: str) -> str | None:
    """The first whole letter A-D of ``text`` in any case, upper-cased; None where there is none."""
    match = _LETTER.search(text)
    return match.group(1).upper() if match else None


def read_viewspatial(reply: str | None) -> str | None:
    """The letter the authors' scorer reads from a reply: :func:`extract_option` of its last line."""
    if reply is None:
        return None
    return extract_option(reply.split("\n")[-1])


read = letter_reader(read_viewspatial, "the first whole letter A-D (any case) of the last line",
                     "no whole letter A-D on the reply's last line")
"""The authors' reading as a :class:`~spatialprobe.readers.base.Reading`."""


VIEWSPATIAL = component("reader", "viewspatial", "ViewSpatial's evaluate.py: the last line's first whole A-D")(
    Reader("viewspatial", read, "ZJU-REAL/ViewSpatial-Bench @2e85a5e evaluate.py l. 125-127, 343-344",
           "the reply's last line, its first whole letter A-D in any case (the article 'a' is A)"))
