"""What the blind audit (:mod:`spatialprobe.audit.blind`) reads of an item and fits on it: the
features of each option, computed without the gold and only from what a reader of the question and
options sees, and the scikit-learn pipelines that classify options as gold or not."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from spatialprobe.benchmarks.base import SourceItem
from spatialprobe.errors import UsageError

CLASSIFIERS = ("logistic", "forest")
"""The text-only classifiers, by name (:func:`classifier`)."""
FeatureFn = Callable[[SourceItem, int], Mapping[str, Any]]
"""(item, option index) -> the option's features (names -> number, or string for one-hot)."""


def _stated(value: str, text: str) -> bool:
    """Whether ``value`` occurs in ``text`` as whole words, case ignored."""
    return bool(value.strip()) and re.search(r"(?<!\w)" + re.escape(value.strip()) + r"(?!\w)", text,
                                             re.IGNORECASE) is not None


def relation_of(item: SourceItem) -> str:
    """The item's relation where its question states it (its options blanked) and it is none of
    the item's answers (labels, options): its ``relation`` field, else its fact's; else ``-``.
    Otherwise it is the answer's (the size task's fact ``(ant, smaller, bird)``, whose ``larger``
    the question also states; What'sUp's relation of the image; a posrel item's ``inside`` among
    options listed in the question): metadata that names the gold, never a feature."""
    value = str(item.fields.get("relation") or (item.fact[1] if item.fact else None) or "")
    answers = {str(v).strip().casefold() for v in (*item.labels, *item.options)}
    if value.strip().casefold() in answers:  # "larger" is stated in "Which is larger: ...?" and is a label
        return "-"
    return value if _stated(value, _blank(item.question, item.options, "O")) else "-"


def objects_of(item: SourceItem) -> list[str]:
    """The item's objects a reader sees: its fact's subject and object, then ``objects``, those
    the question or an option names (not an image's file name, not metadata)."""
    shown = " ".join((item.question, *item.options))
    named = [*((item.fact[0], item.fact[2]) if item.fact else ()), *item.objects]
    return [str(o) for o in dict.fromkeys(named) if o and _stated(str(o), shown)]


def object_of(item: SourceItem) -> str:
    """The item's first object a reader sees (:func:`objects_of`), else ``-``."""
    seen = objects_of(item)
    return seen[0] if seen else "-"


def _blank(text: str, words: Sequence[str], mark: str) -> str:
    for word in sorted({w for w in words if w and w.strip()}, key=len, reverse=True):
        text = re.sub(r"(?<!\w)" + re.escape(word) + r"(?!\w)", mark, text, flags=re.IGNORECASE)
    return text


def template(item: SourceItem) -> str:
    """The question with its options' texts blanked as ``O`` and its objects' names as ``X``
    (the words that differ from item to item), white space collapsed."""
    objects = [*item.objects, *((item.fact[0], item.fact[2]) if item.fact else ())]
    text = _blank(_blank(item.question, item.options, "O"), [str(o) for o in objects], "X")
    return " ".join(text.split())


def option_features(item: SourceItem, index: int) -> dict[str, Any]:
    """The features of option ``index`` of ``item``, computed without its gold (see the module)."""
    label = item.labels[index]
    crossed = {"position": index, "relation": relation_of(item), "template": template(item),
               "options": len(item.options)}
    text = " ".join(item.options[index].lower().split())
    out: dict[str, Any] = {"option": label, "text": text, "length": len(item.options[index].split())}
    out.update({f"option word={word}": 1 for word in dict.fromkeys(re.findall(r"[a-z]+", text))})
    out.update({f"{label}|{name}={value}": 1 for name, value in crossed.items()})
    out.update({f"{label}|object{k}={obj}": 1 for k, obj in enumerate(objects_of(item))})
    words = dict.fromkeys(re.findall(r"[a-z]+", str(crossed["template"]).lower()))
    out.update({f"{label}|word={word}": 1 for word in words})
    return out


def _frequency_class() -> type:
    from sklearn.base import BaseEstimator, TransformerMixin

    class AnswerFrequency(TransformerMixin, BaseEstimator):
        """Two columns: the share of training rows with the same ``option`` label, and with the
        same option ``text``, that are gold (their frequencies as the answer in the training
        folds; 0 for one never seen). Where labels are letters, the text's is the answer prior."""

        KEYS = ("option", "text")

        def fit(self, X: Sequence[Mapping[str, Any]], y: Sequence[int]) -> AnswerFrequency:
            self.frequency_ = {}
            for key in self.KEYS:
                seen: Counter[str] = Counter()
                gold: Counter[str] = Counter()
                for row, target in zip(X, y, strict=True):
                    seen[row.get(key, "")] += 1
                    gold[row.get(key, "")] += int(target)
                self.frequency_[key] = {value: gold[value] / seen[value] for value in seen}
            return self

        def transform(self, X: Sequence[Mapping[str, Any]]) -> np.ndarray:
            return np.array([[self.frequency_[key].get(row.get(key, ""), 0.0) for key in self.KEYS] for row in X])

        def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
            return np.array(["answer frequency", "answer frequency of the text"], dtype=object)

    return AnswerFrequency


AnswerFrequency = _frequency_class()


def classifier(name: str, seed: int = 0) -> Any:
    """The scikit-learn pipeline ``name`` (``logistic`` or ``forest``): one-hot features
    (``DictVectorizer``) beside the answer frequency, then the classifier."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion, Pipeline

    models = {"logistic": lambda: LogisticRegression(max_iter=2000),
              # leaves of at least 5 option rows: fully grown trees memorise object names seen once or
              # twice (a planted 81.75 % shortcut scored 76.5 with leaves of 1, 81.75 with 3, 5 or 10)
              "forest": lambda: RandomForestClassifier(n_estimators=100, min_samples_leaf=5, random_state=seed,
                                                       n_jobs=1)}
    if name not in models:
        raise UsageError(f"--classifier must be one of {', '.join(CLASSIFIERS)}; got {name!r}.")
    features = FeatureUnion([("onehot", DictVectorizer()), ("frequency", AnswerFrequency())])
    return Pipeline([("features", features), ("model", models[name]())])
