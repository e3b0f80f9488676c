"""The one-to-one stages of credit_eager_kernels pair instances on NumPy arrays (issue 14:
each stage built, sorted, grouped and re-indexed two small DataFrames); the credits equal
those of the pandas form, kept here as the reference, on every sample run and on the corpus
pairs both ways (each trace against itself too: every stage pairs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests._reference import CORPUS_PAIRS
from tests.conftest import CORPUS, SAMPLES, load_trace
from traceviz.analysis import fusion_match
from traceviz.analysis.fusion_lines import fusion_evidence, read_log
from traceviz.analysis.fusion_match import _free, _signature, credit_eager_kernels
from traceviz.analysis.kernels import classify
from traceviz.rundir import read_run_dir
from traceviz.trace import Trace

RUNS = sorted(p.parent.relative_to(SAMPLES).as_posix() for p in SAMPLES.glob("**/run.json"))


def _one_to_one_reference(e, c, e_cols, c_cols, c_mask, state, rule) -> None:  # type: ignore[no-untyped-def]
    free = _free(state.kernel)
    c_take = ~state.used if c_mask is None else c_mask & ~state.used
    e_sig, c_sig = _signature(e_cols, c_cols)
    e_ok = free & (e_sig >= 0)
    c_ok = c_take & (c_sig >= 0)
    if not e_ok.any() or not c_ok.any():
        return
    j = np.flatnonzero(c_ok)
    cf = pd.DataFrame({"sig": c_sig[j], "step": c.step[j], "pos": c.pos[j], "j": j})
    cf = cf.sort_values(["step", "pos"], kind="stable")
    cf["occ"] = cf.groupby(["step", "sig"], sort=False).cumcount()
    slots = cf.drop_duplicates(["sig", "occ"]).set_index(["sig", "occ"])["j"]
    idx = np.flatnonzero(e_ok)
    ef = pd.DataFrame({"sig": e_sig[idx], "step": e.step[idx], "pos": e.pos[idx], "i": idx})
    ef = ef.sort_values(["step", "pos"], kind="stable")
    ef["occ"] = ef.groupby(["step", "sig"], sort=False).cumcount()
    wanted = pd.MultiIndex.from_arrays([ef["sig"], ef["occ"]])
    found = slots.reindex(wanted)
    hit = found.notna().to_numpy()
    at = ef["i"].to_numpy()[hit]
    state.kernel[at] = c.names[found.to_numpy()[hit].astype(np.int64)]
    state.how[at] = rule.value
    state.confidence[at] = 1.0
    taken = pd.MultiIndex.from_arrays([cf["sig"], cf["occ"]]).isin(wanted[hit])
    state.used[cf["j"].to_numpy()[taken]] = True


def _check(eager: Trace, compiled: Trace, compiler, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    classified = classify(compiled)
    got = credit_eager_kernels(eager, compiled, compiled_classified=classified, compiler=compiler)
    with monkeypatch.context() as m:
        m.setattr(fusion_match, "_one_to_one", _one_to_one_reference)
        expected = credit_eager_kernels(
            eager, compiled, compiled_classified=classified, compiler=compiler
        )
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


@pytest.mark.parametrize("run", RUNS)
def test_equal_to_the_pandas_form_on_sample_runs(run: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    compiler, _ = fusion_evidence(eager, compiled, read_log(r.compile_log), eager_lines=marked)
    _check(eager, compiled, compiler, monkeypatch)
    _check(eager, compiled, None, monkeypatch)
    _check(compiled, eager, None, monkeypatch)
    _check(eager, eager, None, monkeypatch)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_equal_to_the_pandas_form_on_corpus_pairs(pair: tuple[str, str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    a, b = load_trace(CORPUS / pair[0]), load_trace(CORPUS / pair[1])
    _check(a, b, None, monkeypatch)
    _check(b, a, None, monkeypatch)
    _check(a, a, None, monkeypatch)
