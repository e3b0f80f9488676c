"""Importing the parser (pandas, numpy, pyarrow) runs with the cyclic collector paused, and
leaves it as it was: on when it was on, off when the program had turned it off."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Counts, in a fresh interpreter, the collections that start once numpy is being imported
# (the heavy part: numpy, pandas, pyarrow, the parser) until the statement ends, and reports
# whether the collector is on afterwards. The one collection the resumed collector may run
# at once (for what the paused import allocated) is allowed; an import with the collector on
# runs dozens.
PROBE = """
import gc, json, sys
if sys.argv[2] == "off":
    gc.disable()
runs = []
def count(phase, info):
    if phase == "start" and "numpy" in sys.modules:
        runs.append(info["generation"])
gc.callbacks.append(count)
assert "numpy" not in sys.modules
exec(sys.argv[1])
gc.callbacks.clear()
print(json.dumps({"collections": len(runs), "enabled": gc.isenabled(),
                  "pandas": "pandas" in sys.modules}))
"""

IMPORTS = {
    "the parser": "from traceviz.parse import load_trace",
    "traceviz.compare": "import traceviz; traceviz.compare",
    "traceviz.Trace": "import traceviz; traceviz.Trace",
}


def _probe(statement: str, collector: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, statement, collector],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("what", sorted(IMPORTS))
def test_heavy_import_runs_without_collections_and_turns_it_back_on(what: str) -> None:
    result = _probe(IMPORTS[what], "on")
    assert result["pandas"] is True  # the import did import pandas...
    assert result["collections"] <= 1  # ...with no collection walking it while it ran
    assert result["enabled"] is True


def test_a_collector_the_program_turned_off_stays_off() -> None:
    result = _probe(IMPORTS["the parser"], "off")
    assert result == {"collections": 0, "enabled": False, "pandas": True}


def test_without_the_pause_the_same_import_does_collect() -> None:
    """The probe can see collections: importing pandas itself with the collector on runs
    many (else the tests above could not fail)."""
    result = _probe("import pandas, numpy", "on")
    assert isinstance(result["collections"], int) and result["collections"] > 1
