"""MMSI-Bench: the authors' prompt and letter extraction, in the three forms the authors published.

1. The code the authors' repository runs. OpenRobotLab/MMSI-Bench (the VLMEvalKit fork that the
   README's "Installation" clones; a snapshot of RunsenXu/MMSI-Bench was not available here)
   @4e28bff ``vlmeval/dataset/mmsi_bench.py``: ``MMSIBenchDataset.build_prompt`` (l. 100-129),
   ``evaluate`` (l. 131-208) and ``extract_single_choice_with_word_boundary`` (l. 210-242), the same
   at every commit of the file (c4b16dc on): the text between double, then single backticks, then
   the first capital A-D standing alone and not followed by a space and a letter. No braces, no
   lower case.
2. The README's "Answer Extraction" section, same repository and commit, ``README.md`` l. 200-238
   (added at 42d5648, 20 June 2025): the same steps plus ``{X}`` (``pattern_add``), returning the
   score (1.0 / 0.0 / None). The README adds: "If the extraction fails, we use the default settings
   of VLMEvalKit to extract the answer with an LLM" - the fork's non-circular ``evaluate`` (1.) has
   no such fallback (an unextracted reply scores 0); its circular ``evaluate`` has the LLM path
   commented out ("for most models we use extract_single_choice_with_word_boundary", l. 734-749).
3. lmms-eval's task (``mmsi_bench``; the authors' README announces it): EvolvingLMMs-Lab/lmms-eval
   @75571cf ``lmms_eval/tasks/mmsi_bench/utils.py`` l. 79-120: the README's steps, but
   ``[A-F]`` case-insensitive (so "a" and "b" read too) and the score's extra branches.

A bare "{B}" reads B under all three (``\b`` holds next to a brace); the brace step matters where
another lone capital A-D comes first: "Option A: no. Answer: {B}" reads B under 2. and 3., A under 1.

The post-prompt: ``"\\nAnswer with the option's letter from the given choices directly. Enclose the
option's letter within ``."`` appended to the question, whose text already holds the options
("Options: A: ..., B: ..."): ``build_prompt`` writes ``f"{question}\\n{post_prompt}"`` (l. 114-116);
lmms-eval ``msr_doc_to_text`` writes ``question.strip() + post_prompt`` with the leading newline in
the post-prompt (``msr_bench.yaml``) - the same text for a question without trailing whitespace.
(VLMEvalKit's own ``MMSIBench`` at e8e78f0 rebuilds the options from columns instead and reads the
reply with ``can_match_option``: see ``official.vlmeval_spatial``.)
"""

# ruff: noqa: SIM114 - the authors' code as they wrote it

from __future__ import annotations

import re

POST_PROMPT = ("Answer with the option's letter from the given choices directly. "
               "Enclose the option's letter within ``.")
"""mmsi_bench.py l. 114-115 (lmms-eval's ``post_prompt`` is ``"\\n" + POST_PROMPT``)."""


def build_prompt_text(question):
    """The text part of ``MMSIBenchDataset.build_prompt`` (mmsi_bench.py l. 112-116); the images
    go first, one message each."""
    return f"{question}\n{POST_PROMPT}"


def extract_code(pred):
    """Transcribed from ``MMSIBenchDataset.extract_single_choice_with_word_boundary`` (mmsi_bench.py
    @4e28bff l. 210-242): the letter, or ``None``."""
    if pred is None:
        return None
    try:
        pred = str(pred)
    except Exception:
        return None

    pattern_1 = r'``([^`]*)``'
    match = re.search(pattern_1, pred)
    if match:
        pred = match.group(1)

    pattern_2 = r'`([^`]*)`'
    match = re.search(pattern_2, pred)
    if match:
        pred = match.group(1)

    pattern_3 = r'\b[A-D]\b(?!\s[a-zA-Z])'
    match = re.search(pattern_3, pred)
    if match:
        pred = match.group()
    else:
        return None

    return pred


