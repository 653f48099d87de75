"""VLMEvalKit: ``can_infer`` (option letter, then option text) and the multiple-choice scoring
around it, as ``ImageMCQDataset.evaluate`` and ``_3DSRBench.evaluate`` run it.

Source: open-compass/VLMEvalKit @e8e78f0
- ``vlmeval/utils/matching_util.py``: ``_VERBOSE_ANSWER_RE`` (l. 15), ``can_infer_option``
  (l. 18-61), ``can_infer_text`` (l. 107-121), ``can_infer`` (l. 124-127);
- ``vlmeval/dataset/utils/multiple_choice.py``: ``report_acc`` (l. 77-100), ``build_prompt``
  (l. 224-241), ``build_choices`` (l. 346-351), ``extract_answer_from_item`` (l. 359-405),
  ``eval_vanilla`` (l. 431-437), ``mcq_vanilla_eval`` (l. 475-507);
- ``vlmeval/smp/vlm.py`` ``build_option_str`` (l. 174-179);
- ``vlmeval/dataset/image_mcq.py``: ``ImageMCQDataset.evaluate_heuristic`` (l. 255-378) and
  ``_3DSRBench.evaluate`` (l. 2662-2746).

What happens to a reply (``extract_answer_from_item``): ``can_infer(prediction, choices)``; if it
gives a letter (or 'Z'), that is the prediction. Otherwise, with **no judge** (``--judge
exact_matching``, or a judge whose ``working()`` check fails - no API key - which the evaluate
methods turn into ``model = None`` with a warning) the prediction is ``'Z'`` ("Failed in Prefetch,
no GPT-based answer matching under `exact_matching` policy."), which is wrong for every gold
letter. With a judge (run.py's default for MCQ sets is gpt-4o-mini; ``chatgpt-0125`` maps to
the "openai" result file name), the judge's reply to ``build_prompt`` is read with ``can_infer``
again, up to 3 tries; after 3 failures a random choice among the options and 'Z' (module
``random``, unseeded: ``rng`` here). ``hit`` = prediction == gold; accuracy = mean hit.

Quirks of ``can_infer_option`` kept:
- punctuation ``.()[],:;!*#{}`` becomes spaces and the reply is split on whitespace; exactly one
  distinct option letter among the words is read, and only if its first occurrence is among the
  last four words ("B is wrong because it is far from the camera" -> no letter from this step);
- two distinct letters ("B or C") -> not this step; the verbose-answer regex next (added in
  a67ace50, PR #1552, June 2026; ``verbose_answer_regex=False`` reproduces earlier commits):
  "(correct) answer is **X**", X in A-D, case-insensitive ("the answer is b" -> B);
- a reply containing one of four refusal strings ("Cannot determine the answer", ...) -> 'Z';
  a reply whose only single-letter word is "Z" -> 'Z'; "Failed to obtain answer via API" -> False;
- the article "A" is a letter ("A cat is on the left" -> A when A is an option and "A" is among the
  last four words) unless the environment has ``VERBOSE`` set (to anything, even "0") and the reply
  has more than three words: then ``False`` ("A might be a quantifier").
Quirks of ``can_infer_text``: lower-cased substring match of each option's text in the reply,
exactly one option must match; skipped (False) when the reply is longer than twice the options'
total length; it lower-cases the caller's ``choices`` dict in place.
"""

# ruff: noqa: C408, PERF401, RUF005 - the authors' code as they wrote it

from __future__ import annotations

import copy as cp
import os
import random
import re
import string

import numpy as np

_VERBOSE_ANSWER_RE = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")


