# ruff: noqa: SIM108, RUF015  (the peers' lines, transcribed as they are written)
"""The peers' judging lines, transcribed (variable names and control flow kept; input plumbing
such as file reading, spaCy and torch replaced by plain arguments), for tests/test_judge_modes.py,
test_judge_heim.py and test_judge_rules_3d.py to hold ``--mode reference`` against.

* xxxiaol/spatial-commonsense @ 5e4d506233bcc842c17e046e91e90f7f33ee2530:
  ``code/size/image_probing_box.py``, ``code/height/image_probing_box.py``,
  ``code/posrel/image_probing_box.py`` (the loop over ``objects_all[...]`` and the rule);
* stanford-crfm/helm @ 63754d05db6f874e41a395880fb573890a13e791:
  ``src/helm/benchmark/metrics/image_generation/detectors/vitdet.py`` ``compute_score_spatial``
  (torch masks written as list comprehensions over the instances);
* Karine-Huang/T2I-CompBench @ 1b7094991a57f3c22abdd4f6e8ba6c1a15517073:
  ``UniDet_eval/3D_spatial_eval.py`` (``determine_position`` and ``main``'s object lookup and
  score; the depth map normalisation of its depth pass), ``UniDet_eval/2D_spatial_eval.py``
  (``obj.index(obj1)``).

Detections are the released layout: dicts with ``class``, ``conf``, ``rect`` (x1, y1, x2, y2).
"""

from __future__ import annotations

import numpy as np

# ---- spatial-commonsense: size and height ---------------------------------------------------------


def release_scale(objects, i, depth_map, what):
    """One image of code/size (what="size") or code/height (what="height") image_probing_box.py:
    1 / 0, or 'n' (not identified)."""
    size_a = 0
    size_b = 0
    conf_a = 0
    conf_b = 0
    for j in objects:
        if j['class'] == i['obj_a'] and j['conf'] > conf_a:
            conf_a = j['conf']
            x1, y1, x2, y2 = j['rect']
            size_a = (x2 - x1) * (y2 - y1) if what == "size" else y2 - y1
            coordinate_a = [int(x1), int(y1), int(x2), int(y2)]

        if j['class'] == i['obj_b'] and j['conf'] > conf_b:
            conf_b = j['conf']
            x1, y1, x2, y2 = j['rect']
            size_b = (x2 - x1) * (y2 - y1) if what == "size" else y2 - y1
            coordinate_b = [int(x1), int(y1), int(x2), int(y2)]

    if size_a > 0 and size_b > 0:
        x1, y1, x2, y2 = coordinate_a
        depth_a = np.mean(depth_map[y1:y2, x1:x2])
        x1, y1, x2, y2 = coordinate_b
        depth_b = np.mean(depth_map[y1:y2, x1:x2])

        if what == "size":
            size_a = size_a * (depth_a * depth_a)
            size_b = size_b * (depth_b * depth_b)
        else:
            size_a = size_a * depth_a
            size_b = size_b * depth_b

        if size_a > size_b:
            return 1
        else:
            return 0
    return 'n'


# ---- spatial-commonsense: posrel ----------------------------------------------------------------

RELEASE_LABELS = {0: 'inside', 1: 'above', 2: 'below', 3: 'beside'}  # its labels={'inside':0, ...}


def release_posrel(objects, i):
    """One image of code/posrel/image_probing_box.py: the label, or 'n'."""
    box_a = None
    box_b = None
    conf_a = 0
    conf_b = 0
    for j in objects:
        if j['class'] == i['obj_a'] and j['conf'] > conf_a:
            conf_a = j['conf']
            box_a = j['rect']
        if j['class'] == i['obj_b'] and j['conf'] > conf_b:
            conf_b = j['conf']
            box_b = j['rect']
    if box_a is not None and box_b is not None:
        ax1, ay1, ax2, ay2 = box_a
        bx1, by1, bx2, by2 = box_b
        cx1 = (ax1 + ax2) / 2
        cy1 = (ay1 + ay2) / 2
        cx2 = (bx1 + bx2) / 2
        cy2 = (by1 + by2) / 2
        if (ax1 >= bx1 and ax2 <= bx2) and (ay1 >= by1 and ay2 <= by2):
            return RELEASE_LABELS[0]  # inside
        elif cy1 > cy2 and cy1 - cy2 >= np.abs(cx1 - cx2):
            return RELEASE_LABELS[1]  # above
        elif cy1 < cy2 and cy2 - cy1 >= np.abs(cx1 - cx2):
            return RELEASE_LABELS[2]  # below
        elif np.abs(cy2 - cy1) < np.abs(cx1 - cx2):
            return RELEASE_LABELS[3]  # beside
    return 'n'


# ---- HELM / HEIM ---------------------------------------------------------------------------------

def heim_spatial(objects, gt_class_name_1, gt_class_name_2, relation):
    """vitdet.py compute_score_spatial; ``relation`` is its word (left, right, above, below)."""
    pred_classes = [j['class'] for j in objects]
    if len(objects) == 0:
        correct = 0
    else:
        pred_count_1 = sum(c == gt_class_name_1 for c in pred_classes)
        pred_count_2 = sum(c == gt_class_name_2 for c in pred_classes)
        if pred_count_1 != 1 or pred_count_2 != 1:
            correct = 0
        else:
            x11, y11 = [j['rect'] for j in objects if j['class'] == gt_class_name_1][0][:2]
            x21, y21 = [j['rect'] for j in objects if j['class'] == gt_class_name_2][0][:2]

            x_diff = x11 - x21
            y_diff = y11 - y21

            if gt_class_name_1 == gt_class_name_2:
                if abs(x_diff) > abs(y_diff):
                    if relation in ["left", "right"]:
                        correct = 1
                    else:
                        correct = 0
                else:
                    if relation in ["above", "below"]:
                        correct = 1
                    else:
                        correct = 0
            else:
                if abs(x_diff) > abs(y_diff):
                    if x11 < x21:
                        pred_rel = "right"
                    else:
                        pred_rel = "left"
                else:
                    if y11 > y21:
                        pred_rel = "above"
                    else:
                        pred_rel = "below"

                if relation == pred_rel:
                    correct = 1
                else:
                    correct = 0
    return correct


