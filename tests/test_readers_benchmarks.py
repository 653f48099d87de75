"""The benchmark modules' row parsing (:mod:`spatialprobe.benchmarks`) fed mutated copies, through
:func:`spatialprobe.engine.rebuild.rebuild_source`, each from a minimal copy as its own test builds one: a
load or one sentence naming the file (the discipline of tests/test_readers_property2.py, whose
settings and checks it reuses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_readers_property import VALUES, _jsonl, _mutate
from test_readers_property2 import FAST, _one_line

from spatialprobe.errors import DataError, SpatialprobeError

# ---- the benchmark modules' rows (spatialprobe bench NAME --data ...) -------------------------------

def _png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


PNG = _png()
B64 = __import__("base64").b64encode(PNG).decode()
SLOTS = {"on": "on", "under": "under", "left_of": "to the left of", "right_of": "to the right of"}


def _bench_rows(root: Path) -> dict[str, tuple[str, object, dict]]:
    """Each benchmark's minimal copy under ``root`` (images written there): name -> (data file, its
    records as the authors lay them out, further settings), as tests/test_<name>.py build them."""
    image = str(root / "a.png")
    options = ["left", "right"]
    return {
        "cv-bench": ("test.jsonl", [
            {"idx": k, "type": "3D" if s == "Omni3D" else "2D", "task": "Relation", "source": s, "image": "a.png",
             "question": f"Which is closer, {k}?", "choices": options, "answer": "(B)"}
            for k, s in enumerate(["ADE20K", "COCO", "Omni3D"])], {}),
        "whatsup": ("controlled_images_dataset.json", [
            {"image_path": f"data/controlled_images/mug_{slot}_plate.jpeg",
             "caption_options": [f"A mug {SLOTS[s]} a plate" for s in (slot, *(o for o in SLOTS if o != slot))]}
            for slot in SLOTS], {}),
        "whatsup-coco": ("coco_qa_two_obj.json", [[7, "A dog to the left of a cat", "A dog to the right of a cat"],
                                                  [9, "A cup above a table", "A cup below a table"]],
                         {"name": "whatsup"}),
        "3dsrbench": ("3DSRBench.jsonl", [
            {"index": n, "qid": f"Q000ABCD{'-1' if n else ''}", "question": f"Is the chair {n} higher?", "A": "yes",
             "B": "no", "C": "", "D": "", "answer": "A", "category": "height_higher", "image": B64 if n == 0 else "0",
             "image_url": "http://example.org/a.png"} for n in range(2)], {}),
        "blink": ("blink.jsonl", [
            {"idx": f"val_Spatial_Relation_{k}", "question": f"Question {k}?", "sub_task": "Spatial Relation",
             "image_1": image, "image_2": None, "choices": ["yes", "no"], "answer": "(A)"} for k in (1, 2)], {}),
        "embspatial": ("embspatial_bench.json", [
            {"question_id": f"q{k}", "data_source": "mp3d", "image": B64, "question": f"Where is the lamp {k}?",
             "answer_options": ["The lamp is above the bed", "The lamp is below the bed"], "answer": k % 2,
             "relation": "above", "objects": ["lamp", "bed"]} for k in range(2)], {}),
        "site": ("site.jsonl", [
            {"id": f"site-{k}", "question": f"<image> Where is it {k}?", "options": options, "answer": "B",
             "category": "spatial relationship reasoning", "dataset": "single", "visual": ["a.png"]}
            for k in range(2)], {}),
        "mmsi": ("mmsi.jsonl", [
            {"id": k, "images": ["a.png", "a.png"], "question": f"Where was camera 2, {k}? Options: A: left, B: right",
             "answer": "A", "question_type": "Positional"} for k in range(2)], {}),
        "spatialeval": ("spatialeval.jsonl", [
            {"id": f"spatialmap.1.{k}", "text": "Consider the map. In which direction is the Inn? Available options: "
             "A. Northeast, B. Northwest.", "oracle_answer": "Northwest", "oracle_option": "B",
             "oracle_full_answer": "B. Northwest"} for k in range(2)], {"subset": "tqa"}),
        "comfort": ("left/default/config.json", {
            "path_type": "rotate", "relation": "totheleft", "var_shape": "Sphere", "var_color": "red",
            "ref_shape": "Sphere", "ref_color": "blue", "mapping": {"0.png": 0, "1.png": 90}}, {}),
        "posqa": ("posqa.json", {f"0_1_{k}": {
            "h_name": "ant", "t_name": "house", "magnitude": ["1", "3", 2], "paras": [],
            "general_question": f"Is the ant {word} than the house", "general_question_label": word == "smaller",
            "special_question": f"Which one is {word} between ant and house", "special_question_label":
                "ant" if word == "smaller" else "house"} for k, word in enumerate(("bigger", "smaller"))}, {}),
        "geneval2": ("geneval2_data.jsonl", [
            {"prompt": "a cat to the left of a dog", "atom_count": 2, "vqa_list": [
                ["Are there any cats in the image?", "Yes"], ["Is the cat to the left of the dog?", "Yes"]],
             "skills": ["object", "position"]}], {"images": str(root / "images.json")}),
        "spatialgeneval": ("SpatialGenEval_T2I_Prompts.jsonl", [
            {"id": "000001", "scene": "Forest", "prompt": "a cat to the left of a dog",
             "question_type": ["Position", "Object"], "answers": ["A", "B"],
             "questions": [f"Question {j}? Options: A: left, B: right, C: None" for j in range(2)]}],
            {"images": str(root / "images.json")}),
        "viewspatial": ("ViewSpatial-Bench.json", [
            {"question_type": "Camera perspective - Relative Direction", "image_path": ["a.png", "0.png"],
             "question": f"Where is the lamp {k}?", "answer": "B. right", "choices": "A. left\nB. right"}
            for k in range(2)], {}),
        "mindcube": ("MindCube_tinybench.jsonl", [
            {"id": f"among_group1_q{k}_1", "question": f"Which is behind the sofa {k}? A. lamp B. desk",
             "images": ["a.png", "0.png"], "gt_answer": "B"} for k in range(2)], {}),
        "omnispatial": ("data.json", [
            {"id": f"0_{k}", "question": f"Which way is the cup {k}?", "options": options, "answer": 1,
             "task_type": "Perspective_Taking", "sub_task_type": "Egocentric"} for k in range(2)], {}),
        "spatialscore": ("SpatialScore.json", [
            {"question_type": kind, "question": f"Which is closer {k}? (A) left (B) right", "answer": answer,
             "img_paths": ["a.png"], "source": "cvbench" if kind == "multi-choice" else "VGBench",
             "category": "Depth and Distance", "subcategory": "Relative", "index_origin": k,
             "category_origin": "depth"} for k, (kind, answer) in enumerate((("multi-choice", "(B)"),
                                                                             ("open-ended", "1.5 meters")))], {}),
    }


def _serialised(file_name: str, records: object) -> bytes:
    return _jsonl(records) if file_name.endswith(".jsonl") else json.dumps(records).encode()  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def bench_copies(tmp_path_factory):
    """A folder per benchmark holding its images (its data file is written by each example)."""
    pytest.importorskip("PIL")
    roots = {}
    for name in _bench_rows(Path("/")):
        root = tmp_path_factory.mktemp(name)
        for image in ("a.png", "0.png", "1.png", "val2017/000000000007.jpg", "val2017/000000000009.jpg",
                      "mug_on_plate.jpeg", "mug_under_plate.jpeg", "mug_left_of_plate.jpeg",
                      "mug_right_of_plate.jpeg", "left/default/0.png", "left/default/1.png",
                      "Perspective_Taking/0.png"):
            (root / image).parent.mkdir(parents=True, exist_ok=True)
            (root / image).write_bytes(PNG)
        (root / "images.json").write_text(json.dumps({"a cat to the left of a dog": "a.png"}))
        roots[name] = root
    return roots


def _replay(name: str, root: Path, content: bytes):
    from spatialprobe.engine.rebuild import rebuild_source

    file_name, _, more = _bench_rows(root)[name]
    (root / file_name).write_bytes(content)
    data = root if name == "comfort" else root / file_name
    return rebuild_source({"name": name, "data": str(data), **more}, 0)


def _targeted(records, draw):
    """``records`` with one row's field (or a whole row) removed, of another type, an empty list, or
    an option letter / index outside the options."""
    rows = records if isinstance(records, list) else [records]
    index = draw(st.integers(0, len(rows) - 1))
    row = rows[index]
    if isinstance(row, dict) and row and all(isinstance(v, dict) for v in row.values()):  # POSQA: {key: record}
        key = draw(st.sampled_from(sorted(row)))
        return {**row, key: _targeted(row[key], draw)}
    keys = sorted(row) if isinstance(row, dict) else list(range(len(row)))
    if not keys:
        return records
    key = draw(st.sampled_from(keys))
    value = draw(st.one_of(VALUES, st.sampled_from([[], "Z", "(Z)", -1, 99, "", None, ["only"], [1, 2]])))
    if isinstance(row, dict) and draw(st.integers(0, 3)) == 0:
        changed = {k: v for k, v in row.items() if k != key}
    elif isinstance(row, dict):
        changed = {**row, key: value}
    else:
        changed = [*row[:key], value, *row[key + 1:]]
    return [*rows[:index], changed, *rows[index + 1:]] if isinstance(records, list) else changed


@pytest.mark.parametrize("name", sorted(_bench_rows(Path("/"))))
def test_each_benchmarks_minimal_copy_is_read(name, bench_copies):
    root = bench_copies[name]
    file_name, records, _ = _bench_rows(root)[name]
    assert _replay(name, root, _serialised(file_name, records)).items


@pytest.mark.parametrize("name", sorted(_bench_rows(Path("/"))))
@FAST
@given(data=st.data())
def test_a_benchmarks_mutated_rows_are_read_or_refused_in_one_line_naming_the_file(name, bench_copies, data):
    root = bench_copies[name]
    file_name, records, _ = _bench_rows(root)[name]
    for _ in range(data.draw(st.integers(1, 2))):
        records = _targeted(records, data.draw)
    content = _serialised(file_name, records)
    damaged = data.draw(st.integers(0, 3)) == 0
    if damaged:  # now and then the file itself
        content = _mutate(content, data.draw)
    try:
        _replay(name, root, content)
    except SpatialprobeError as err:
        message = _one_line(err, Path(file_name).name, str(root))
        if file_name.endswith(".jsonl") and not damaged and isinstance(err, DataError) and err.path.endswith(".jsonl"):
            assert err.line is not None or "holds no" in message, message  # a record's fault names its line


ROW_FOUND = {  # what the test above found, each a traceback (or a refusal of thousands of characters) before:
    # case -> (benchmark, field of the first record, its value (None: the field removed), the refusal)
    "cv-bench choices a boolean": ("cv-bench", "choices", True, r"line 1, field 'choices': expected a list of at"),
    "cv-bench choices empty": ("cv-bench", "choices", [], r"line 1, field 'choices': expected a list of at least 2"),
    "cv-bench a huge gold letter": ("cv-bench", "answer", "x" * 5000, r"line 1, field 'answer': 'x+ is none of"),
    "cv-bench a huge repeated idx": ("cv-bench", "idx", 1, r"line 2, field 'idx': '1' repeats"),
    "blink choices a boolean": ("blink", "choices", True, r"line 1, field 'choices': expected a list"),
    "blink a huge image path": ("blink", "image_1", "x" * 5000,
                                r"blink\.jsonl, line 1, field 'image_1': image 'x+ not found"),
    "embspatial options a boolean": ("embspatial", "answer_options", True, r"field 'answer_options': expected a"),
    "embspatial objects a number": ("embspatial", "objects", 7, r"field 'objects': expected a list"),
    "embspatial image not ASCII": ("embspatial", "image", "\x80" * 70, r"field 'image': neither base64 nor a path"),
    "site options a boolean": ("site", "options", True, r"line 1, field 'options': expected a list"),
    "site no image": ("site", "visual", [], r"line 1, field 'visual': no image"),
    "site an image name too long": ("site", "visual", ["x" * 5000],
                                    r"site\.jsonl, line 1, field 'visual': image 'x+ not found in"),
    "mmsi images not ASCII": ("mmsi", "images", "\x80", r"line 1, field 'image': neither base64 nor an image"),
    "mmsi images nested deep": ("mmsi", "images", "[" * 5000, r"line 1: lists or objects nested deeper"),
    "mmsi images bad JSON": ("mmsi", "images", "[oops", r"line 1: not valid JSON"),
    "mmsi an image missing": ("mmsi", "images", ["b.png"], r"line 1, field 'images': image 'b.png' not found"),
    "embspatial an image missing": ("embspatial", "image", "b.png", r"record 1, field 'image': image 'b.png' not"),
    "3dsrbench image not ASCII": ("3dsrbench", "image", "\x80" * 70, r"field 'image': neither base64 nor the"),
    "whatsup captions a boolean": ("whatsup", "caption_options", True, r"record 1, field 'caption_options':"),
    "whatsup an image path of another form": ("whatsup", "image_path", "mug.jpeg",
                                              r"record 1, field 'image_path': expected the authors'"),
    "whatsup-coco an image id null": ("whatsup-coco", 0, None, r"record 1: image id None is no COCO image number"),
    "whatsup-coco an image id of text": ("whatsup-coco", 0, "[[", r"record 1: image id '\[\[' is no COCO image"),
    "comfort relation a list": ("comfort", "relation", [], r"config\.json, field 'relation': \[\] is not one of"),
    "comfort no mapping": ("comfort", "mapping", None, r"config\.json, field 'mapping': expected \{"),
    "comfort a step without a number": ("comfort", "mapping", {".png": 0}, r"field 'mapping': expected \{"),
    "comfort an angle of text": ("comfort", "mapping", {"0.png": "east"}, r"'mapping.0.png': expected an angle"),
    "comfort an infinite angle": ("comfort", "mapping", {"0.png": 1e999}, r"'mapping.0.png': expected an angle"),
    "posqa magnitude a boolean": ("posqa", "magnitude", True, None),
    "geneval2 atoms a boolean": ("geneval2", "vqa_list", True, r"line 1, field 'vqa_list': expected a list of \["),
    "geneval2 an atom of one": ("geneval2", "vqa_list", [["q"], ["q"]], r"field 'vqa_list': expected a list of"),
    "geneval2 skills a boolean": ("geneval2", "skills", True, r"line 1, field 'skills': expected a list"),
    "spatialgeneval questions a boolean": ("spatialgeneval", "questions", True, r"field 'questions': expected"),
}


def _first_changed(records, field, value):
    """``records`` with the first record's ``field`` set to ``value`` (None: removed)."""
    if isinstance(records, dict) and all(isinstance(v, dict) for v in records.values()):  # POSQA: {key: record}
        key = next(iter(records))
        return {**records, key: _first_changed(records[key], field, value)}
    if isinstance(records, dict):  # COMFORT: the config itself
        return {**{k: v for k, v in records.items() if k != field}, **({} if value is None else {field: value})}
    first = records[0]
    if isinstance(first, list):  # What'sUp COCO: [image id, true caption, false caption]
        first = [value if n == field else v for n, v in enumerate(first)]
    else:
        first = {**{k: v for k, v in first.items() if k != field}, **({} if value is None else {field: value})}
    if field == "idx":  # a repeat: the second record takes the first one's idx
        return [first, {**records[1], "idx": value}, *records[2:]]
    return [first, *records[1:]]


@pytest.mark.parametrize("case", sorted(ROW_FOUND))
def test_what_the_benchmarks_property_test_found_is_refused_in_one_line(case, bench_copies):
    name, field, value, refusal = ROW_FOUND[case]
    root = bench_copies[name]
    file_name, records, _ = _bench_rows(root)[name]
    content = _serialised(file_name, _first_changed(records, field, value))
    if refusal is None:  # read: the field is only shown
        assert _replay(name, root, content).items
        return
    with pytest.raises(SpatialprobeError, match=refusal) as err:
        _replay(name, root, content)
    _one_line(err.value, Path(file_name).name)


def test_a_benchmark_copy_with_no_rows_is_refused_in_one_line(bench_copies):
    root = bench_copies["cv-bench"]
    with pytest.raises(SpatialprobeError, match=r"test\.jsonl: no CV-Bench questions") as err:
        _replay("cv-bench", root, b"")
    _one_line(err.value, "test.jsonl")