def can_infer_option(answer, choices, verbose=None, verbose_answer_regex=True):
    """Transcribed from ``can_infer_option`` (matching_util.py l. 18-61). ``verbose``: ``None``
    reads ``os.environ.get('VERBOSE', 0)`` as theirs; ``verbose_answer_regex=False`` drops the
    lines of PR #1552 (l. 57-59)."""
    if verbose is None:
        verbose = os.environ.get('VERBOSE', 0)
    # Choices is a dictionary
    if 'Failed to obtain answer via API' in answer:
        return False

    reject_to_answer = [
        "Sorry, I can't help with images of people yet.", "I can't process this file.",
        "I'm sorry, but without the image provided", 'Cannot determine the answer'
    ]
    for err in reject_to_answer:
        if err in answer:
            return 'Z'

    def count_choice(splits, choices, prefix='', suffix=''):
        cnt = 0
        for c in choices:
            if prefix + c + suffix in splits:
                cnt += 1
        return cnt

    answer_mod = cp.copy(answer)
    chars = '.()[],:;!*#{}'
    for c in chars:
        answer_mod = answer_mod.replace(c, ' ')

    splits = [x.strip() for x in answer_mod.split()]
    count = count_choice(splits, choices)

    if count == 1:
        for ch in choices:
            if 'A' in splits and len(splits) > 3 and verbose:
                return False  # they log "A might be a quantifier in the string" first
            if ch in splits and splits.index(ch) > (len(splits) - 5):
                return ch
    elif count == 0 and count_choice(splits, {'Z', ''}) == 1:
        return 'Z'

    if verbose_answer_regex:
        match = _VERBOSE_ANSWER_RE.search(answer or "")
        if match and match.group(1).upper() in choices:
            return match.group(1).upper()

    return False


def can_infer_text(answer, choices):
    """Transcribed from ``can_infer_text`` (matching_util.py l. 107-121); mutates ``choices``."""
    answer = answer.lower()
    if len(answer) > 2 * sum(len(str(v)) for v in choices.values()):
        return False
    assert isinstance(choices, dict)
    for k in choices:
        assert k in string.ascii_uppercase
        choices[k] = str(choices[k]).lower()
    cands = []
    for k in choices:
        if choices[k] in answer:
            cands.append(k)
    if len(cands) == 1:
        return cands[0]
    return False


def can_infer(answer, choices, verbose=None, verbose_answer_regex=True):
    """Transcribed from ``can_infer`` (matching_util.py l. 124-127): a letter, 'Z', or False."""
    answer = str(answer)
    copt = can_infer_option(answer, choices, verbose, verbose_answer_regex)
    return copt if copt else can_infer_text(answer, choices)


def build_choices(item):
    """Transcribed from ``build_choices`` (multiple_choice.py l. 346-351): the row's non-empty
    option columns A, B, ... (``item`` a dict; ``None`` / NaN count as empty)."""
    ret = {}
    for ch in string.ascii_uppercase:
        if ch in item and not _isna(item[ch]):
            ret[ch] = item[ch]
    return ret


def _isna(value):
    return value is None or (isinstance(value, float) and value != value)


def build_option_str(option_dict):
    """Transcribed from ``build_option_str`` (vlmeval/smp/vlm.py l. 174-179)."""
    s = 'There are several options: \n'
    for c, content in option_dict.items():
        if not _isna(content):
            s += f'{c}. {content}\n'
    return s


def build_prompt(question, options, prediction):
    """Transcribed from ``build_prompt`` (multiple_choice.py l. 224-241): what the judge is asked
    (BLINK, WeMath, LEGO and Chinese questions have their own templates, not transcribed)."""
    tmpl = (
        'You are an AI assistant who will help me to match '
        'an answer with several options of a single-choice question. '
        'You are provided with a question, several options, and an answer, '
        'and you need to find which option is most similar to the answer. '
        'If the meaning of all options are significantly different from the answer, output Z. '
        'Your should output a single uppercase character in A, B, C, D (if they are valid options), and Z. \n'
        'Example 1: \n'
        'Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n'
        'Answer: a cute teddy bear\nYour output: A\n'
        'Example 2: \n'
        'Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n'
        'Answer: Spider\nYour output: Z\n'
        'Example 3: \n'
        'Question: {}?\nOptions: {}\nAnswer: {}\nYour output: '
    )
    return tmpl.format(question, options, prediction)


