"""The human-evaluation page: answered with the keyboard in a real headless Chromium, then scored.

The browser test needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package
and is skipped when any is missing; the scoring tests run everywhere.
"""

import json
import random
import shutil
import time

import pytest
from interval_helpers import plain_wilson, wilson
from judge_helpers import write_run
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.judging.annotation_page import annotation_items, page_id
from spatialprobe.synthesis import load_prompts

runner = CliRunner()
LABELS = ["above", "below", "inside", "beside"]
GOLD = ["above", "below", "inside", "beside"]


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.fixture
def image_run(tmp_path):
    run = tmp_path / "images"
    write_run(run, "posrel", [(g, g, True) for g in GOLD])
    return run


def answers_file(path, run, annotator, answers, list_items=False):
    task, items = annotation_items(run)
    data = {"format": "spatialprobe-annotations", "version": 1, "page_id": page_id(run, task, items),
            "annotator": annotator, "answers": {i["id"]: a for i, a in zip(items, answers, strict=True) if a}}
    if list_items:  # as the page saves them
        data["items"] = [i["id"] for i in items]
    path.write_text(json.dumps(data))
    return path


def check_scores(summary, alice_ci=(12.785569, 98.397227), mean_ci=(31.060182, 99.088907), clusters=3,
                 independent=False):
    """alice: above, below, above (wrong), cannot tell; bob: all right.

    Intervals are cluster-robust over the scenes' objects (posrel: the object, not the person):
    image_run's four scenes show three (two share the bus): t on 2 df, so alice's 75 % gets a wide
    Wilson interval; bob, always right on 4 rows, gets the Wilson interval of 4 of 4 (t_2-adjusted),
    [17.8, 100] - no longer [100, 100] - and so does his macro-F1 (boundary interval).
    Rows that are each their own cluster (alice's three answered rows; ``independent``: every row of
    one annotator on an object of its own) are independent by design: Wilson's own interval."""
    bob_ci = plain_wilson(4, 4) if independent else wilson(1.0, 0.0, 4, clusters)
    alice_ci = plain_wilson(3, 4) if independent else list(alice_ci)
    m = summary["metrics"]
    alice = {k: m[k]["breakdown"]["alice"] for k in m}
    bob = {k: m[k]["breakdown"]["bob"] for k in m}
    assert alice["answered_ratio"] == {"mean": pytest.approx(75.0), "std": None, "n": 4, "ci": alice_ci}
    assert alice["answered_accuracy"] == {"mean": pytest.approx(200 / 3), "std": None, "n": 3,
                                          "ci": plain_wilson(2, 3)}
    guess = random.Random(0).choice(LABELS)  # the seeded guess for alice's "cannot tell" item
    alice_whole = 100 * (2 + (guess == "beside")) / 4
    assert alice["accuracy"] == {"mean": pytest.approx(alice_whole), "std": None, "n": 4,
                                 "ci": alice_ci}
    assert bob["accuracy"]["mean"] == 100.0 and bob["answered_ratio"]["mean"] == 100.0
    for name in ("accuracy", "answered_accuracy", "answered_ratio"):
        assert bob[name]["ci"] == bob_ci  # 4 of 4 right, t on clusters - 1 df
    for name in ("macro_f1", "answered_macro_f1"):  # all right: Wilson at L x n_min = 4 labels x 1 row
        assert bob[name]["ci"] == bob_ci
    # the headline: mean and population σ over the two annotators, a measured spread; its interval
    # averages the two annotators in every resample, as the mean is
    assert summary["accuracy"]["mean"] == pytest.approx((alice_whole + 100) / 2)
    assert summary["accuracy"]["std"] == pytest.approx(abs(100 - alice_whole) / 2)
    assert summary["accuracy"]["n"] == 8 and summary["accuracy"]["ci"] == list(mean_ci)
    assert summary["intervals"]["clusters"] == ["obj_b"] and summary["intervals"]["group"] == "annotator"
    # kappa by hand: p_o = 2/4; p_e = above 2/4*1/4 + below 1/4*1/4 = 3/16 -> (8/16-3/16)/(13/16)
    assert summary["details"]["kappa"]["alice | bob"] == {"kappa": pytest.approx(5 / 13), "items": 4}
    assert summary["details"]["mean_kappa"] == pytest.approx(5 / 13)
    assert summary["kind"] == "human" and summary["task"] == "posrel" and summary["seed"] == 0
    assert summary["dataset"] == load_prompts("posrel").source


