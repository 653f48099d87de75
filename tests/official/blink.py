"""BLINK: the authors' answer extraction (``analyze_answer``) and scoring (``eval_prediction``).

Source: zeyofu/BLINK_Benchmark @2d6a779
- ``eval/test_benchmark.py`` ``analyze_answer`` (l. 12-44), called per item with
  ``all_choices = ['(A)', '(B)', '(C)', '(D)', '(E)'][:len(choices)]`` (l. 70-73); the per-task
  accuracy of ``eval_task`` (l. 139-150) compares ``d['answer'] == d['prediction']``;
- ``eval/multiple_choice.py`` ``match_multiple_choice`` (l. 39-55): the GPT-3.5-turbo fallback
  (``build_prompt`` l. 9-36); after 10 failed calls it returns ``'(Z) Failed to get multiple
  choice'``;
- ``eval/evaluate.py`` ``eval_prediction`` (l. 28-65): exact string equality of the stored
  prediction with the gold ``"(X)"``, per subtask, and ``Total`` = the unweighted mean over all 14
  subtasks listed in ``subtasks`` (l. 81-83).

The reader: the reply's whitespace-separated words are intersected with ``"(A)" ... "(E)"`` (only
the parenthesised form counts as a word):
- the reply exactly "A".."E" -> "(A)".."(E)"; exactly "(A)".."(E)" -> itself (no strip: "B\\n" or
  " B" is not "B");
- exactly one "(X)" word in the reply, or in its last paragraph (after the last blank line) -> that
  one, the last paragraph's first: "(A) no ... \\n\\nSo (B)" -> "(B)";
- otherwise (no "(X)" word - "B", "B.", "(B).", "The answer is B", option text - or several) ->
  GPT-3.5-turbo's raw reply to the matching prompt, stored as the prediction as it is (so a judge
  reply "(B) Point B" is not equal to "(B)"). With no judge: ``judge=None`` here returns what their
  ``match_multiple_choice`` returns when every call fails, ``'(Z) Failed to get multiple choice'``
  (without an OPENAI_API_KEY their module fails at import instead: ``OpenAI()`` needs a key).
- any exception (a ``None`` reply, more than five options) -> ``None`` (``except: pass``).
"""

from __future__ import annotations

JUDGE_FAILED = '(Z) Failed to get multiple choice'
"""``match_multiple_choice``'s return after ``retry_limit`` = 10 failed calls (multiple_choice.py l. 55)."""

CHOICES = ['(A)', '(B)', '(C)', '(D)', '(E)']


def build_prompt(question, options, prediction):
    """Transcribed from ``build_prompt`` (multiple_choice.py l. 9-36): the judge's prompt."""
    tmpl = (
        "You are an AI assistant who will help me to match an answer with several options of a single-choice question. "
        "You are provided with a question, several options, and an answer, and you need to find which option is most similar to the answer. "  # noqa: E501
        "If the answer says things like refuse to answer, I'm sorry cannot help, etc., output (Z)"
        "If the meaning of all options are significantly different from the answer, or the answer does not select any option, output (Z)"  # noqa: E501
        "Your should output one of the choices, (A),(B),(C),(D),(E) (if they are valid options), or (Z)\n"
        "Example 1: \n"
        "Question: Which point is closer to the camera?\nSelect from the following choices.\nOptions: (A) Point A\n(B) Point B\n(Z) Failed\nAnswer: Point B, where the child is sitting, is closer to the camera.\nYour output: (B)\n"  # noqa: E501
        "Example 2: \n"
        "Question: Which point is closer to the camera?\nSelect from the following choices.\nOptions: (A) Point A\n(B) Point B\n(Z) Failed\nAnswer: I'm sorry, but I can't assist with that request.\nYour output: (Z)\n"  # noqa: E501
        "Example 3: \n"
        "Question: Which point is corresponding to the reference point?\nSelect from the following choices.\nOptions: (A) Point A\n(B) Point B\n(Z) Failed\nAnswer:The reference point (REF) on the first image is at the tip of the pot, which is the part used to Poke if the pots were used for that action. Looking at the second image, we need to find the part of the object that would correspond to poking.\n(A) Point A is at the tip of the spoon's handle, which is not used for poking.\n(B) Point B is at the bottom of the spoon, which is not used for poking.\n(C) Point C is on the side of the pspoonot, which is not used for poking.\n(D) Point D is at the tip of the spoon, which is not used for poking.\n\nTherefore, there is no correct answer in the choices\nYour output: (Z)\n"  # noqa: E501
        "Example 4: \n"
        "Question: {}?\nOptions: {}\n(Z) Failed\nAnswer: {}\nYour output: "
    )
    return tmpl.format(question, options, prediction)