def extract_answer_from_item(judge, item, rng=None, verbose=None, verbose_answer_regex=True):
    """Transcribed from ``extract_answer_from_item`` (multiple_choice.py l. 359-405) for a dataset
    other than BLINK, WeMath and LEGO and an English question. ``judge``: ``None`` (exact matching)
    or a callable ``prompt -> str`` standing for ``model.generate``; ``rng`` replaces the module
    ``random`` of the final random draw. Returns ``dict(opt=..., log=...)``."""
    choices = build_choices(item)
    option_str = build_option_str(choices)
    prompt = build_prompt(item['question'], option_str, item['prediction'])
    retry = 3

    ret = can_infer(item['prediction'], choices, verbose, verbose_answer_regex)
    if ret:
        return dict(opt=ret, log=item['prediction'])
    if judge is None:
        return dict(opt='Z', log='Failed in Prefetch, no GPT-based answer matching under `exact_matching` policy.')

    while retry:
        ans = judge(prompt)
        if 'Failed to obtain answer via API' in ans:
            pass  # they log a warning
        else:
            ret = can_infer(ans, choices, verbose, verbose_answer_regex)
            if ret:
                return dict(opt=ret, log=ans)
        retry -= 1

        if retry == 0:
            options = list(choices) + ['Z'] if 'Z' not in choices else []
            return dict(opt=(rng or random).choice(options), log='Failed to predict, thus randomly generate one. ')
    return None


def eval_vanilla(judge, item, rng=None, **kwargs):
    """Transcribed from ``eval_vanilla`` (multiple_choice.py l. 431-437): ``item['GT']`` is the
    gold letter (``mcq_vanilla_eval`` sets it from the dataset's ``answer``)."""
    res = extract_answer_from_item(judge, item, rng, **kwargs)
    opt, match_log = res['opt'], res['log']
    if opt == item['GT']:
        return dict(hit=1, log=f'Match Log: {match_log}. ')
    return dict(hit=0, log=f'Match Log: {match_log}. ')


def mcq_vanilla_hits(rows, judge=None, rng=None, **kwargs):
    """``mcq_vanilla_eval`` (l. 475-507) without its result cache and MMMU branch: rows are dicts
    with the option columns, ``question``, ``prediction`` and ``answer``; returns the hits in order.
    (``evaluate_heuristic`` first makes every prediction a string: ``str(x)``, l. 293.)"""
    hits = []
    for row in rows:
        item = dict(row)
        item['prediction'] = str(item['prediction'])
        item['GT'] = row['answer']
        hits.append(eval_vanilla(judge, item, rng, **kwargs)['hit'])
    return hits


def report_acc(rows):
    """``report_acc`` (multiple_choice.py l. 77-100) for rows without a ``split``: ``Overall`` (the
    mean hit), then per ``l2-category`` and ``category`` where the rows have them."""
    res = {'Overall': float(np.mean([r['hit'] for r in rows]))}
    for group in ['l2-category', 'category']:
        if not rows or group not in rows[0]:
            continue
        abilities = sorted({r[group] for r in rows})
        for ab in abilities:
            res[ab] = float(np.mean([r['hit'] for r in rows if r[group] == ab]))
    return res


def _grouped(rows, qid2key):
    """The four blocks of ``_3DSRBench.evaluate`` (image_mcq.py l. 2706-2732), one grouping each:
    the rows whose qid is a key, each hit multiplied by the hits of every row mapped to it (a row
    mapped to a key that no row carries raises ``KeyError``, as theirs)."""
    key_set = set(qid2key.values())
    main = [dict(r) for r in rows if r['qid'] in key_set]
    hit_map = {r['qid']: r['hit'] for r in main}
    for r in rows:
        hit_map[qid2key[r['qid']]] *= r['hit']
    for r in main:
        r['hit'] = hit_map[r['qid']]
    return main


def threedsr_settings(rows):
    """Transcribed from ``_3DSRBench.evaluate`` after ``mcq_vanilla_eval`` (image_mcq.py
    l. 2705-2732): ``rows`` are dicts with ``qid``, ``hit`` (and optionally ``category``), sorted by
    ``index`` as theirs; returns ``report_acc`` for ``vanilla``, ``flip_eval``, ``circ_eval`` and
    ``flip_circ_eval``."""
    qids = [r['qid'] for r in rows]
    return {
        'vanilla': report_acc(rows),
        'flip_eval': report_acc(_grouped(rows, {x: x.replace('-flip', '') for x in qids})),
        'circ_eval': report_acc(_grouped(rows, {x: x[:8] if '-flip' not in x else x[:13] for x in qids})),
        'flip_circ_eval': report_acc(_grouped(rows, {x: x[:8] for x in qids})),
    }