def evaluate_code_row(prediction, answer):
    """One row of ``MMSIBenchDataset.evaluate`` (mmsi_bench.py l. 140-181): 1.0 or 0.0. Accuracy is
    the mean over rows; a reply with nothing extracted scores 0 (no LLM fallback here)."""
    prediction = str(prediction) if prediction is not None else None
    gt = str(answer) if answer is not None else None
    extracted_pred = extract_code(prediction)
    score = 0.0
    if extracted_pred is not None:
        answer = gt.lower().replace("\n", " ").strip()
        predict = extracted_pred.lower().replace("\n", " ").strip()
        try:
            if answer == predict[0]:
                score = 1.0
            elif predict[0] == "(" and answer == predict[1]:
                score = 1.0
            elif predict[0:7] == "option " and answer == predict[7]:
                score = 1.0
            elif predict[0:14] == "the answer is " and answer == predict[14]:
                score = 1.0
        except Exception:
            pass
    return score


def extract_readme(pred, gt):
    """Transcribed from the README's ``extract_single_choice_with_word_boundary(pred, gt)``
    (README.md @4e28bff l. 207-237): 1.0, 0.0, or ``None`` where no letter is found."""
    pattern_1 = r'``([^`]*)``'
    match = re.search(pattern_1, pred)
    if match:
        pred = match.group(1)

    pattern_2 = r'`([^`]*)`'
    match = re.search(pattern_2, pred)
    if match:
        pred = match.group(1)

    pattern_add = r'\{([^}]*)\}'
    match = re.search(pattern_add, pred)
    if match:
        pred = match.group(1)

    pattern_3 = r'\b[A-D]\b(?!\s[a-zA-Z])'
    match = re.search(pattern_3, pred)
    if match:
        pred = match.group()
    else:
        return None

    answer = gt.lower().replace("\n", " ").strip()
    predict = pred.lower().replace("\n", " ").strip()
    try:
        if answer == predict[0]:
            return 1.0
    except Exception:
        return 0.0
    return 0.0


def extract_lmms(pred, gt):
    """Transcribed from lmms-eval's ``extract_single_choice_with_word_boundary(pred, gt)``
    (``lmms_eval/tasks/mmsi_bench/utils.py`` @75571cf l. 79-120): 1.0, 0.0, or ``None``; its
    ``msr_process_results`` (l. 123-139) scores ``None`` as 0."""
    if pred is None:
        return None

    pred = str(pred)

    pattern_1 = r"``([^`]*)``"
    match = re.search(pattern_1, pred)
    if match:
        pred = match.group(1)

    pattern_2 = r"`([^`]*)`"
    match = re.search(pattern_2, pred)
    if match:
        pred = match.group(1)

    pattern_add = r"\{([^}]*)\}"
    match = re.search(pattern_add, pred)
    if match:
        pred = match.group(1)

    pattern_3 = r"\b[A-F]\b(?!\s[a-zA-Z])"
    match = re.search(pattern_3, pred, flags=re.IGNORECASE)
    if match:
        pred = match.group().upper()
    else:
        return None

    answer = gt.lower().replace("\n", " ").strip()
    predict = pred.lower().replace("\n", " ").strip()
    try:
        if answer == predict[0]:
            return 1.0
        elif predict[0] == "(" and answer == predict[1]:
            return 1.0
        elif predict[0:7] == "option " and answer == predict[7]:
            return 1.0
        elif predict[0:14] == "the answer is " and answer == predict[14]:
            return 1.0
    except Exception:
        return 0.0
    return 0.0


def letter_readme(pred):
    """The letter the README's function compares (its steps up to ``pattern_3``), or ``None``: the
    README function returns only a score; this is the same code stopped before the comparison, so
    a reader can report which option was read. Not a separate function of the authors."""
    for pattern in (r'``([^`]*)``', r'`([^`]*)`', r'\{([^}]*)\}'):
        match = re.search(pattern, pred)
        if match:
            pred = match.group(1)
    match = re.search(r'\b[A-D]\b(?!\s[a-zA-Z])', pred)
    return match.group() if match else None


def letter_lmms(pred):
    """The letter lmms-eval's function compares (upper-cased), or ``None``; as ``letter_readme``."""
    if pred is None:
        return None
    pred = str(pred)
    for pattern in (r"``([^`]*)``", r"`([^`]*)`", r"\{([^}]*)\}"):
        match = re.search(pattern, pred)
        if match:
            pred = match.group(1)
    match = re.search(r"\b[A-F]\b(?!\s[a-zA-Z])", pred, flags=re.IGNORECASE)
    return match.group().upper() if match else None