def match_multiple_choice(question, options, prediction, judge=None):
    """``match_multiple_choice`` (multiple_choice.py l. 39-55) with the OpenAI call replaced by
    ``judge`` (a callable ``prompt -> str``); ``None`` behaves as ten failed calls."""
    prompt = build_prompt(question, options, prediction)
    if judge is None:
        return JUDGE_FAILED
    return judge(prompt)


def analyze_answer(d, gpt_answer, all_choices, judge=None):
    """Transcribed from ``analyze_answer`` (test_benchmark.py l. 12-44): ``d`` has ``question`` and
    ``choices``; ``all_choices`` is ``['(A)', ...][:len(d['choices'])]``."""
    try:
        intersect = list(set(all_choices).intersection(set(gpt_answer.split())))
        intersect_last = list(set(all_choices).intersection(set(gpt_answer.split('\n\n')[-1].split())))
        if gpt_answer in ["A", "B", "C", "D", "E"]:
            prediction = "(" + gpt_answer + ")"
        elif gpt_answer in ['(A)', '(B)', '(C)', '(D)', '(E)']:
            prediction = gpt_answer
        elif (len(intersect) != 1 and len(intersect_last) != 1) or len(intersect) < 1:
            choices = ['(A)', '(B)', '(C)', '(D)', '(E)']
            options = '\n'.join([f'{choices[i]} {d["choices"][i]}' for i in range(len(d['choices']))])
            extracted_answer = match_multiple_choice(f"{d['question']}\nSelect from the following choices", options,
                                                     gpt_answer, judge)
            prediction = extracted_answer
        else:
            if len(intersect_last) == 1:
                intersect = intersect_last
                gpt_answer = gpt_answer.split('\n\n')[-1]
            prediction = intersect[0]
        return prediction
    except Exception:
        return None


def read(reply, d, judge=None):
    """The prediction stored for one item (``query_model`` l. 70-73)."""
    return analyze_answer(d, reply, CHOICES[:len(d['choices'])], judge)


def eval_prediction(answers, predictions, subtasks, split='val'):
    """Transcribed from ``eval_prediction`` (evaluate.py l. 28-65) with the two JSON files passed in:
    ``answers`` {idx: "(X)"}, ``predictions`` {idx: prediction}; idx like ``val_Spatial_Relation_1``.
    Returns the per-subtask accuracies and ``Total`` (their mean over ``subtasks``; a subtask with
    no item divides by zero, as theirs)."""
    accu_by_task = {}
    task_numbers = {}
    for task_name in subtasks:
        accu_by_task[task_name] = 0
        task_numbers[task_name] = 0
    for idx, gold_answer in answers.items():
        task = '_'.join(idx.split(split)[1][1:].split('_')[:-1])
        task_numbers[task] += 1
        if idx in predictions and predictions[idx] == gold_answer:
            accu_by_task[task] += 1

    average_accu = 0
    for task in subtasks:
        accu_by_task[task] = accu_by_task[task] / task_numbers[task]
        average_accu += accu_by_task[task]
    average_accu = average_accu / len(subtasks)
    accu_by_task["Total"] = average_accu
    return accu_by_task


SUBTASKS = ['Visual_Similarity', 'Counting', 'Relative_Depth', 'Jigsaw', 'Art_Style', 'Functional_Correspondence',
            'Semantic_Correspondence', 'Spatial_Relation', 'Object_Localization', 'Visual_Correspondence',
            'Multi-view_Reasoning', 'Relative_Reflectance', 'Forensic_Detection', 'IQ_Test']
"""evaluate.py l. 81-83: all 14, the denominator of ``Total``."""
