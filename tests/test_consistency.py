import json

from spatialprobe.metrics.consistency import consistency, object_bias
from spatialprobe.tasks import data as task_data


def rows(preds, fold=0):
    return [{"obj_a": a, "obj_b": b, "pred": p, "fold": fold} for (a, b), p in preds.items()]


def test_symmetry_counts_pairs_predicted_in_both_orders():
    preds = {("ant", "cup"): "smaller", ("cup", "ant"): "larger",      # consistent
             ("cup", "bus"): "larger", ("bus", "cup"): "larger",       # both "larger": inconsistent
             ("ant", "bus"): "smaller"}                                 # one order only: not counted
    result = consistency(rows(preds), "larger")
    assert result["symmetry_pairs"] == 2 and result["symmetry"] == 50.0


def test_transitivity_over_triples_that_agree_in_direction():
    # ant < cup < bus, and ant < bus: transitive; house breaks it: bus < house, cup < bus, but cup > house
    preds = {("ant", "cup"): "smaller", ("cup", "bus"): "smaller", ("ant", "bus"): "smaller",
             ("bus", "house"): "smaller", ("cup", "house"): "larger"}
    result = consistency(rows(preds), "larger")
    # premises that agree: (ant,cup,bus) -> (ant,bus) smaller: yes; (cup,bus,house) -> (cup,house) larger: no
    assert result["transitivity_triples"] == 2 and result["transitivity"] == 50.0


def test_a_perfect_ordering_is_fully_consistent_and_folds_are_not_mixed():
    order = ["ant", "cup", "dog", "bus", "house"]
    preds = {(a, b): ("larger" if order.index(a) > order.index(b) else "smaller")
             for a in order for b in order if a != b}
    result = consistency(rows(preds, 0) + rows({k: ("larger" if v == "smaller" else "smaller")
                                                for k, v in preds.items()}, 1), "larger")
    assert result["symmetry"] == 100.0 and result["transitivity"] == 100.0
    assert result["per_group"]["0"]["transitivity"] == 100.0
    assert result["transitivity_triples"] == 2 * 20  # monotone triples: C(5,3) x 2 orders


def test_object_bias_shares():
    preds = {("ant", "cup"): "larger", ("cup", "ant"): "larger"}
    bias = object_bias(rows(preds), "larger")
    assert bias["ant"] == {"object_larger": 100.0, "others_larger": 100.0}


def test_consistency_command_writes_json_and_chart(tmp_path):
    from typer.testing import CliRunner

    from spatialprobe.cli import app

    runner = CliRunner()
    out = tmp_path / "run"
    assert runner.invoke(app, ["probe", "height", "--model", "dummy", "--out", str(out),
                               "--candidates", "manual"]).exit_code == 0
    result = runner.invoke(app, ["consistency", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "consistency.json").read_text())
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    expected = consistency(rows, "taller")
    assert (data["symmetry"], data["transitivity"]) == (expected["symmetry"], expected["transitivity"])
    for name in ("symmetry", "transitivity"):  # the dummy scorer is not constant: a real interval around it
        low, high = data[f"{name}_ci"]
        assert low < data[name] < high
    assert data["symmetry_pairs"] == 5 * 160  # every test pair of every fold, both orders
    assert (out / "consistency_objects.png").stat().st_size > 1000
    height = task_data.load("height")  # one bias entry for each of the set's 25 objects
    assert set(data["objects"]) == {o for i in height.instances for o in (i.obj_a, i.obj_b)}
    assert len(data["objects"]) == 25
    posrel = tmp_path / "posrel"
    runner.invoke(app, ["probe", "posrel", "--model", "dummy", "--out", str(posrel), "--candidates", "manual"])
    bad = runner.invoke(app, ["consistency", str(posrel)])
    assert bad.exit_code == 2 and "comparison tasks (size, height, weight), not 'posrel'" in bad.output
