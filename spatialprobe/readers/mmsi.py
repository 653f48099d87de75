"""MMSI-Bench's reply readers: the authors' published extraction, and the code their fork runs.

The authors ask (``MMSIBenchDataset.build_prompt``, OpenRobotLab/MMSI-Bench @4e28bff
``vlmeval/dataset/mmsi_bench.py`` l. 100-129) for the option's letter within backticks
(:data:`POST_PROMPT`, asked under ``--wording official``) and read the reply with
``extract_single_choice_with_word_boundary``:

* ``mmsi`` (the official reader): the version of the authors' README ("Answer Extraction", same
  repository and commit, ``README.md`` l. 200-238; lmms-eval's ``mmsi_bench`` task reads the same
  way): the text between double backticks, then between single backticks, then between braces
  (each step searching the previous one's result), then the first capital A-D standing alone and
  not followed by a space and a letter (``A bike ...`` -> nothing; ``B is correct`` -> nothing);
* ``mmsi-code``: the same without the braces step, as ``mmsi_bench.py`` l. 210-242 runs it
  ("Option A: no. Answer: {B}" reads A there, B under ``mmsi``);
* ``mmsi-lmms``: lmms-eval's ``mmsi_bench`` task (EvolvingLMMs-Lab/lmms-eval @75571cf
  ``lmms_eval/tasks/mmsi_bench/utils.py`` l. 79-120): the README's steps with ``[A-F]`` in any
  case, upper-cased ("a" reads A).

A reply with nothing extracted scores 0 in the fork's ``evaluate``; the README adds that the
authors then ask an LLM (VLMEvalKit's default judge), which is not run here: it counts wrong.
"""

from __future__ import annotations

import re

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.registry import component

POST_PROMPT = ("Answer with the option's letter from the given choices directly. "
               "Enclose the option's letter within ``.")
"""``mmsi_bench.py`` l. 114-115: appended on its own line after the question and its options."""
_STEPS = (("double backticks", r"``([^`]*)``"), ("backticks", r"`([^`]*)`"), ("braces", r"\{([^}]*)\}"))
_LETTER = re.compile(r"\b[A-D]\b(?!\s[a-zA-Z])")
_LETTER_LMMS = re.compile(r"\b[A-F]\b(?!\s[a-zA-Z])", re.IGNORECASE)


def extract(pred: str, braces: bool = True, letter: re.Pattern[str] = _LETTER) -> tuple[str | None, str]:
    """The letter extracted (upper-cased) and the steps that narrowed the text."""
    used = []
    for name, pattern in _STEPS if braces else _STEPS[:2]:
        match = re.search(pattern, pred)
        if match:
            pred = match.group(1)
            used.append(name)
    found = letter.search(pred)
    where = f"within {', then '.join(used)}" if used else "in the reply"
    if found is None:
        return None, f"no lone letter {where}"
    return found.group().upper(), f"the first lone letter {where}"


def read_mmsi(reply: str, asked: Asked) -> Reading:
    value, reason = extract(reply)
    return letter(asked, value, reason)


def read_mmsi_code(reply: str, asked: Asked) -> Reading:
    value, reason = extract(reply, braces=False)
    return letter(asked, value, reason)


def read_mmsi_lmms(reply: str, asked: Asked) -> Reading:
    value, reason = extract(reply, letter=_LETTER_LMMS)
    return letter(asked, value, reason)


MMSI = component("reader", "mmsi",
                 "MMSI-Bench's README extraction: ``X``, `X`, {X}, then a lone A-D")(
    Reader("mmsi", read_mmsi, "OpenRobotLab/MMSI-Bench @4e28bff README.md l. 200-238",
           "``X``, then `X`, then {X}, then the first lone A-D not followed by a word",
           unread="an LLM judge in the README (not run): counted wrong, as the fork's evaluate scores it"))
MMSI_CODE = component("reader", "mmsi-code",
                      "MMSI-Bench's mmsi_bench.py extraction: ``X``, `X`, then a lone A-D")(
    Reader("mmsi-code", read_mmsi_code,
           "OpenRobotLab/MMSI-Bench @4e28bff vlmeval/dataset/mmsi_bench.py l. 210-242",
           "``X``, then `X`, then the first lone A-D not followed by a word (no braces)"))
MMSI_LMMS = component("reader", "mmsi-lmms",
                      "lmms-eval's mmsi_bench extraction: as the README's, A-F in any case")(
    Reader("mmsi-lmms", read_mmsi_lmms,
           "EvolvingLMMs-Lab/lmms-eval @75571cf lmms_eval/tasks/mmsi_bench/utils.py l. 79-120",
           "``X``, then `X`, then {X}, then the first lone A-F in any case not followed by a word"))
