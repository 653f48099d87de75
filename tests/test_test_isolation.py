"""the suite never writes runs into the user's run index. Module- and
session-scoped fixtures run before any function-scoped fixture, so the home is isolated when the
session starts (tests/conftest.py ``pytest_configure``); a run made in a module-scoped fixture
lands in the suite's temp home."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SESSION_HOME, USER_HOME
from ray_helpers import CountRun, CountSettings

from spatialprobe import store
from spatialprobe.runner import execute


@pytest.fixture(scope="module")
def run_made_by_a_module_fixture(tmp_path_factory):
    """A finished run made before any function-scoped fixture of this module ran: (folder, home)."""
    out = tmp_path_factory.mktemp("module-run") / "run"
    execute(CountRun(CountSettings(items=4)), out)
    return out, store.home()


def test_a_run_made_in_a_module_fixture_lands_in_the_suites_temp_home(run_made_by_a_module_fixture):
    out, home = run_made_by_a_module_fixture
    assert home != USER_HOME and USER_HOME not in home.parents
    assert home == SESSION_HOME
    indexed = {row["path"] for row in _runs_in(home)}
    assert str(out.resolve()) in indexed


def _runs_in(home: Path) -> list[dict]:
    import sqlite3

    with sqlite3.connect(home / "index.sqlite") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute("SELECT * FROM runs")]
