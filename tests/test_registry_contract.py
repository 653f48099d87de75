"""Contract tests generated from the registry: every component resolves, and every scorer keeps the
Scorer contract (one tuple per request, one finite score per word, a JSON-serializable description)."""

import json
import math

import pytest
from causal_helpers import tiny_bpe_gpt2
from mlm_helpers import tiny_wordpiece_bert
from vl_helpers import tiny_vilt

from spatialprobe import registry
from spatialprobe.probes.base import ClozeRequest, Scorer

ENTRIES = [(kind, name) for kind in registry.kinds() for name in registry.names(kind)]


@pytest.mark.parametrize("kind,name", ENTRIES, ids=[f"{k}:{n}" for k, n in ENTRIES])
def test_every_registered_component_resolves(kind, name):
    target = registry.lookup(kind, name)
    if kind == "task":  # tasks are data, not factories
        from spatialprobe.tasks import Task

        assert isinstance(target, Task) and target.name == name
    else:
        assert callable(target)
    assert registry.summaries(kind)[name], "every component says what it is"


@pytest.mark.parametrize("name", registry.names("task"))
def test_every_task_file_is_complete(name):
    """A task's candidates load with every label answered and every template holding its
    placeholders; its built-in data (if any) loads with the task's labels, both labels occurring."""
    from spatialprobe import datasets, tasks
    from spatialprobe.prompts.templates import builtin, check_labels

    task = tasks.get(name)
    candidates = builtin(name)
    assert all(p in t for t in candidates.templates for p in task.placeholders)
    if task.has_builtin_data:
        data = datasets.load(name)
        check_labels(candidates, data)
        assert data.labels == task.labels and data.task == name
        assert {inst.label for inst in data.instances} == set(task.labels)
        assert len(datasets.make_folds(data, 5, 0)) == 5


def test_unknown_names_suggest_close_ones():
    with pytest.raises(registry.UnknownComponent, match="Did you mean 'hf-mlm'"):
        registry.lookup("scorer", "hf-mlmm")


@pytest.fixture(scope="module")
def scorer_args(tmp_path_factory):
    root = tmp_path_factory.mktemp("scorers")
    return {"dummy": {}, "hf-mlm": {"model": str(tiny_wordpiece_bert(root / "bert")), "device": "cpu"},
            "vilt": {"model": str(tiny_vilt(root / "vilt")), "device": "cpu"},
            "hf-causal": {"model": str(tiny_bpe_gpt2(root / "gpt2")), "device": "cpu"}}


@pytest.mark.parametrize("name", registry.names("scorer"))
def test_every_scorer_keeps_the_contract(name, scorer_args):
    scorer = registry.build("scorer", registry.Spec(name, scorer_args[name]))
    assert isinstance(scorer, Scorer)
    requests = [ClozeRequest("An ant is ", " than a bird.", ("larger", "smaller", "bigger")),
                ClozeRequest("A man drives the bus. He is ", " the bus.", ("inside", "beside"))]
    seen = []
    scores = scorer.score(requests, progress=seen.append)
    assert [len(s) for s in scores] == [3, 2]
    assert all(math.isfinite(x) and x <= 0 for s in scores for x in s)  # log-probabilities
    assert sum(seen) == len(requests)  # progress reports increments that add up to the requests
    assert scorer.score(requests) == scores  # deterministic
    description = scorer.describe()
    json.dumps(description)
    assert "weights_sha256" in description and description["model"]
