import pytest

from spatialprobe.tasks import data as task_data
from spatialprobe.tasks.data import make_folds


def _check_disjoint(ds, folds):
    by_id = {i.id: i for i in ds.instances}
    for fold in folds:
        inside = set(fold.objects)
        for iid in fold.dev:
            assert set(by_id[iid].fold_keys) <= inside
        for iid in fold.test:
            assert not set(by_id[iid].fold_keys) & inside
    all_objects = [o for f in folds for o in f.objects]
    assert len(all_objects) == len(set(all_objects))


@pytest.mark.parametrize("task", ["size", "height"])
def test_scale_folds_are_object_disjoint_and_span_levels(task):
    ds = task_data.load(task)
    folds = make_folds(ds, 5, seed=0)
    _check_disjoint(ds, folds)
    levels = dict(ds.object_levels)
    for fold in folds:
        assert sorted(levels[o] for o in fold.objects) == [1, 2, 3, 4, 5]
        assert (len(fold.dev), len(fold.test)) == (20, 320)


def test_seed_is_deterministic_and_matters():
    ds = task_data.load("size")
    assert make_folds(ds, seed=3) == make_folds(ds, seed=3)
    assert make_folds(ds, seed=3) != make_folds(ds, seed=4)


def test_posrel_folds_split_objects_not_persons():
    ds = task_data.load("posrel")
    folds = make_folds(ds, 5, seed=0)
    _check_disjoint(ds, folds)
    assert all(f.dev and f.test for f in folds)
    assert {o for f in folds for o in f.objects} == {i.obj_b for i in ds.instances}


def test_folds_without_levels_stratify_by_larger_share(tmp_path):
    objects = [f"o{n:02d}" for n in range(10)]  # o09 largest
    rows = ["first,second,label"] + [f"{a},{b},{int(a > b)}" for a in objects for b in objects if a != b]
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(rows) + "\n")
    ds = task_data.load_pairs(path, first="first", second="second")
    folds = make_folds(ds, 5, seed=1)
    _check_disjoint(ds, folds)
    for fold in folds:  # one object from the smaller half and one from the larger half
        ranks = sorted(int(o[1:]) for o in fold.objects)
        assert ranks[0] < 5 <= ranks[1]


def test_too_few_objects_is_a_clear_error(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("obj_a,obj_b,label\nant,bus,0\nbus,ant,1\n")
    with pytest.raises(ValueError, match="2 objects cannot make 5"):
        make_folds(task_data.load_pairs(path))
