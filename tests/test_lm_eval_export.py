"""The lm-eval export: what lm-evaluation-harness's own task loader reads from it (exact contexts,
choices and gold indices), the CLI's refusals, and a run of ``lm_eval.simple_evaluate`` whose
accuracy equals the one computed here from the same model's log-likelihoods."""

import json
import random

import pytest
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.prompts.lm_eval_export import lm_eval_docs, task_name
from spatialprobe.tasks import data as task_data

lm_eval_tasks = pytest.importorskip("lm_eval.tasks", reason="lm-eval is a dev extra")
hf_datasets = pytest.importorskip("datasets")


@pytest.fixture(autouse=True)
def _datasets_offline_cache(tmp_path_factory, monkeypatch):
    """lm-eval reads the JSON lines through `datasets`: keep its cache per test, never the network."""
    monkeypatch.setattr(hf_datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf_datasets"))
    monkeypatch.setattr(hf_datasets.config, "HF_HUB_OFFLINE", True)


def export(*args):
    result = CliRunner().invoke(app, ["datasets", "export", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result


def load_tasks(folder, names):
    return lm_eval_tasks.TaskManager(include_path=str(folder)).load(names)["tasks"]


def seen(task, doc_id):
    """(context, choices, gold) of one instance as lm-eval builds its requests."""
    doc = next(d for d in task.test_docs() if d["id"] == doc_id)
    return task.doc_to_text(doc), task.doc_to_choice(doc), task.doc_to_target(doc)


def test_lm_eval_loads_every_built_in_set_with_exact_docs(tmp_path):
    out = tmp_path / "lm"
    for name in task_data.builtin_names():
        export(name, "--format", "lm-eval", "--out", out)
    export("posrel", "--format", "lm-eval", "--style", "question", "--out", out)
    export("size", "--format", "lm-eval", "--style", "question", "--out", out)
    loaded = load_tasks(out, ["spatialprobe"])  # the tag every exported task carries
    assert sorted(loaded) == ["spatialprobe_height", "spatialprobe_posrel", "spatialprobe_posrel_question",
                              "spatialprobe_size", "spatialprobe_size_question", "spatialprobe_weight"]
    size, posrel = loaded["spatialprobe_size"], loaded["spatialprobe_posrel"]
    assert [len(task.test_docs()) for task in (size, posrel)] == [500, 256]
    assert size.OUTPUT_TYPE == "multiple_choice" and size.config.target_delimiter == " "
    assert task_data.load("size").version == size.VERSION
    assert sorted(size._metric_fn_list) == ["acc", "acc_norm"]
    assert size.higher_is_better() == {"acc": True, "acc_norm": True}

    assert seen(size, "size-0000") == ("An ant is", ["larger than a bird.", "smaller than a bird."], 1)
    assert seen(size, "size-0499") == ("A plane is", ["larger than a bed.", "smaller than a bed."], 0)
    assert seen(loaded["spatialprobe_height"], "height-0000")[2] == 1
    assert seen(loaded["spatialprobe_weight"], "weight-0499") == (
        "A plane is", ["heavier than a bed.", "lighter than a bed."], 0)
    assert seen(posrel, "posrel-0000") == (
        "A man drives the bus. He is", ["above the bus.", "below the bus.", "inside the bus.", "beside the bus."], 2)
    assert seen(loaded["spatialprobe_size_question"], "size-0000") == (
        "Question: Is an ant larger or smaller than a bird?\nAnswer:", ["larger", "smaller"], 1)
    assert seen(loaded["spatialprobe_posrel_question"], "posrel-0000") == (
        "Question: A man drives the bus. Is the man above, below, inside or beside the bus?\nAnswer:",
        ["above", "below", "inside", "beside"], 2)

    first = lm_eval_docs(task_data.load("size"))[0]  # the shuffled order's first (seed 0)
    size.build_all_requests(limit=1, rank=0, world_size=1)
    assert [r.args for r in size.instances] == [(first["context"], " " + choice) for choice in first["choices"]]


def test_every_gold_index_names_the_instance_label():
    for name in task_data.builtin_names():
        data = task_data.load(name)
        for style in ("cloze", "question"):
            docs = lm_eval_docs(data, style)
            order = [i.id for i in data.instances]
            random.Random(0).shuffle(order)  # the seeded shuffled order, recorded in the YAML
            assert [d["id"] for d in docs] == order
            assert all(d["gold"] == data.labels.index(d["label"]) and len(d["choices"]) == len(data.labels)
                       and data.labels[d["gold"]] in d["choices"][d["gold"]] for d in docs)


def test_the_yaml_states_data_metrics_and_version(tmp_path):
    import yaml

    export("posrel", "--format", "lm-eval", "--out", tmp_path)
    config = yaml.safe_load((tmp_path / "spatialprobe_posrel.yaml").read_text())
    data_file = tmp_path / "spatialprobe_posrel.jsonl"
    assert config["dataset_kwargs"] == {"data_files": {"test": str(data_file.resolve())}}
    assert {k: config[k] for k in ("task", "tag", "dataset_path", "test_split", "output_type")} == {
        "task": "spatialprobe_posrel", "tag": ["spatialprobe"], "dataset_path": "json", "test_split": "test",
        "output_type": "multiple_choice"}
    assert config["metric_list"] == [{"metric": m, "aggregation": "mean", "higher_is_better": True}
                                     for m in ("acc", "acc_norm")]
    assert config["metadata"]["version"] == task_data.load("posrel").version
    first = next(d for d in map(json.loads, data_file.read_text().splitlines()) if d["id"] == "posrel-0000")
    assert first["context"] == "A man drives the bus. He is" and first["gold"] == 2
    assert config["metadata"]["order_seed"] == 0


def test_the_docs_are_shuffled_so_a_limit_reads_every_label_and_the_seed_is_recorded(tmp_path):
    # in the dataset's order the first 100 size docs share one label: lm_eval --limit 100 scored a
    # model that always says it 1.0; shuffled, the first 100 hold both labels near their shares
    size = task_data.load("size")
    assert len({i.label for i in size.instances[:100]}) == 1
    first = [d["label"] for d in lm_eval_docs(size)[:100]]
    assert 35 <= first.count("larger") <= 65
    export("size", "--format", "lm-eval", "--seed", "7", "--out", tmp_path / "seven")
    written = [json.loads(x)["id"] for x in (tmp_path / "seven" / "spatialprobe_size.jsonl").read_text().splitlines()]
    assert written == [d["id"] for d in lm_eval_docs(size, seed=7)] != [d["id"] for d in lm_eval_docs(size)]
    assert "order_seed: 7" in (tmp_path / "seven" / "spatialprobe_size.yaml").read_text()
    refused = CliRunner().invoke(app, ["datasets", "export", "size", "--seed", "1", "--out", str(tmp_path / "r.jsonl")])
    assert refused.exit_code == 2 and "--seed applies to --format lm-eval only" in refused.output


@pytest.mark.parametrize("args, message", [
    (["size", "--style", "question", "--out", "{tmp}/size.jsonl"], "--style applies to --format lm-eval only"),
    (["size", "--format", "lmeval", "--out", "{tmp}/x"], "--format must be one of release, lm-eval"),
    (["size", "--format", "lm-eval", "--style", "mcq", "--out", "{tmp}/x"], "--style must be one of"),
    (["size", "--format", "lm-eval", "--out", "{tmp}/size.jsonl"], "--format lm-eval writes a folder"),
    (["size", "--format", "lm-eval", "--out", "{tmp}/a_file"], "is a file, not a directory"),
    (["size", "--out", "{tmp}"], "--format release writes one JSON lines file"),
    (["nope", "--format", "lm-eval", "--out", "{tmp}/x"], "Unknown dataset 'nope'"),
])
def test_export_refuses_options_that_do_not_apply(args, message, tmp_path):
    (tmp_path / "a_file").write_text("")
    result = CliRunner().invoke(app, ["datasets", "export", *(a.format(tmp=tmp_path) for a in args)])
    assert result.exit_code == 2 and message in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


RELEASE_RECORDS = [  # a release-format file: three "larger", three "smaller"
    {"obj_a": "ant", "obj_b": "bird", "label": 0, "question": "Is an ant larger than a bird?"},
    {"obj_a": "house", "obj_b": "cup", "label": 1, "question": "Is a house larger than a cup?"},
    {"obj_a": "coin", "obj_b": "tiger", "label": 0, "question": "Is a coin larger than a tiger?"},
    {"obj_a": "plane", "obj_b": "dog", "label": 1, "question": "Is a plane larger than a dog?"},
    {"obj_a": "nut", "obj_b": "sofa", "label": 0, "question": "Is a nut larger than a sofa?"},
    {"obj_a": "truck", "obj_b": "shell", "label": 1, "question": "Is a truck larger than a shell?"},
]


def tiny_gpt2(path, shared_dir):
    """A random 1-layer GPT-2 with GPT-2's byte-level BPE (RoBERTa's vocab.json and merges.txt)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    bpe = shared_dir / "models" / "roberta-base"
    tokenizer = GPT2TokenizerFast(vocab=str(bpe / "vocab.json"), merges=str(bpe / "merges.txt"),
                                  bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=16, n_layer=1, n_head=2,
                        initializer_range=0.5, bos_token_id=tokenizer.bos_token_id,
                        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model = GPT2LMHeadModel(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model, tokenizer


def loglikelihood(model, tokenizer, context, continuation):
    """log P(continuation | context), summed over the continuation's tokens of the joint encoding."""
    import torch

    context_ids = tokenizer.encode(context)
    ids = tokenizer.encode(context + continuation)
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    return sum(logprobs[i - 1, ids[i]].item() for i in range(len(context_ids), len(ids)))


def argmax(values):
    return max(range(len(values)), key=values.__getitem__)


def test_simple_evaluate_matches_the_models_own_loglikelihoods(tmp_path, shared_dir):
    pytest.importorskip("accelerate")  # lm-eval's hf model needs it
    import lm_eval

    release = tmp_path / "my_pairs.jsonl"
    release.write_text("".join(json.dumps(r) + "\n" for r in RELEASE_RECORDS))
    export(release, "--format", "lm-eval", "--out", tmp_path / "lm")
    task = task_name(task_data.load(str(release)))
    model, tokenizer = tiny_gpt2(tmp_path / "gpt2", shared_dir)
    manager = lm_eval_tasks.TaskManager(include_path=str(tmp_path / "lm"))
    limit = 4
    results = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={tmp_path / 'gpt2'},dtype=float32",
                                      tasks=[task], task_manager=manager, limit=limit,
                                      device="cpu", batch_size=4, log_samples=True)

    docs = lm_eval_docs(task_data.load(str(release)))[:limit]
    by_hand = [[loglikelihood(model, tokenizer, d["context"], " " + c) for c in d["choices"]] for d in docs]
    assert all(abs(a - b) > 1e-3 for a, b in by_hand)  # no near-ties: the argmax is well defined
    pairs = list(zip(by_hand, docs, strict=True))
    acc = sum(argmax(lls) == d["gold"] for lls, d in pairs) / limit
    # acc_norm: lm-eval divides each log-likelihood by its choice's length in characters
    acc_norm = sum(argmax([ll / len(c) for ll, c in zip(lls, d["choices"], strict=True)]) == d["gold"]
                   for lls, d in pairs) / limit

    version = task_data.load(str(release)).version
    assert task == f"spatialprobe_file_my_pairs_{version.rsplit('-', 1)[1][:8]}"
    assert results["n-samples"][task] == {"original": 6, "effective": limit}
    assert results["versions"][task] == task_data.load(str(release)).version
    assert results["results"][task]["acc,none"] == acc
    assert results["results"][task]["acc_norm,none"] == acc_norm
    samples = sorted(results["samples"][task], key=lambda sample: sample["doc_id"])
    logged = [[ll for ll, _greedy in sample["filtered_resps"]] for sample in samples]
    assert [ll for lls in logged for ll in lls] == pytest.approx([ll for lls in by_hand for ll in lls], abs=1e-4)
    # the toolkit's likelihood protocol with the same model gives lm-eval's log-likelihoods
    from spatialprobe import registry
    from spatialprobe.engine.protocols import Question, ask

    causal = registry.build("model", registry.Spec("hf-causal", {"model": str(tmp_path / "gpt2"), "device": "cpu",
                                                                 "bos": False}))  # lm-eval adds no BOS
    ours = ask(causal, [Question(d["context"] + " ", tuple(d["choices"])) for d in docs], "likelihood")
    assert [s for a in ours for s in a["likelihood"]["scores"]] == pytest.approx(
        [ll for lls in logged for ll in lls], abs=1e-4)


def test_two_exports_never_collide(tmp_path):
    """The paper's posrel.jsonl exported beside the built-in posrel: two tasks, lm-eval loads both;
    another file of the same stem gets a third name; a built-in of other data is refused."""
    import shutil
    from pathlib import Path

    import spatialprobe

    export("posrel", "--format", "lm-eval", "--out", tmp_path / "lm")
    built_in = (tmp_path / "lm" / "spatialprobe_posrel.yaml").read_text()
    paper = tmp_path / "paper" / "posrel.jsonl"
    paper.parent.mkdir()
    shutil.copy(Path(spatialprobe.__file__).parent / "tasks" / "posrel.jsonl", paper)
    version = task_data.load(str(paper)).version
    file_task = f"spatialprobe_file_posrel_{version.rsplit('-', 1)[1][:8]}"
    assert "wrote lm-eval task " + file_task in export(paper, "--format", "lm-eval", "--out", tmp_path / "lm").output
    assert (tmp_path / "lm" / "spatialprobe_posrel.yaml").read_text() == built_in  # untouched
    other = tmp_path / "other" / "posrel.jsonl"
    other.parent.mkdir()
    other.write_text("".join(paper.read_text().splitlines(keepends=True)[:-1]))
    other_task = task_name(task_data.load(str(other)))
    assert other_task.startswith("spatialprobe_file_posrel_") and other_task != file_task
    export(other, "--format", "lm-eval", "--out", tmp_path / "lm")
    loaded = load_tasks(tmp_path / "lm", ["spatialprobe_posrel", file_task, other_task])
    sizes = {name: len(list(task.test_docs())) for name, task in loaded.items()}
    n = len(task_data.load("posrel"))
    assert sizes == {"spatialprobe_posrel": n, file_task: n, other_task: n - 1}
    yaml_file = tmp_path / "lm" / "spatialprobe_posrel.yaml"
    yaml_file.write_text(built_in.replace(task_data.load("posrel").version, "posrel-000000000000"))
    stale = CliRunner().invoke(app, ["datasets", "export", "posrel", "--format", "lm-eval", "--out",
                                     str(tmp_path / "lm")])
    assert stale.exit_code == 2
    assert (f"{yaml_file} already defines the lm-eval task spatialprobe_posrel with other data than "
            f"posrel ({task_data.load('posrel').version})") in " ".join(stale.output.split())