# ---- T2I-CompBench++ 3-D -------------------------------------------------------------------------

def t2i_normalise(depth):
    """Its depth pass: ``depth = (depth - depth.min()) / (depth.max() - depth.min())`` of DPT's
    disparity (here the disparity of the depth adapters' depth, 1 / depth)."""
    depth = 1.0 / np.asarray(depth, dtype=np.float64)
    return (depth - depth.min()) / (depth.max() - depth.min())


def determine_position_3d(locality, box1, box2, depth_map=None, iou_threshold_3d=0.5):
    """determine_position's IoU and its 3-D branches."""
    x_overlap = max(0, min(box1['x_max'], box2['x_max']) - max(box1['x_min'], box2['x_min']))
    y_overlap = max(0, min(box1['y_max'], box2['y_max']) - max(box1['y_min'], box2['y_min']))
    intersection = x_overlap * y_overlap
    box1_area = (box1['x_max'] - box1['x_min']) * (box1['y_max'] - box1['y_min'])
    box2_area = (box2['x_max'] - box2['x_min']) * (box2['y_max'] - box2['y_min'])
    union = box1_area + box2_area - intersection
    iou = intersection / union

    score = 0
    if locality == 'in front of':
        depth_A = depth_map[int(box1["x_min"]): int(box1["x_max"]), int(box1["y_min"]):int(box1["y_max"])]
        depth_B = depth_map[int(box2["x_min"]): int(box2["x_max"]), int(box2["y_min"]):int(box2["y_max"])]
        mean_depth_A = depth_A.mean()
        mean_depth_B = depth_B.mean()

        depth_diff = mean_depth_A - mean_depth_B
        if iou > iou_threshold_3d:
            if (depth_diff > 0):
                score = 1
        elif iou < iou_threshold_3d and iou > 0:
            if (depth_diff > 0):
                score = iou / iou_threshold_3d
            else:
                score = 0
        else:
            score = 0
    elif locality == 'behind' or locality == 'hidden':
        depth_A = depth_map[int(box1["x_min"]): int(box1["x_max"]), int(box1["y_min"]):int(box1["y_max"])]
        depth_B = depth_map[int(box2["x_min"]): int(box2["x_max"]), int(box2["y_min"]):int(box2["y_max"])]
        mean_depth_A = depth_A.mean()
        mean_depth_B = depth_B.mean()

        depth_diff = mean_depth_A - mean_depth_B
        if iou > iou_threshold_3d:
            if (depth_diff < 0):
                score = 1
        elif iou < iou_threshold_3d and iou > 0:
            if (depth_diff < 0):
                score = iou / iou_threshold_3d
            else:
                score = 0
        else:
            score = 0
    else:
        score = 0
    return score


def t2i_3d_image(objects, obj1, obj2, locality, depth):
    """main's score of one image: its objects found in the detector's list, 0.25 x each found
    object's score, + half the 3-D position score when both are found. Returns (score, the
    position score for ``locality`` or None when an object is missing)."""
    obj = [j['class'] for j in objects]
    obj_bounding_box = [j['rect'] for j in objects]
    instance_score = [j['conf'] for j in objects]
    obj_str = " ".join(obj)
    obj1_pos = None
    obj2_pos = None
    if obj1 in obj_str and obj2 in obj_str:
        for i in range(len(obj)):
            if obj1 in obj[i]:
                obj1_pos = i
            if obj2 in obj[i]:
                obj2_pos = i
            if (obj1_pos is not None) and (obj2_pos is not None):
                break
        obj1_bb = obj_bounding_box[obj1_pos]
        obj2_bb = obj_bounding_box[obj2_pos]
        box1, box2 = {}, {}
        box1["x_min"] = obj1_bb[0]
        box1["y_min"] = obj1_bb[1]
        box1["x_max"] = obj1_bb[2]
        box1["y_max"] = obj1_bb[3]
        box2["x_min"] = obj2_bb[0]
        box2["y_min"] = obj2_bb[1]
        box2["x_max"] = obj2_bb[2]
        box2["y_max"] = obj2_bb[3]
        position = determine_position_3d(locality, box1, box2, depth_map=depth)
        score = 0.25 * instance_score[obj1_pos] + 0.25 * instance_score[obj2_pos]
        score += position / 2
        return score, position
    elif obj1 in obj_str:
        for i in range(len(obj)):
            if obj1 in obj[i]:
                obj1_pos = i
                break
        return 0.25 * instance_score[obj1_pos], None
    elif obj2 in obj_str:
        for i in range(len(obj)):
            if obj2 in obj[i]:
                obj2_pos = i
                break
        return 0.25 * instance_score[obj2_pos], None
    return 0, None


def t2i_2d_boxes(objects, obj1, obj2):
    """2D_spatial_eval.py: ``obj1_pos = obj.index(obj1)``: the first box of each class listed."""
    obj = [j['class'] for j in objects]
    if obj1 in obj and obj2 in obj:
        return objects[obj.index(obj1)]['rect'], objects[obj.index(obj2)]['rect']
    return None
