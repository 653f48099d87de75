"""SpatialEval: the authors' answer extractors and verdict, from ``evals/evaluation.py``.

Source: jiayuww/SpatialEval @d82ba38 ``evals/evaluation.py``: ``remove_redundancy`` (l. 16-18),
``extract_before_is`` (l. 20-23), ``extract_answer_from_text_spatialmap`` (l. 26-138),
``extract_answer_from_text_mazenav`` (l. 140-203), ``extract_answer_from_text_spatialgrid``
(l. 205-255), ``convert_str_to_int`` (l. 257-264), ``evaluate_model_accuracy`` (l. 266-298).
Moved from the transcription in ``tests/test_spatialeval.py`` (which leaves the model-specific
branches out and is None-safe); here the branches are kept and ``model_name`` is what their
``main`` passes, the name read from the output file (``m-NAME_w_reason.jsonl``), never ``None``
there. The default ``""`` is a model with no branch of its own.

Quirks kept:
- the verdict is a substring test on strings: ``str(oracle_answer).lower() in
  str(model_answer).lower()`` - an unparsed reply (``None``) reads "none", which contains "no";
  "90" contains "0" (SpatialEval PR #3);
- number words count, "no" as 0; the earliest number in the reply wins (spatialmap question 2,
  spatialgrid question 0), mazenav returns the first number word in the table's order ("zero",
  "no", "one", ...) found anywhere before any digit pattern;
- a ``ValueError`` (an unsupported spatialmap question id) skips the line but still counts it in
  the denominator (``line_count`` is incremented first): the line counts wrong;
- spatialgrid's ``claude`` branch tests only the last phrase's match (its ``if match`` sits after
  the loop), kept;
- Spatial-Real has no extractor: ``evaluate_model_accuracy`` fails on it (``model_answer`` unbound);
  the authors judge it with GPT-4o (SpatialEval issue #2). ``None`` replies raise for mazenav and
  spatialgrid (``re.search`` on ``None``).
"""

from __future__ import annotations

import re


def remove_redundancy(text):
    """Transcribed (l. 16-18)."""
    return text.replace('**', '').replace('.', '')


def extract_before_is(input_string):
    """Transcribed (l. 20-23)."""
    parts = input_string.split(' is', 1)
    return parts[0].strip()


def convert_str_to_int(var):
    """Transcribed (l. 257-264)."""
    if isinstance(var, str):
        try:
            return int(var)
        except ValueError:
            return var
    return var


NUMBER_MAPPING = {'zero': 0, 'no': 0, 'one': 1, 'two': 2, 'three': 3, 'four': 4,
                  'five': 5, 'six': 6, 'seven': 7, 'eight': 8, 'nine': 9}


def _earliest_number(text):
    """The shared tail of spatialmap question 2 (l. 115-133) and spatialgrid question 0 (l. 235-253)."""
    found_numbers = []
    for text_num, num in NUMBER_MAPPING.items():
        for match in re.finditer(rf'\b{text_num}\b', text, re.IGNORECASE):
            found_numbers.append((match.start(), num))  # noqa: PERF401 - as theirs
    text = re.sub(r'^\n\n\d+\.\s', '', text)
    for match in re.finditer(r'\d+', text):
        found_numbers.append((match.start(), int(match.group(0))))  # noqa: PERF401 - as theirs
    if found_numbers:
        found_numbers.sort(key=lambda x: x[0])
        return found_numbers[0][1]
    return None


def extract_answer_from_text_spatialmap(text, question_id=0, model_name=""):
    """Transcribed from ``extract_answer_from_text_spatialmap`` (l. 26-138)."""
    dirs = ['southeast', 'northeast', 'northwest', 'southwest']
    dir_pattern = rf"\b({'|'.join(dirs)})\b"

    if text is None:
        return None

    if question_id == 0:
        direction_match = re.search(r'\b[A-D]\.\s*(' + '|'.join(dirs) + r')\b', text, re.IGNORECASE)
        if direction_match:
            return direction_match.group(1).lower()
        match = re.search(dir_pattern, text, re.IGNORECASE)
        if match:
            return match.group(1)
        return None

    elif question_id == 1:
        match = re.search(rf'^([\w\s\'’]+?)\s+is\s+(?:located\s+|in\s+the\s+|located\s+to\s+the\s+)({dir_pattern})',
                          text, re.IGNORECASE)
        if match:
            return match.group(1)

        match = re.search(r'\b[A-D]\.\s*(.*)', text)
        if match:
            string = match.group(1)
            string = remove_redundancy(string)
            string = extract_before_is(string)
            return string

        match = re.search(r'\b([ABCD][.,]|[(][abcdABCD][)])\s*(.*?)(?=\sis\b|\.|,|<|$)', text)
        if match:
            answer = match.group(1).strip()
            answer = re.sub(r'[\.,\?!<]+$', '', answer)
            return answer

        match = re.search(rf'Therefore, the object in the {dir_pattern} of [\w\s\'’]+ is ([\w\s\'’]+)', text,
                          re.IGNORECASE)
        if match:
            return match.group(2)

        if 'claude' in model_name.lower():
            match = re.search(rf'^([\w\s\'’]+?)\s+is\s+(to\s+the\s+)({dir_pattern})', text, re.IGNORECASE)
            if match:
                return match.group(1)

        if 'geminiv' in model_name.lower():
            patterns = [
                rf'\*\*Concise Answer:\*\*\n([\w\s\'’]+?)\s+is\s+(?:located\s+|in\s+the\s+|in\s+|located\s+to\s+the\s+)({dir_pattern})',  # noqa: E501
                rf'\*\*Answer:\*\*\s+([\w\s\'’]+?)\s+is\s+in\s+the\s+({dir_pattern})\s+of\s+([\w\s\'’]+)',
                r'\*\*Answer:\*\*\n([\w\s\'’]+)',
                r'\*\*Answer\*\*:\s+([\w\s\'’]+)',
                r'\*\*Answer:\*\*\s+([\w\s\'’]+)'
            ]
            for pattern in patterns:
                match = re.search(pattern, text, re.IGNORECASE)
                if match:
                    return match.group(1)

        if 'gpt4o' in model_name.lower():
            match = re.search(rf'Concise Answer:\s+([\w\s\'’]+?)\s+is\s+(?:located\s+|in\s+the\s+|in\s+|located\s+to\s+the\s+)({dir_pattern})',  # noqa: E501
                              text, re.IGNORECASE)
            if match:
                return match.group(1)

        match = re.search(r'\bis\b\s+(.*?)(?=\.|,|<|$)', text)
        if match:
            answer = match.group(1).strip()
            answer = re.sub(r'[\.,\?!<]+$', '', answer)
            return answer

        return None

    elif question_id == 2:
        match = re.search(r'\b[A-D]\.\s*(\d+)', text)
        if match:
            return convert_str_to_int(match.group(1))
        return _earliest_number(text)

    else:
        raise ValueError(f"Question ID {question_id} is not supported.")


