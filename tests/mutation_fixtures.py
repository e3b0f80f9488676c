"""The hostile-input property tests' shared pieces (tests/test_hostile_input.py on Kineto traces,
tests/test_ort_profile.py on an ONNX Runtime profile): one byte mutation of a real file, odd
JSON values for one field, and the one outcome every such file must have."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import traceviz
from traceviz import TraceFormatError
from traceviz.trace import Trace

#: ``(how, where, junk)`` for :func:`mutate`.
MUTATIONS = st.tuples(
    st.sampled_from(["truncate", "flip", "insert", "delete"]),
    st.integers(min_value=0, max_value=10**9),
    st.binary(min_size=1, max_size=8),
)

#: Values of any JSON type, for a field that expects one type.
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)  # fmt: skip

#: Hypothesis settings of these tests (they write files under ``tmp_path``).
HOSTILE_SETTINGS = settings(
    max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def mutate(data: bytes, how: str, where: int, junk: bytes) -> bytes:
    """``data`` cut at, flipped at (xor ``junk[0]``), with ``junk`` inserted at, or with
    ``len(junk)`` bytes deleted at offset ``where % len(data)``."""
    out = bytearray(data)
    at = where % len(out)
    if how == "truncate":
        del out[at:]
    elif how == "flip":
        out[at] ^= junk[0]
    elif how == "insert":
        out[at:at] = junk
    else:
        del out[at : at + len(junk)]
    return bytes(out)


def load_or_format_error(path: Path) -> Trace | None:
    """``traceviz.load(path)``: a trace with every event accounted for, or ``None`` after a
    :class:`TraceFormatError` that names ``path``; any other exception fails the test."""
    try:
        trace = traceviz.load(path)
    except TraceFormatError as err:
        assert err.path == str(path) and str(path) in str(err)
        return None
    assert trace.stats.accounted == trace.stats.events_in
    return trace
