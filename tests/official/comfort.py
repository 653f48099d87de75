"""COMFORT: the sweep metrics of ``comfort_utils``, with the 37th point dropped as theirs.

Source: sled-group/COMFORT @f30830d
- ``comfort_utils/accuracy_metric.py`` ``accuracy_metric`` (l. 5-75);
- ``comfort_utils/symmetry_metric.py`` ``normalize_data`` (l. 5-22), ``spatial_symmetry_metric``
  (l. 25-53);
- ``comfort_utils/smoothness_metric.py`` ``low_pass_filter`` (l. 11-16), ``normalize_data``
  (l. 19-23), ``smoothness_lowpass_metric`` (l. 83-121);
- ``comfort_utils/std_metric.py`` ``calculate_standard_deviation`` (l. 23-40);
- ``comfort_utils/convention_metric.py`` (l. 57-78): the per-image accuracy is
  ``accuracy_metric(..., mode="acc", normalize=False)``.

A sweep is 37 datapoints ``(angle, {"Yes": p, ...})``, angle 0°, 10°, ..., 360°. How the 37th is
dropped: every metric asserts ``len == 37`` and then keeps ``data[:-1]`` - 36 points, the 360° image
(a repeat of 0°) never scored. In ``accuracy_metric`` the slice comes after the optional
normalisation (over all 37 points: the 37th still moves the min and max) and in its error modes the
sum over 36 points is divided by ``len(data)`` = 37. ``accuracy_metric(mode="acc")``: gold 1 where
cos(angle + shift) > 0 (|cos| < 1e-10 is 0, so 90° and 270° are "no"), prediction 1 where
P(yes) > 0.5 (exactly 0.5 is "no"); the mean over the 36 points.
"""

from __future__ import annotations

from copy import deepcopy

import numpy as np

FOR_SHIFT = {"camera": 0, "addressee": 90, "rotated_camera": 180, "rotated_addressee": 270,
             "object_facing_right": 90, "object_facing_left": 270}
"""accuracy_metric.py l. 6-13."""


def normalize_data(data, epsilon=1e-6):
    """Transcribed from ``normalize_data`` (symmetry_metric.py l. 5-22): min-max per token over all
    points; a flat token divides by ``epsilon``."""
    tokens = data[0][1].keys()
    normalized = deepcopy(data)
    for token in tokens:
        max_likelihood = max([dp[1][token] for dp in data])
        min_likelihood = min([dp[1][token] for dp in data])
        likelihood_range = max_likelihood - min_likelihood
        if likelihood_range == 0:
            likelihood_range = epsilon
        for i in range(len(data)):
            normalized[i][1][token] = (data[i][1][token] - min_likelihood) / likelihood_range
    return normalized


def accuracy_metric(data, config, FoR, mode="normalize", normalize=True):
    """Transcribed from ``accuracy_metric`` (accuracy_metric.py l. 5-75)."""
    assert FoR in FOR_SHIFT, "FoR must be one of camera, object, addressee, rotated_camera"
    assert config["relation"] in ["infrontof", "behind", "totheleft", "totheright"], \
        "relation must be one of infrontof, behind, totheleft, totheright"

    this_data = normalize_data(data) if normalize else data
    assert len(this_data) == 37, f"Data length should be 37, got: {len(this_data)}"
    if len(this_data) == 37:
        this_data = this_data[:-1]
    if mode != "acc":
        error = 0
        for angle, likelihoods in this_data:
            shift = FOR_SHIFT[FoR]
            cosine = np.cos((angle + shift) / 180 * np.pi)
            if np.abs(cosine) < 1e-10:
                cosine = 0
            if mode == "normalize":
                gt = (cosine + 1) / 2
            elif mode == "clipped":
                gt = np.clip(cosine, 0, 1)
            elif mode == "thresholding":
                gt = np.zeros_like(cosine)
                gt[cosine > 0] = 1
            else:
                raise ValueError("Invalid mode")
            error += (gt - likelihoods["Yes"]) ** 2
        return np.sqrt(error / len(data))
    acc_list = []
    for angle, likelihoods in this_data:
        shift = FOR_SHIFT[FoR]
        cosine = np.cos((angle + shift) / 180 * np.pi)
        if np.abs(cosine) < 1e-10:
            cosine = 0
        gt = 1 if cosine > 0 else 0
        pred = 1 if likelihoods["Yes"] > 0.5 else 0
        acc_list.append(1 if pred == gt else 0)
    return sum(acc_list) / len(acc_list)


def spatial_symmetry_metric(data, token="Yes", normalize=True):
    """Transcribed from ``spatial_symmetry_metric`` (symmetry_metric.py l. 25-53)."""
    if normalize:
        data = normalize_data(data)
    if len(data) == 37:
        data = data[:-1]
    n = len(data)
    assert n % 2 == 0, "data length should be even"
    middle_index = n // 2
    symmetry_score = 0
    for i in range(1, middle_index):
        opposite_index = n - i
        difference = data[i][1][token] - data[opposite_index][1][token]
        symmetry_score += difference ** 2
    return np.sqrt(symmetry_score / (len(data) - 2) * 2)


def _min_max(data):
    """``normalize_data`` of smoothness_metric.py (l. 19-23): a flat sweep divides by zero (NaN)."""
    return (data - np.min(data)) / (np.max(data) - np.min(data))


def smoothness_lowpass_metric(data):
    """Transcribed from ``smoothness_lowpass_metric`` (smoothness_metric.py l. 83-121): order-5
    Butterworth low-pass, cutoff 100 Hz at fs 1000, ``filtfilt``; RMSE of the normalised P(yes)."""
    from scipy.signal import butter, filtfilt

    assert len(data) == 37, f"Data length should be 37, got: {len(data)}"
    if len(data) == 37:
        data = data[:-1]
    yes_data = _min_max(np.array([sub_data[1]["Yes"] for sub_data in data]))
    b, a = butter(5, 100 / (0.5 * 1000), btype="low", analog=False)
    filtered_yes_data = filtfilt(b, a, yes_data)
    return np.sqrt(np.mean((np.array(yes_data) - np.array(filtered_yes_data)) ** 2))


def calculate_standard_deviation(variations):
    """Transcribed from ``calculate_standard_deviation`` (std_metric.py l. 23-40), with
    ``results[variation]["positive"]`` passed as a list of sweeps: each normalised over its 37
    points, then cut to 36; the root mean squared deviation from the variations' mean curve."""
    all_yes_data = []
    for sweep in variations:
        variation_yes_data = _min_max(np.array([datapoint[1]["Yes"] for datapoint in sweep]))
        assert len(variation_yes_data) == 37, f"Data length should be 37, got: {len(variation_yes_data)}"
        if len(variation_yes_data) == 37:
            variation_yes_data = variation_yes_data[:-1]
        all_yes_data.append(variation_yes_data)
    combined = np.stack(all_yes_data, axis=0)
    mean = np.mean(combined, axis=0)
    return np.sqrt(np.mean(np.square(combined - mean)))
