import json
from collections import defaultdict

import pytest

from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.data import DataError
from spatialprobe.tasks.levels import article


@pytest.mark.parametrize("task,first", [("size", "larger"), ("height", "taller")])
def test_scale_sets_have_every_cross_level_pair_in_both_orders(task, first):
    ds = task_data.load(task)
    assert len(ds) == 500
    pairs = {(i.obj_a, i.obj_b) for i in ds.instances}
    assert len(pairs) == 500 and all((b, a) in pairs for a, b in pairs)
    assert all(i.level_a != i.level_b for i in ds.instances)
    assert all((i.label == first) == (i.level_a > i.level_b) for i in ds.instances)
    assert sum(i.label == first for i in ds.instances) == 250
    assert task_data.load(task).version == ds.version  # deterministic


def test_articles():
    assert [article(w) for w in ("ant", "insect", "apartment", "house", "hour", "university", "bird")] == \
        ["an", "an", "an", "a", "an", "a", "a"]
    texts = {i.text for i in task_data.load("size").instances}
    assert "An ant and a bird." in texts and "A house and an ant." in texts


def test_builtin_posrel_follows_the_paper_design():
    ds = task_data.load("posrel")
    assert len(ds) >= 200
    assert {i.obj_a for i in ds.instances} == {"man", "woman", "boy", "girl"}
    assert set(ds.labels) == {i.label for i in ds.instances} == {"above", "below", "inside", "beside"}
    relations = defaultdict(set)
    actions = defaultdict(set)
    for i in ds.instances:
        assert " on " not in i.text and " in " not in i.text  # no preposition gives the answer away
        relations[i.obj_b].add(i.label)
        if not i.action.startswith("is "):
            actions[i.obj_b].add(i.action)
        assert i.pronoun == ("She" if i.obj_a in ("woman", "girl") else "He")
    assert len(relations) >= 14
    assert all(len(r) == 2 for r in relations.values())  # two actions, two different relations
    assert all(len(a) == 2 for a in actions.values())


def test_release_files_load_and_match_builtin(shared_dir):
    base = shared_dir / "data" / "spatial-commonsense"
    for task in ("size", "height"):
        release = task_data.load(str(base / f"{task}.jsonl"))
        assert release.task == task and len(release) == 500
        built = task_data.load(task)
        assert {(i.obj_a, i.obj_b, i.label, i.text) for i in release.instances} == \
               {(i.obj_a, i.obj_b, i.label, i.text) for i in built.instances}
    posrel = task_data.load(str(base / "posrel.jsonl"))
    assert posrel.task == "posrel" and len(posrel) == 224
    first = posrel.instances[0]
    assert (first.text, first.label, first.action, first.pronoun) == ("A man drives the car.", "inside", "drives", "He")


def _write(tmp_path, lines, name="bad.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("line,field,message", [
    ('{"text": "x", "obj_a": "ant", "label": 1}', "obj_b", "missing"),
    ('{"text": "x", "obj_a": "ant", "obj_b": "cup", "label": "yes"}', "label", "expected int"),
    ('{"text": "x", "obj_a": "ant", "obj_b": "cup", "label": 7}', "label", "expected 0 or 1"),
    ('{"text": "x", "obj_a": "", "obj_b": "cup", "label": 1}', "obj_a", "empty"),
    ('{"text": "x", "obj_a": "ant", "obj_b": ', None, "not valid JSON"),
])
def test_malformed_release_line_names_file_line_and_field(tmp_path, line, field, message):
    good = json.dumps({"text": "An ant and a cup.", "question": "Is an ant larger than a cup?",
                       "obj_a": "ant", "obj_b": "cup", "label": 0})
    path = _write(tmp_path, [good, good, line])
    with pytest.raises(DataError) as err:
        task_data.load_release(path, task="size")
    assert err.value.line == 3 and err.value.field == field and str(path) in str(err.value)
    assert message in str(err.value)


