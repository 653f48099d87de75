"""What'sUp: the authors' caption ranking and individual / pair / set accuracy.

Source: amitakamath/whatsup_vlms @7c1f255 ``dataset_zoo/aro_datasets.py``: ``Controlled_Images.
__init__`` (its ``eval_dict`` keys, l. 382-422) and ``Controlled_Images.evaluate_scores``
(l. 449-518). Copied from the transcription in ``tests/test_whatsup.py`` and completed with the
scores tuple, the preposition bookkeeping (which can raise) and the per-preposition records.

The "reader" is a ranking: the prediction is ``np.argmax`` over the image's caption scores and the
first caption is the right one. Quirks kept:
- ties go to the first maximum, so a tie involving caption 0 counts right (an all-equal row is
  right);
- ``eval_dict`` is keyed by (first word, last word) of the image file name and filled by the second
  word; a repeated image overwrites its slot, a missing image leaves 0 (its pair and set wrong);
- pair accuracy = pairs with both relations right / (N/2), set = all four right / (N/4), N the
  number of images (not of object pairs);
- the preposition bookkeeping takes ``prep[0]`` of the predicted caption's words intersected with
  {on, under, front, behind, left, right}: a caption with none of them raises ``IndexError``.
"""

from __future__ import annotations

import numpy as np

SLOTS = {'A': ('left', 'right', 'on', 'under'), 'B': ('left', 'right', 'in-front', 'behind')}


def _key(d):
    name = d['image_path'].split('/')[-1]
    return (name.split('_')[0], name.split('_')[-1][:-5])


def all_prepositions(dataset, subset):
    """``Controlled_Images.__init__``'s ``all_prepositions`` (l. 384-414)."""
    out = []
    for d in dataset:
        if 'left_of' in d['image_path']:
            out.append('left_of')
        elif 'right_of' in d['image_path']:
            out.append('right_of')
        elif subset == 'A':
            out.append('on' if '_on_' in d['image_path'] else 'under')
        else:
            out.append('in-front_of' if '_in-front_of_' in d['image_path'] else 'behind')
    return out


def evaluate_scores(dataset, scores, subset):
    """Transcribed from ``Controlled_Images.evaluate_scores`` (l. 449-518): ``dataset`` the
    annotation list (``image_path``, ``caption_options``), ``scores`` N x 1 x K (or a ``(t2i, i2t)``
    tuple, ``i2t`` used). Returns ``(individual, pair, set)`` in percent and the per-preposition
    records."""
    eval_dict = {_key(d): dict.fromkeys(SLOTS[subset], 0) for d in dataset}
    pred_dict = {_key(d): dict.fromkeys(SLOTS[subset], '') for d in dataset}
    scores_i2t = scores[1] if isinstance(scores, tuple) else scores

    preds = np.argmax(np.squeeze(scores_i2t, axis=1), axis=-1)
    correct_mask = (preds == 0)
    accuracy = np.mean(correct_mask)

    prepositions = ['on', 'under', 'front', 'behind', 'left', 'right']
    prep_counts = {p: dict.fromkeys(prepositions, 0) for p in prepositions}
    for i, d in enumerate(dataset):
        prep = list(set(prepositions).intersection(set(d['caption_options'][preds[i]].split())))
        gold_prep = list(set(prepositions).intersection(set(d['caption_options'][0].split())))
        prep = prep[0]
        gold_prep = gold_prep[0]
        prep_counts[gold_prep][prep] += 1
        pred_dict[_key(d)][d['image_path'].split('/')[-1].split('_')[1]] = prep
    for d, correct in zip(dataset, correct_mask):  # noqa: B905 - as theirs
        eval_dict[_key(d)][d['image_path'].split('/')[-1].split('_')[1]] = correct

    pair_correct = 0
    set_correct = 0
    for correct_dict in eval_dict.values():
        if correct_dict['left'] and correct_dict['right']:
            pair_correct += 1
        if subset == 'A':
            if correct_dict['on'] and correct_dict['under']:
                pair_correct += 1
        else:
            if correct_dict['in-front'] and correct_dict['behind']:
                pair_correct += 1
        if sum(correct_dict.values()) == 4:
            set_correct += 1
    pair_accuracy = pair_correct * 100 / (len(dataset) / 2)
    set_accuracy = set_correct * 100 / (len(dataset) / 4)

    preps = np.array(all_prepositions(dataset, subset))
    records = []
    for p in np.unique(preps):
        mask = preps == p
        if mask.sum() == 0:
            continue
        records.append({"Preposition": p, "Accuracy": correct_mask[mask].mean(), "Count": mask.sum(),
                        "Dataset": f"Controlled Images - {subset}"})
    return (accuracy * 100, pair_accuracy, set_accuracy), records