def test_import_scores_annotators(image_run, tmp_path):
    a = answers_file(tmp_path / "a.json", image_run, "alice", ["above", "below", "above", "cannot tell"])
    b = answers_file(tmp_path / "b.json", image_run, "bob", GOLD)
    invoke("annotate", "import", image_run, a, b, "--out", tmp_path / "human")
    summary = json.loads((tmp_path / "human" / "summary.json").read_text())
    check_scores(summary)
    assert "Cohen's kappa" in (tmp_path / "human" / "table.md").read_text()


def test_images_added_after_export_do_not_orphan_the_answers(image_run, tmp_path):
    a = answers_file(tmp_path / "a.json", image_run, "alice", ["above", "below", "above", "cannot tell"],
                     list_items=True)
    b = answers_file(tmp_path / "b.json", image_run, "bob", GOLD, list_items=True)
    write_run(image_run, "posrel", [("above", "above", True)] * 2)  # synthesis went on: 1 new image
    assert len(annotation_items(image_run)[1]) == 5
    invoke("annotate", "import", image_run, a, b, "--out", tmp_path / "human")
    summary = json.loads((tmp_path / "human" / "summary.json").read_text())
    assert summary["details"]["items"] == 4
    check_scores(summary)


def test_import_refuses_answers_of_another_page(image_run, tmp_path):
    other = tmp_path / "other"
    write_run(other, "posrel", [("above", "above", True)])
    stray = answers_file(tmp_path / "x.json", other, "carol", ["above"])
    result = runner.invoke(app, ["annotate", "import", str(image_run), str(stray)])
    assert result.exit_code == 2 and "x.json, field 'page_id'" in result.output
    bigger = tmp_path / "bigger"
    write_run(bigger, "posrel", [("above", "above", True)] * 2)  # its 2nd image is not in image_run
    listed = answers_file(tmp_path / "y.json", bigger, "carol", ["above", "above"], list_items=True)
    result = runner.invoke(app, ["annotate", "import", str(image_run), str(listed)])
    assert result.exit_code == 2 and "y.json, field 'items'" in result.output
    missing = runner.invoke(app, ["annotate", "import", str(image_run), str(tmp_path / "no.json")])
    assert missing.exit_code == 2 and "no.json: file not found" in missing.output


def test_one_annotator_has_no_spread_and_the_run_replays(image_run, tmp_path, monkeypatch):
    from spatialprobe.judging.human import HumanRun

    a = answers_file(tmp_path / "a.json", image_run, "alice", ["above", "below", "above", "beside"])
    out = tmp_path / "human"
    invoke("annotate", "import", image_run, a, "--out", out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"] == {"mean": 75.0, "std": None, "n": 4, "ci": [12.785569, 98.397227],  # no σ
                                   "breakdown": {"alice": {"mean": 75.0, "std": None, "n": 4,
                                                           "ci": [12.785569, 98.397227]}}}
    assert summary["details"]["kappa"] == {} and summary["details"]["mean_kappa"] is None
    table = (out / "table.md").read_text()
    assert "| mean ± σ | 75.0 [12.8, 98.4] | " in table
    assert "cluster-robust standard error over objects (obj_b)." in table
    first = (out / "predictions.jsonl").read_text()

    def no_compute(self, batch):
        raise AssertionError("a confirmed replay computes nothing")

    with monkeypatch.context() as patch:
        patch.setattr(HumanRun, "compute", no_compute)
        assert "confirmed: identity" in invoke("run", out / "config.json").output
    invoke("run", out / "config.json", "--out", tmp_path / "again")
    assert (tmp_path / "again" / "predictions.jsonl").read_text() == first
    # another seed is another run; so are answers that changed since
    result = runner.invoke(app, ["annotate", "import", str(image_run), str(a), "--out", str(out),
                                 "--seed", "1"])
    assert result.exit_code == 2 and "settings that differ: seed: 0 -> 1" in result.stderr
    answers_file(a, image_run, "alice", ["above", "below", "inside", "beside"])
    result = runner.invoke(app, ["annotate", "import", str(image_run), str(a), "--out", str(out)])
    assert result.exit_code == 2 and "answers.alice.sha256" in result.stderr


def _browser(download_dir):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.skip("chromium and chromium-driver are not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_experimental_option("prefs", {"download.default_directory": str(download_dir),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow",
                                                        "downloadPath": str(download_dir)})
    return driver