def test_non_utf8_and_empty_files(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"text": "caf\xe9", "obj_a": "a", "obj_b": "b", "label": 1}\n'.encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8") as err:
        task_data.load_release(path, task="size")
    assert err.value.line == 1
    with pytest.raises(DataError, match="no records"):
        task_data.load_release(_write(tmp_path, [""], "empty.jsonl"), task="size")


def test_posrel_label_range_checked(tmp_path):
    path = _write(tmp_path, ['{"text": "A man drives the car. ", "label": 5, "obj_a": "man", "obj_b": "car"}'])
    with pytest.raises(DataError, match=r"label.*0-3"):
        task_data.load_release(path, task="posrel")


def test_export_round_trips(tmp_path):
    from spatialprobe.files import write_jsonl

    for name in task_data.builtin_names():
        ds = task_data.load(name)
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(path, task_data.to_release_records(ds))
        back = task_data.load(str(path))
        assert back.task == ds.task
        assert [(i.obj_a, i.obj_b, i.label, i.text, i.action, i.pronoun) for i in back.instances] == \
               [(i.obj_a, i.obj_b, i.label, i.text, i.action, i.pronoun) for i in ds.instances]


def test_pair_files_with_column_mapping(tmp_path):
    csv_path = tmp_path / "rs.csv"
    csv_path.write_text("big,small,answer\nelephant,mouse,elephant\ncup,house,house\n")
    ds = task_data.load_pairs(csv_path, "size", first="big", second="small", answer="answer")
    assert [(i.obj_a, i.obj_b, i.label) for i in ds.instances] == \
        [("elephant", "mouse", "larger"), ("cup", "house", "smaller")]
    tsv_path = tmp_path / "rs.tsv"
    tsv_path.write_text("o1\to2\tfirst_taller\ngiraffe\tant\t1\nant\tgiraffe\tno\n")
    ds = task_data.load_pairs(tsv_path, "height", first="o1", second="o2", answer="first_taller")
    assert [i.label for i in ds.instances] == ["taller", "shorter"]
    jsonl = _write(tmp_path, ['{"a": "ant", "b": "bus", "which": "b"}'], "p.jsonl")
    assert task_data.load_pairs(jsonl, "size", first="a", second="b", answer="which").instances[0].label == "smaller"
    bad = tmp_path / "bad.csv"
    bad.write_text("obj_a,obj_b,label\nant,bus,maybe\n")
    with pytest.raises(DataError) as err:
        task_data.load_pairs(bad)
    assert err.value.line == 2 and err.value.field == "label"


# ---- readers refuse what they used to accept or report without a place ----

def test_spatialmqa_repeated_options_are_refused_naming_file_line_and_field(tmp_path):
    from spatialprobe.benchmarks.spatialmqa import load_spatialmqa_file

    good = {"image": "a.jpg", "question": "Where is the cat?", "options": ["left of", "right of"], "answer": "left of"}
    path = _write(tmp_path, [json.dumps(good), json.dumps({**good, "options": ["left of", "right of", " left of"]})],
                  "test.jsonl")
    with pytest.raises(DataError) as err:
        load_spatialmqa_file(path)
    assert str(err.value) == (f"{path}, line 2, field 'options': 'left of' is given twice; each option must "
                              "be a different answer")


def test_a_vsr_caption_without_its_relation_is_refused_with_file_and_line(tmp_path):
    from spatialprobe.benchmarks.vsr import load_vsr_file

    good = {"image": "a.jpg", "caption": "The cat is inside the fridge.", "relation": "inside", "label": 1}
    path = _write(tmp_path, [json.dumps(good), json.dumps({**good, "caption": "The cat is near the fridge."})],
                  "test.jsonl")
    with pytest.raises(DataError) as err:
        load_vsr_file(path)
    assert str(err.value) == (f"{path}, line 2, field 'caption': 'The cat is near the fridge.' does not contain "
                              "its relation 'inside'")
