"""Random replies to a lettered multiple-choice item, written the way models write them.

``replies(options, gold, n, seed)`` draws ``n`` replies; each carries its ``shape`` (how it is
written) and ``meant`` (the option letter its writer meant, or ``None`` for an empty reply, a
refusal or a reply naming two letters), so a test can count agreement per shape. The letter meant
is the gold one about half of the time. Seeded: the same arguments give the same replies.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass


@dataclass(frozen=True)
class Reply:
    text: str
    """The reply as a model wrote it."""
    shape: str
    """How it is written: one of ``SHAPES``."""
    meant: str | None
    """The option letter the writer meant, or ``None`` (no answer, or two)."""


_NOUNS = ["cup", "chair", "lamp", "dog", "car", "plate", "book", "ball"]
_EXPLAIN = ["because it is closer to the camera", "since the first object is partly hidden",
            "as the shadow suggests", "judging from the perspective of the image",
            "which can be seen from the position of the table"]
_LEAD = ["Looking at the image,", "Based on the picture,", "From the scene,", "Let me think step by step."]


def _text(options, letter):
    return options[string.ascii_uppercase.index(letter)]


def _sentence(rng):
    a, b = rng.sample(_NOUNS, 2)
    return f"the {a} is near the {b}"


def _other(rng, letters, letter):
    return rng.choice([x for x in letters if x != letter])


# Each maker: (rng, letters, options, letter) -> (text, meant)
_MAKERS = {
    "bare": lambda r, L, o, x: (x, x),
    "bare_lower": lambda r, L, o, x: (x.lower(), x),
    "paren": lambda r, L, o, x: (f"({x})", x),
    "period": lambda r, L, o, x: (f"{x}.", x),
    "letter_text": lambda r, L, o, x: (f"{x}. {_text(o, x)}", x),
    "paren_text": lambda r, L, o, x: (f"({x}) {_text(o, x)}", x),
    "colon_text": lambda r, L, o, x: (f"{x}: {_text(o, x)}", x),
    "answer_is": lambda r, L, o, x: (f"The answer is {x}", x),
    "answer_is_period": lambda r, L, o, x: (f"The answer is {x}.", x),
    "answer_is_paren": lambda r, L, o, x: (f"The answer is ({x}).", x),
    "answer_is_lower": lambda r, L, o, x: (f"the answer is {x.lower()}", x),
    "answer_colon": lambda r, L, o, x: (f"Answer: {x}", x),
    "option_word": lambda r, L, o, x: (f"Option {x}", x),
    "double_backtick": lambda r, L, o, x: (f"The answer is ``{x}``.", x),
    "backtick": lambda r, L, o, x: (f"`{x}`", x),
    "brace": lambda r, L, o, x: (f"{{{x}}}", x),
    "bold": lambda r, L, o, x: (f"**{x}**", x),
    "answer_tag": lambda r, L, o, x: (f"<answer>{x}</answer>", x),
    "trailing_explanation": lambda r, L, o, x: (f"{x}. {_text(o, x).capitalize()}, {r.choice(_EXPLAIN)}.", x),
    "leading_prose": lambda r, L, o, x: (f"{r.choice(_LEAD)} {_sentence(r)}. So the answer is {x}.", x),
    "verbose_bold": lambda r, L, o, x: (f"The correct answer is **{x}**. Here's why: {_sentence(r)}, "
                                        f"{r.choice(_EXPLAIN)}.", x),
    "letter_then_reason": lambda r, L, o, x: (f"{x} is correct {r.choice(_EXPLAIN)} and {_sentence(r)}.", x),
    "two_letters_or": lambda r, L, o, x: (f"{x} or {_other(r, L, x)}", None),
    "two_letters_sentence": lambda r, L, o, x: (f"It could be {x}, but {_other(r, L, x)} is also possible.", None),
    "last_paragraph": lambda r, L, o, x: (f"({_other(r, L, x)}) does not fit.\n\nSo the answer is ({x})", x),
    "article_sentence": lambda r, L, o, x: (f"A look at the {r.choice(_NOUNS)} shows: {_text(o, x)}.", x),
    "article_lower": lambda r, L, o, x: (f"It is a bit {_text(o, x)}, so {x}.", x),
    "option_text": lambda r, L, o, x: (_text(o, x), x),
    "option_text_sentence": lambda r, L, o, x: (f"The {r.choice(_NOUNS)} is {_text(o, x)}.", x),
    "option_text_upper": lambda r, L, o, x: (_text(o, x).upper(), x),
    "empty": lambda r, L, o, x: ("", None),
    "whitespace": lambda r, L, o, x: (r.choice([" ", "\n", "  \n\t "]), None),
    "refusal": lambda r, L, o, x: (r.choice(["I cannot determine the answer from the image.",
                                             "Cannot determine the answer", "I'm not sure."]), None),
    "newline_last": lambda r, L, o, x: (f"{r.choice(_LEAD)}\n{_sentence(r).capitalize()}.\n{x}", x),
    "newline_first": lambda r, L, o, x: (f"{x}\n{_sentence(r).capitalize()}, {r.choice(_EXPLAIN)}.", x),
    "trailing_newline": lambda r, L, o, x: (f"{x}\n", x),
    "leading_space": lambda r, L, o, x: (f"  {x}", x),
}
SHAPES = tuple(_MAKERS)


def reply(rng, options, gold, shape=None):
    """One reply: the shape drawn (or given), the letter meant the gold one half of the time."""
    letters = list(string.ascii_uppercase[: len(options)])
    shape = shape or rng.choice(SHAPES)
    letter = gold if rng.random() < 0.5 else rng.choice(letters)
    text, meant = _MAKERS[shape](rng, letters, options, letter)
    return Reply(text, shape, meant)


def replies(options, gold, n, seed=0):
    """``n`` replies to an item with these ``options`` (texts, lettered A, B, ...) and ``gold``
    letter, every shape drawn with equal probability."""
    rng = random.Random(f"{seed}|{'|'.join(options)}|{gold}")
    return [reply(rng, options, gold) for _ in range(n)]


def every_shape(options, gold, seed=0):
    """One reply of each shape, in ``SHAPES`` order."""
    rng = random.Random(f"{seed}|every|{'|'.join(options)}|{gold}")
    return [reply(rng, options, gold, shape) for shape in SHAPES]


# Numeric replies (shapes named num_*): (rng, value written as the gold is, the value) -> text
_NUMERIC_MAKERS = {
    "num_number": lambda r, t, v: t,
    "num_number_period": lambda r, t, v: f"{t}.",
    "num_integer": lambda r, t, v: str(round(v)),
    "num_unit_meters": lambda r, t, v: f"{t} meters",
    "num_unit_m": lambda r, t, v: f"{t}m",
    "num_unit_cm": lambda r, t, v: f"{round(v * 100)} cm",
    "num_unit_feet": lambda r, t, v: f"{v * 3.28084:.1f} feet",
    "num_square_meters": lambda r, t, v: f"{t} square meters",
    "num_answer_is": lambda r, t, v: f"The answer is {t}",
    "num_about": lambda r, t, v: f"about {t} m",
    "num_bold_unit": lambda r, t, v: f"It is **{t} m** away.",
    "num_scalar": lambda r, t, v: f"\\scalar{{{t}}} \\distance_unit{{meters}}",
    "num_sentence": lambda r, t, v: f"There are {t} {r.choice(_NOUNS)}s in the room.",
    "num_word": lambda r, t, v: r.choice(["two", "three", "seven", "twelve"]),
    "num_zero": lambda r, t, v: "0",
    "num_negative": lambda r, t, v: f"-{t}",
    "num_scientific": lambda r, t, v: f"{v:.2e}",
    "num_two_numbers": lambda r, t, v: f"{t} or {round(v * 1.5, 2)}",
    "num_trailing_newline": lambda r, t, v: f"{t}\n",
    "num_leading_space": lambda r, t, v: f"  {t}",
    "num_empty": lambda r, t, v: "",
    "num_refusal": lambda r, t, v: "I cannot tell from these frames.",
}
NUMERIC_SHAPES = tuple(_NUMERIC_MAKERS)


def numeric_reply(rng, gold, shape=None):
    """One reply to an item whose gold is the number ``gold`` (text): the shape drawn (or given),
    the value the gold half of the time, else off by a factor in [0.3, 1.7] (two decimals)."""
    shape = shape or rng.choice(NUMERIC_SHAPES)
    value = float(gold) if rng.random() < 0.5 else round(float(gold) * rng.uniform(0.3, 1.7), 2)
    text = gold if value == float(gold) else f"{value:g}"
    return Reply(_NUMERIC_MAKERS[shape](rng, text, value), shape, None)
