"""BLINK's reply reader: the authors' ``analyze_answer`` without its GPT-3.5 fallback.

Transcribed from zeyofu/BLINK_Benchmark @2d6a779 ``eval/test_benchmark.py`` ``analyze_answer``
(l. 12-44), called with ``all_choices = ['(A)', ..., '(E)'][:len(choices)]`` (l. 70-73); the score
is exact string equality of the stored prediction with the gold ``"(X)"`` (``eval/evaluate.py``
``eval_prediction``, l. 28-65). The reply's whitespace-separated words are intersected with the
item's ``(A)``..``(E)``:

* the reply exactly ``A``..``E`` -> that option; exactly ``(A)``..``(E)`` -> itself (nothing is
  stripped: ``B\\n`` and `` B`` are not ``B``);
* exactly one ``(X)`` word in the reply, or in its last paragraph (after the last blank line) ->
  that one, the last paragraph's first;
* anything else (``B.``, ``(B).``, ``The answer is B``, option text, two letters) goes to
  GPT-3.5-turbo (``match_multiple_choice``), whose raw reply is stored as the prediction. That
  judge is not run here: nothing is read, which counts wrong - what their code stores where every
  call fails (``'(Z) Failed to get multiple choice'``).

The letters of the plain reply are read only up to E (their list); a sixth option is never read.
"""

from __future__ import annotations

from spatialprobe.readers.base import Asked, Reader, Reading, letter
from spatialprobe.registry import component

CHOICES = ("(A)", "(B)", "(C)", "(D)", "(E)")


def read_blink(reply: str, asked: Asked) -> Reading:
    all_choices = set(CHOICES[:len(asked.options)])
    if reply in ("A", "B", "C", "D", "E"):
        return letter(asked, reply, "the reply is a letter")
    if reply in CHOICES:
        return letter(asked, reply[1], "the reply is (X)")
    words = all_choices & set(reply.split())
    last = all_choices & set(reply.split("\n\n")[-1].split())
    if (len(words) != 1 and len(last) != 1) or len(words) < 1:
        return Reading(None, "no single (X): the authors' GPT-3.5 matcher (not run) - counted wrong")
    if len(last) == 1:
        return letter(asked, next(iter(last))[1], "the one (X) of the last paragraph")
    return letter(asked, next(iter(words))[1], "the one (X) of the reply")


BLINK = component("reader", "blink",
                  "BLINK's analyze_answer: 'X', '(X)' or one (X) word; its GPT-3.5 matcher not run")(
    Reader("blink", read_blink, "zeyofu/BLINK_Benchmark @2d6a779 eval/test_benchmark.py l. 12-44",
           "the reply 'X' or '(X)', or the one '(X)' word of the reply or its last paragraph; else the "
           "authors' GPT-3.5 matcher (not run: wrong)",
           unread="GPT-3.5-turbo matches it to an option (not run here): counted wrong"))