def _annotate(page, download_dir, name, keys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver = _browser(download_dir)
    try:
        driver.get(page.as_uri())
        assert driver.find_element(By.ID, "position").text == "1 / 4"
        assert "where is the" in driver.find_element(By.ID, "question").text
        assert driver.find_element(By.ID, "image").get_attribute("src").startswith("data:image/jpeg;base64,")
        assert driver.execute_script("return document.getElementById('image').naturalWidth") == 64
        field = driver.find_element(By.ID, "annotator")
        field.send_keys(name, Keys.ENTER)  # Enter leaves the field so keys drive the page again
        body = driver.find_element(By.TAG_NAME, "body")
        for key in keys:
            body.send_keys(key)
        assert driver.find_element(By.ID, "progress").text.startswith("4 answered")
        body.send_keys(Keys.ARROW_LEFT)
        assert driver.find_element(By.ID, "position").text == "3 / 4"
        body.send_keys("s")
        target = download_dir / f"answers-{name}.json"
        deadline = time.time() + 20
        while not target.exists() and time.time() < deadline:
            time.sleep(0.1)
        assert target.exists(), f"no download in {download_dir}: {list(download_dir.iterdir())}"
        return target
    finally:
        driver.quit()


def test_annotation_page_in_headless_chromium(image_run, tmp_path):
    page = tmp_path / "page.html"
    invoke("annotate", "export", image_run, "--out", page)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    alice = _annotate(page, downloads, "alice", ["1", "2", "1", "0"])
    bob = _annotate(page, downloads, "bob", ["1", "2", "3", "4"])
    saved = json.loads(alice.read_text())
    assert saved["annotator"] == "alice" and len(saved["answers"]) == 4
    assert saved["items"] == [i["id"] for i in annotation_items(image_run)[1]]
    invoke("annotate", "import", image_run, alice, bob, "--out", tmp_path / "human")
    check_scores(json.loads((tmp_path / "human" / "summary.json").read_text()))


# Names that end a <script> element early, or put HTML's script-data parser into its "escaped"
# state (after "<!--<script>", a "</script>" no longer closes the element).
HOSTILE = ["box <!--<script>", "jar </script><b>&amp;", "cat -->"]


@pytest.fixture
def hostile_run(tmp_path):
    from judge_helpers import dataset_id, instances, scene

    from spatialprobe.imagestore import ImageStore, PromptItem

    run = tmp_path / "hostile"
    store = ImageStore(run)
    store.run.start({"kind": "synthesize", "prompts": dataset_id("posrel"), "task": "posrel"})
    metas = instances("posrel", GOLD)
    metas[0]["obj_b"], metas[1]["obj_b"], metas[2]["obj_b"] = HOSTILE
    metas[3]["id"] = "posrel-<!--<script>-</script>"
    store.add_prompts(PromptItem(m["id"], m["text"], m) for m in metas)
    for meta in metas:
        image = scene("posrel", meta["obj_a"], meta["obj_b"], meta["label"])
        store.save_image(image, meta["id"], 0, seed=0, backend="test", model="drawn-shapes",
                         settings={})
    return run


def test_annotation_page_survives_script_markup_in_names(hostile_run, tmp_path):
    from selenium.webdriver.common.by import By

    page = tmp_path / "page.html"
    invoke("annotate", "export", hostile_run, "--out", page)
    items = annotation_items(hostile_run)[1]
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver = _browser(downloads)
    try:
        driver.get(page.as_uri())
        assert driver.execute_script("return DATA.items.map(i => i.id)") == [i["id"] for i in items]
        shown = []
        for _ in items:  # every item renders, with its question as written
            shown.append(driver.find_element(By.ID, "question").text)
            driver.find_element(By.TAG_NAME, "body").send_keys("n")
        assert shown == [i["question"] for i in items]
        assert any("<!--<script>" in q for q in shown) and any("</script>" in q for q in shown)
    finally:
        driver.quit()
    alice = _annotate(page, downloads, "alice", ["1", "2", "1", "0"])
    bob = _annotate(page, downloads, "bob", ["1", "2", "3", "4"])
    assert set(json.loads(alice.read_text())["answers"]) == {i["id"] for i in items}
    invoke("annotate", "import", hostile_run, alice, bob, "--out", tmp_path / "human")
    # four scenes of four objects here (the renamed ones no longer share the bus): wider intervals
    check_scores(json.loads((tmp_path / "human" / "summary.json").read_text()), (),
                 (31.585014, 99.066614), clusters=4, independent=True)