MAZENAV_PATTERNS = {
    0: [r'\bThere are\s*(\d+)\s*right turns\b', r'\bThere is\s*(\d+)\s*right turn\b', r'\b(\d+)\s+right turn(s)?',
        r'answer is\s+(\d+)', r'answer is:\s*\n*\s*(\d+)', r'from S to E is\s+(\d+)', r'Answer:\*\*\s*(\d+)\b'],
    1: [r'\bThere are\s*(\d+)\s*total turns\b', r'\bThere are\s*(\d+)\s*turns\b', r'There is\s*(\d+)\s*turn\b',
        r'There is\s*(\d+)\s*total turn\b', r'answer is\s+(\d+)', r'answer is:\s*\n*\s*(\d+)',
        r'from S to E is\s+(\d+)', r'\btotal of\s+(\d+)\s+turn(s)?', r'Answer:\*\*\s*(\d+)\b',
        r'(\d+)\s+total turn(s)?', r'\b(\d+)\s+turn(s)?'],
}
"""l. 168-191."""


def extract_answer_from_text_mazenav(text, question_id=0, model_name=""):
    """Transcribed from ``extract_answer_from_text_mazenav`` (l. 140-203)."""
    if question_id == 2:
        yes_patterns = [r'\byes\b', r'the answer is yes', r'\"yes\"', r"\'yes\'", r'is the shortest path']
        no_patterns = [r'\bno\b', r'the answer is no', r'\"no\"', r"\'no\'", r'\bnot\b']
        for pattern in yes_patterns:
            if re.search(pattern, text, re.IGNORECASE):
                return "Yes"
        for pattern in no_patterns:
            if re.search(pattern, text, re.IGNORECASE):
                return "No"
    else:
        for text_num, num in NUMBER_MAPPING.items():
            pattern = rf'\b{text_num}\b'
            if re.search(pattern, text, re.IGNORECASE):
                return num
        for pattern in MAZENAV_PATTERNS[question_id]:
            match = re.search(pattern, text, re.IGNORECASE)
            if match:
                return int(match.group(1))
        fallback_match = re.search(r'\d+', text)
        if fallback_match:
            return int(fallback_match.group(0))
    return None


def extract_answer_from_text_spatialgrid(text, question_id=0, model_name=""):
    """Transcribed from ``extract_answer_from_text_spatialgrid`` (l. 205-255)."""
    animals = ['giraffe', 'cat', 'dog', 'elephant', 'rabbit']
    animal_pattern = rf"\b({'|'.join(animals)})\b"

    if question_id >= 1:
        match = re.search(animal_pattern, text, re.IGNORECASE)
        if match:
            return match.group(1)
        return None
    else:
        if 'claude' in model_name.lower():
            specific_phrases = [
                (r'\bthere are\s*(\d+)\s*blocks\b', 1),
                (r'\bthere appear to be\s*(\d+)\s*blocks\b', 1),
                (r'\bcontains\s*(\d+)\s*blocks\b', 1)
            ]
            for phrase_pattern, _group_index in specific_phrases:
                match = re.search(phrase_pattern, text, re.IGNORECASE)
            if match:  # after the loop, as theirs: only the last phrase is tested
                return int(match.group(_group_index))
        return _earliest_number(text)


EXTRACTORS = {"spatialmap": extract_answer_from_text_spatialmap, "mazenav": extract_answer_from_text_mazenav,
              "spatialgrid": extract_answer_from_text_spatialgrid}


def official_correct(reply, record_id, oracle_answer, model_name=""):
    """One line of ``evaluate_model_accuracy`` (l. 272-292): 1 or 0, or ``None`` where they skip a
    ``ValueError`` (the line still counts in the denominator). ``record_id`` like ``spatialmap.3.1``
    (task and question id read from it as theirs)."""
    question_id = int(record_id.split('.')[-1])
    task = record_id.split('.')[0]
    try:
        model_answer = EXTRACTORS[task](reply, question_id, model_name)
        ref_ans = str(oracle_answer).lower()
        model_answer = str(model_answer).lower()
        return int(ref_ans.lower() in model_answer.lower())
    except ValueError:
        return None


def accuracy(verdicts):
    """``evaluate_model_accuracy``'s return: correct / lines, a skipped line (``None``) counting 0."""
    return sum(v or 0 for v in verdicts) / len(verdicts) if verdicts else 0
