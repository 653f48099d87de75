"""OmniSpatial's readers of a reply, as its authors' ``api_eval.py`` reads one (quirks kept).

Source: qizekun/OmniSpatial @208bac2 ``api_eval.py`` ``process_info`` l. 49-63 (the test set
is CC BY-NC 4.0), chosen there by ``--eval_type``:

* ``re`` (their default): the **last** match of ``Answer\\s*:\\s*([A-D])\\b`` in any case,
  **not upper-cased** (``answer: b`` reads ``b``, which never equals the gold ``B``); no match
  reads ``A`` - an unread reply is answer A, never nothing;
* ``direct``: the stripped reply's first character, upper-cased (``""`` for an empty reply);
* ``json``: a fenced ```` ```json ```` block's ``answer``, its first character upper-cased; any
  failure reads ``A``.

Each is a registered reader, ``omnispatial-re``, ``omnispatial-direct`` and ``omnispatial-json``;
the benchmark names the one ``--option reader=`` chooses (default ``re``, the authors' default).
The ``llm`` type (a GPT-4.1-mini judge) is not transcribed: it calls an API. The instruction each
type appends to the prompt is :data:`FORMAT_PROMPTS` (``system_prompts.py``, sent there as part of
the system prompt).
"""

from __future__ import annotations

import json
import re
from functools import partial

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.registry import component

EVAL_TYPES = ("re", "direct", "json")
FORMAT_PROMPTS = {
    "re": "End your answer with a separate line formatted exactly as:\n\nAnswer: X\nwhere X ∈ {A, B, C, D}.",
    "json": 'You need to respond with the answer in JSON format:\n\n```json\n{\n    "analysis": "The analysis '
            'of the image and question",\n    "answer": "A"\n}\n```',
    "direct": "Note: You only need to respond with A, B, C, or D without providing any additional information.",
}
"""``system_prompts.py`` ``RE_FORMAT``, ``JSON_FORMAT``, ``DIRECT_FORMAT`` (surrounding blank lines stripped)."""
_ANSWER = re.compile(r"Answer\s*:\s*([A-D])\b", re.IGNORECASE)


def read_omnispatial(reply: str | None, eval_type: str = "re") -> str:
    """The letter ``api_eval.py`` compares with the gold for ``eval_type`` (module docstring)."""
    response = reply or ""
    if eval_type == "re":
        found = _ANSWER.findall(response)
        return found[-1] if found else "A"
    if eval_type == "direct":
        return response.strip().upper()[:1]
    if eval_type == "json":
        try:
            cleaned = response.strip().removeprefix("```json").removesuffix("```").strip()
            return json.loads(cleaned).get("answer", "A").strip().upper()[:1]
        except Exception:  # as theirs: whatever fails (no JSON, not an object, no text) reads "A"
            return "A"
    raise ValueError(f"OmniSpatial's eval_type is one of {', '.join(EVAL_TYPES)}, not {eval_type!r}")


def read(reply: str, asked: Asked, eval_type: str = "re") -> Reading:
    """``api_eval.py``'s reading for ``eval_type`` (a lower-case or other letter stays itself: never gold)."""
    found = read_omnispatial(reply, eval_type)
    why = {"re": "the last 'Answer: X' (none: A)", "direct": "the reply's first character, upper-cased",
           "json": "the JSON block's answer, its first character upper-cased (any failure: A)"}[eval_type]
    return letter(asked, found or None, why if found else "an empty reply")


CITED = "qizekun/OmniSpatial @208bac2 api_eval.py l. 49-63"
RE = component("reader", "omnispatial-re", "OmniSpatial's api_eval.py re: the last 'Answer: X'; none reads A")(
    Reader("omnispatial-re", partial(read, eval_type="re"), f"{CITED} (--eval_type re)",
           "the last 'Answer: X' in any case, not upper-cased ('answer: b' reads b, wrong); none reads A",
           unread="never: a reply without 'Answer: X' reads A"))
DIRECT = component("reader", "omnispatial-direct", "OmniSpatial's api_eval.py direct: the first character")(
    Reader("omnispatial-direct", partial(read, eval_type="direct"), f"{CITED} (--eval_type direct)",
           "the stripped reply's first character, upper-cased"))
JSON = component("reader", "omnispatial-json", "OmniSpatial's api_eval.py json: the JSON answer; failure reads A")(
    Reader("omnispatial-json", partial(read, eval_type="json"), f"{CITED} (--eval_type json)",
           "a ```json block's answer, its first character upper-cased; any failure reads A",
           unread="never: a reply that is no such JSON reads A"))
READERS = {"re": RE, "direct": DIRECT, "json": JSON}
"""The three transcribed readers by ``--eval_type``."""
