"""The optional C scanner ``traceviz.parse._scan``: it gives exactly what msgspec's decode into
:class:`traceviz.parse.events.Event` gives, or raises ``Unsupported``; never anything else.

The oracle for every value is ``msgspec.json.decode(doc, type=TraceDocument | list[Event])``
(what the Python path parses with); the oracle for whether a key is present at all (ABSENT
versus a JSON value equal to the field's default) is the standard library's ``json.loads``.
Checked on every corpus trace and sample trace, in batches of 1, 7 and 32768 events, on random
event lists (hypothesis) and on byte-level mutations of small real traces; each Unsupported rule
has its own small test. Skipped when the extension is not built (under CI, env ``CI``, a missing
extension fails test_parse_native.py).
"""

from __future__ import annotations

import gzip
import json
import random
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CORPUS, SAMPLES, corpus_files
from traceviz.parse.events import Args, Event, TraceDocument, TraceEvent

try:
    from traceviz.parse import _scan
except ImportError as exc:  # pragma: no cover - depends on the build
    _scan = None  # type: ignore[assignment]
    WHY_MISSING = (
        f"the C scanner traceviz.parse._scan is not built ({exc}); build it with "
        "`python setup.py build_ext --inplace` or `pip install -e .`"
    )
else:
    WHY_MISSING = ""

pytestmark = pytest.mark.skipif(_scan is None, reason=WHY_MISSING)

# The field lists, derived from the structs (the interface's order: top keys, then arg keys).
TOP_FIELDS = [f for f in msgspec.structs.fields(TraceEvent)]
ARG_FIELDS = list(msgspec.structs.fields(Args))
TOP_KEYS = tuple(f.encode_name for f in TOP_FIELDS)
ARG_KEYS = tuple(f.encode_name for f in ARG_FIELDS)
RAW_KEYS = frozenset(f.encode_name for f in ARG_FIELDS if f.type is msgspec.Raw)
N_FIELDS = len(TOP_KEYS) + len(ARG_KEYS)

ABSENT, NULL, INT, FLOAT, STR, RAW = range(6)
REFUSE = "msgspec gives a value the scanner must refuse"
EVENTS_DECODER = msgspec.json.Decoder(list[Event])
DOC_DECODER = msgspec.json.Decoder(TraceDocument)


def test_extension_is_not_older_than_its_source() -> None:
    """An in-place build left over from an older _scan.c would test the old scanner."""
    built = Path(_scan.__file__)
    source = built.with_name("_scan.c")
    if not source.exists():
        pytest.skip(f"no _scan.c beside {built}")
    assert built.stat().st_mtime >= source.stat().st_mtime, (
        f"{built.name} is older than _scan.c: rebuild it (`python setup.py build_ext --inplace`)"
    )


# ------------------------------------------------------------------------------------------
# Running the scanner and the oracle, into one comparable form:
# per field, a list over events of (kind, value) with value None (ABSENT, NULL), int (INT),
# the 8 bytes of the float64 (FLOAT: bit-equal), str (STR) or bytes (RAW).


def scan_raw(data: Any, batch: int = 3) -> tuple[list[bytes], list[bytes], list[str], list[bytes]]:
    """The scanner's whole answer for any buffer, read ``batch`` events at a time: per field
    the concatenated kinds and values, then the strings and raws lists. Checks the interface's
    shapes."""
    assert _scan is not None
    scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    assert scanner.events_end == -1
    kinds = [bytearray() for _ in range(N_FIELDS)]
    values = [bytearray() for _ in range(N_FIELDS)]
    while (got := scanner.next(batch)) is not None:
        n, batch_kinds, batch_values = got
        assert 1 <= n <= batch
        assert len(batch_kinds) == len(batch_values) == N_FIELDS
        for j in range(N_FIELDS):
            assert len(batch_kinds[j]) == n and len(batch_values[j]) == 8 * n
            kinds[j] += batch_kinds[j]
            values[j] += batch_values[j]
    assert scanner.next(batch) is None  # stays exhausted
    assert 0 <= scanner.events_start < scanner.events_end <= len(data)
    assert bytes(data[scanner.events_start : scanner.events_start + 1]) == b"["
    assert bytes(data[scanner.events_end - 1 : scanner.events_end]) == b"]"
    assert scanner.bare == (bytes(data).lstrip(b" \t\r\n")[:1] == b"[")
    strings, raws = scanner.strings, scanner.raws
    assert len(set(strings)) == len(strings) and len(set(raws)) == len(raws)
    return [bytes(k) for k in kinds], [bytes(v) for v in values], strings, raws


def columns(
    kinds: list[bytes], values: list[bytes], strings: list[str], raws: list[bytes]
) -> list[list[tuple[int, Any]]]:
    """The scanner's answer as per-field lists of (kind, value); every code must be valid."""
    out = []
    for j in range(N_FIELDS):
        column: list[tuple[int, Any]] = []
        for kind, (word,) in zip(kinds[j], struct.iter_unpack("=q", values[j]), strict=True):
            if kind in (ABSENT, NULL):
                assert word == 0
                column.append((kind, None))
            elif kind == INT:
                column.append((kind, word))
            elif kind == FLOAT:
                column.append((kind, struct.pack("=q", word)))
            elif kind == STR:
                assert 0 <= word < len(strings)
                column.append((kind, strings[word]))
            else:
                assert kind == RAW and 0 <= word < len(raws), kind
                column.append((kind, raws[word]))
        out.append(column)
    return out


def scan(data: bytes, batch: int) -> list[list[tuple[int, Any]]]:
    """The scanner's answer for the whole document as (kind, value) columns."""
    return columns(*scan_raw(data, batch))


def _oracle_value(value: Any, present: bool, default: Any) -> tuple[int, Any]:
    """(kind, value) for one field from msgspec's decoded value and json's presence."""
    if not present:
        assert type(value) is type(default) and value == default
        return (ABSENT, None)
    if isinstance(value, msgspec.Raw):
        return (RAW, bytes(value))
    if value is None:
        return (NULL, None)
    if type(value) is int:
        return (INT, value) if -(2**63) <= value < 2**63 else (-1, REFUSE)
    if type(value) is float:
        return (FLOAT, struct.pack("=d", value))
    if type(value) is str:
        return (STR, value)
    return (-1, REFUSE)  # bool, list, dict: the scanner refuses these


def oracle(data: bytes) -> list[list[tuple[int, Any]]]:
    """msgspec's answer in the scanner's form (raises what msgspec raises)."""
    stripped = data.lstrip(b" \t\r\n")
    events = (
        EVENTS_DECODER.decode(data)
        if stripped[:1] == b"["
        else DOC_DECODER.decode(data).traceEvents
    )
    plain = json.loads(data)
    plain_events = plain if isinstance(plain, list) else plain["traceEvents"]
    assert len(plain_events) == len(events)
    columns: list[list[tuple[int, Any]]] = [[] for _ in range(N_FIELDS)]
    for event, raw_event in zip(events, plain_events, strict=True):
        raw_args = raw_event.get("args", {})
        for j, f in enumerate(TOP_FIELDS):
            columns[j].append(
                _oracle_value(getattr(event, f.name), f.encode_name in raw_event, f.default)
            )
        for k, f in enumerate(ARG_FIELDS):
            columns[len(TOP_FIELDS) + k].append(
                _oracle_value(getattr(event.args, f.name), f.encode_name in raw_args, f.default)
            )
    return columns


def assert_same(got: list[list[tuple[int, Any]]], want: list[list[tuple[int, Any]]]) -> None:
    """Field by field, event by event; names the first difference."""
    keys = TOP_KEYS + ARG_KEYS
    for j in range(N_FIELDS):
        if got[j] != want[j]:
            i = next(i for i, (a, b) in enumerate(zip(got[j], want[j], strict=True)) if a != b)
            raise AssertionError(
                f"field {keys[j]!r}, event {i}: scanner {got[j][i]} != {want[j][i]}"
            )


def read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def real_traces() -> list[Any]:
    files = corpus_files() + sorted(SAMPLES.rglob("*.json.gz"))
    return [pytest.param(p, id=str(p)) for p in files] or [
        pytest.param(None, marks=pytest.mark.skip(reason=f"no traces at {CORPUS} or {SAMPLES}"))
    ]


# ------------------------------------------------------------------------------------------
# Real traces.


@pytest.mark.parametrize("path", real_traces())
def test_real_trace_equals_msgspec_in_every_batch_size(path: Path) -> None:
    """Every corpus trace and sample trace: the scanner's columns equal msgspec's decode, field
    by field (kind and value, floats bit-equal), and batches of 1, 7 and 32768 events give the
    same bytes. None of these files is refused today (a refused one would fall back to the
    Python path, which msgspec's decode in the oracle stands for)."""
    data = read(path)
    want = oracle(data)
    try:
        whole = scan_raw(data, 32768)
    except _scan.Unsupported as err:
        pytest.fail(f"the scanner refuses {path} ({err}); every real trace scans today")
    assert_same(columns(*whole), want)
    assert scan_raw(data, 7) == whole
    assert scan_raw(data, 1) == whole


def test_object_and_bare_array_documents_scan_alike() -> None:
    """The same events as an indented object document (a header after the events too) and as a
    compact bare array: each equals msgspec; non-raw columns are equal between the two (raw
    texts keep their inner whitespace, so those differ); bare says which is which."""
    doc = json.loads(read(SAMPLES / "block" / "compiled.pt.trace.json.gz"))
    events = doc.pop("traceEvents")
    as_object = json.dumps({**doc, "traceEvents": events, "after": [1, {"x": None}]}, indent=1)
    as_array = json.dumps(events, separators=(",", ":"))
    got_object, got_array = scan(as_object.encode(), 5), scan(as_array.encode(), 5)
    assert got_object == oracle(as_object.encode())
    assert got_array == oracle(as_array.encode())
    raw = {j for j, k in enumerate(TOP_KEYS + ARG_KEYS) if k in RAW_KEYS}
    assert [c for j, c in enumerate(got_object) if j not in raw] == [
        c for j, c in enumerate(got_array) if j not in raw
    ]
    assert any(kind == RAW for j in raw for kind, _ in got_object[j])
    scanner = _scan.Scanner(as_array.encode(), TOP_KEYS, ARG_KEYS, RAW_KEYS)
    assert scanner.bare and scanner.events_start == 0
    scanner = _scan.Scanner(as_object.encode(), TOP_KEYS, ARG_KEYS, RAW_KEYS)
    assert not scanner.bare
    assert as_object[: scanner.events_start + 1].endswith('"traceEvents": [')


# ------------------------------------------------------------------------------------------
# Hand-made documents: what each kind holds.


def scan_events(text: str | bytes, batch: int = 32768) -> list[list[tuple[int, Any]]]:
    data = text.encode() if isinstance(text, str) else text
    return scan(data, batch)


def field(name: str, *, arg: bool = False) -> int:
    return (len(TOP_KEYS) + ARG_KEYS.index(name)) if arg else TOP_KEYS.index(name)


def test_kinds_and_values_by_hand() -> None:
    text = (
        '[{"ph":"X","ts":1.5,"dur":7,"pid":null,"name":"a\\u00e9\\ud83d\\ude00\\n\\"",'
        '"args":{"grid":[1, 2 ,3],"External id":-9223372036854775808,"kind":null,"Input type":null,'
        '"name":{"nested":[true]}}},'
        ' {"ph":"X","ts":-0.0,"dur":1e2,"cat":"é😀","args":{"grid":[1, 2 ,3],"bytes":"N/A"}}]'
    )
    with pytest.raises(_scan.Unsupported, match="true, false, an array or an object"):
        scan_events(text)  # args "name" is Any: an object there is refused
    text = text.replace('{"nested":[true]}', '"label"')
    got = scan_events(text)
    assert got == oracle(text.encode())
    assert got[field("ts")] == [(FLOAT, struct.pack("=d", 1.5)), (FLOAT, struct.pack("=d", -0.0))]
    assert got[field("dur")] == [(INT, 7), (FLOAT, struct.pack("=d", 100.0))]
    assert got[field("pid")] == [(NULL, None), (ABSENT, None)]
    assert got[field("name")][0] == (STR, 'aé\U0001f600\n"')
    assert got[field("cat")] == [(ABSENT, None), (STR, "é😀")]
    assert got[field("grid", arg=True)] == [(RAW, b"[1, 2 ,3]")] * 2
    assert got[field("Input type", arg=True)] == [(RAW, b"null"), (ABSENT, None)]
    assert got[field("External id", arg=True)] == [(INT, -(2**63)), (ABSENT, None)]
    assert got[field("kind", arg=True)] == [(NULL, None), (ABSENT, None)]
    assert got[field("bytes", arg=True)] == [(ABSENT, None), (STR, "N/A")]
    assert got[field("name", arg=True)] == [(STR, "label"), (ABSENT, None)]


def test_codes_are_shared_in_order_of_first_appearance() -> None:
    """Equal decoded texts share one code across fields, whatever their escaping."""
    text = '[{"ph":"X","cat":"b","name":"\\u0058"},{"ph":"b","args":{"kernel_file":"X"}}]'
    scanner = _scan.Scanner(text.encode(), TOP_KEYS, ARG_KEYS, RAW_KEYS)
    n, kinds, values = scanner.next(10)
    assert n == 2 and scanner.strings == ["X", "b"]
    codes = {j: struct.unpack("=2q", values[j]) for j in range(N_FIELDS) if any(kinds[j])}
    assert codes[field("ph")] == (0, 1)
    assert codes[field("cat")][0] == 1 and codes[field("name")][0] == 0
    assert codes[field("kernel_file", arg=True)][1] == 0
    assert scanner.next(10) is None and scanner.events_end == len(text)


def test_empty_events_and_empty_objects() -> None:
    for text in ('{"traceEvents":[]}', "[]", " [ ] ", '{"a":1,"traceEvents":[ ],"b":{}}'):
        scanner = _scan.Scanner(text.encode(), TOP_KEYS, ARG_KEYS, RAW_KEYS)
        assert scanner.next(5) is None
        assert text[scanner.events_end - 1] == "]" and text[scanner.events_start] == "["
    got = scan_events('[{},{"args":{}}]')
    assert all(column == [(ABSENT, None)] * 2 for column in got)


def test_numbers_convert_like_python_float() -> None:
    """Float texts on both sides of the exact fast path: bit-equal to float(text)."""
    texts = [
        "0.1", "1e22", "1e23", "9007199254740993.0", "123456789012345.6", "1234567890123456.7",
        "0.000000000000000000000000000001", "1.7976931348623157e308", "2.2250738585072014e-308",
        "4.9e-324", "1e-400", "-0e0", "0E+5", "1.5e-22", "12345678901234567890123e-3",
        "0." + "0" * 400 + "1e400", "1" + "0" * 300 + ".5e-300", "7e0000000000000000000001",
    ]  # fmt: skip
    text = "[" + ",".join(f'{{"ts":{t}}}' for t in texts) + "]"
    got = scan_events(text)[field("ts")]
    assert got == [(FLOAT, struct.pack("=d", float(t))) for t in texts]
    assert got == oracle(text.encode())[field("ts")]
    ints = ["0", "-0", "9223372036854775807", "-9223372036854775808", "10", "-1"]
    text = "[" + ",".join(f'{{"ts":{t}}}' for t in ints) + "]"
    assert scan_events(text)[field("ts")] == [(INT, int(t)) for t in ints]


# ------------------------------------------------------------------------------------------
# Each Unsupported rule, with the byte offset in the message.


def refused(text: str | bytes, batch: int = 32768) -> str:
    """The message of the Unsupported the scanner raises for this document."""
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(_scan.Unsupported) as info:
        scan(data, batch)
    return str(info.value)


UNSUPPORTED_CASES = [
    # (document, the message, the byte offset it names)
    ('[{"ts":1,}]', "expected a key", 9),
    ('[{"ts" 1}]', "expected ':'", 7),
    ('[{"ts":01}]', "leading zero", 7),
    ('[{"ts":1.}]', "fraction", 7),
    ('[{"ts":1e}]', "exponent", 7),
    ('[{"ts":-}]', "invalid number", 7),
    ('[{"ts":NaN}]', "invalid JSON value", 7),
    ('[{"zz":Infinity}]', "invalid JSON value", 7),
    ('[{"ts":"a\tb"}]', "control character in a string", 9),
    ('[{"zz":"a\\x"}]', "invalid escape in a string", 9),
    ('[{"zz":"\\u12G4"}]', "invalid \\u escape", 8),
    ('[{"zz":"\\ud800x"}]', "lone high surrogate", 8),
    ('[{"zz":"\\udc00"}]', "lone low surrogate", 8),
    ('[{"zz":"\\ud800\\u0041"}]', "lone high surrogate", 8),
    (b'[{"zz":"\xff"}]', "invalid UTF-8 in a string", 8),
    (b'[{"zz":"\xed\xa0\x80"}]', "invalid UTF-8 in a string", 8),
    (b'[{"zz":"\xc0\xaf"}]', "invalid UTF-8 in a string", 8),
    (b'[{"zz":"\xf4\x90\x80\x80"}]', "invalid UTF-8 in a string", 8),
    (b'[{"ph":"\xe2\x82"}]', "invalid UTF-8 in a string", 8),
    (b'{"a":"\xe2\x82', "truncated UTF-8 in a string", 6),
    ('[{"zz":"abc}]', "unterminated string", 7),
    ("[{}] x", "trailing data after the document", 5),
    ("[{}],", "trailing data after the document", 4),
    ('[{"zz":' + "[" * 260 + "]" * 260 + "}]", "nesting deeper than 256 levels", 261),
    ("42", "neither an array nor an object", 0),
    ('"x"', "neither an array nor an object", 0),
    ("", "neither an array nor an object", 0),
    ('{"a":1}', 'no "traceEvents" key', 6),
    ("{}", 'no "traceEvents" key', 1),
    ('{"traceEvents":{}}', '"traceEvents" is not an array', 15),
    ('{"traceEvents":[],"traceEvents":[]}', '"traceEvents" twice', 19),
    ('{"traceEvents":[1]}', "not an object", 16),
    ("[[]]", "not an object", 1),
    ('[{"ts":true}]', "true, false, an array or an object", 7),
    ('[{"ph":false}]', "true, false, an array or an object", 7),
    ('[{"name":[1]}]', "true, false, an array or an object", 9),
    ('[{"pid":{}}]', "true, false, an array or an object", 8),
    ('[{"ts":9223372036854775808}]', "integer outside int64", 7),
    ('[{"ts":-9223372036854775809}]', "integer outside int64", 7),
    ('[{"ts":1e400}]', "out of the float range", 7),
    ('[{"ts":-1e309}]', "out of the float range", 7),
    ('{"schemaVersion":1e400,"traceEvents":[]}', "out of the float range", 17),
    ('{"traceEvents":[],"z":[99999999999999999999]}', "integer outside int64", 23),
    ('[{"args":null}]', '"args" is not an object', 9),
    ('[{"args":[1]}]', '"args" is not an object', 9),
    ('[{"ph":"X","ph":"X"}]', "a known key twice", 16),
    ('[{"args":{"stream":1,"stream":2}}]', "a known key twice", 30),
    ('[{"args":{},"args":{}}]', '"args" twice', 19),
    ('[{"p\\u0068":"X"}]', "escaped key", 2),
    ('[{"args":{"strea\\u006d":1}}]', "escaped key", 10),
    ('{"trace\\u0045vents":[]}', "escaped key", 1),
    ("[{}{}]", "expected ',' or ']'", 3),
    ('[{"a":1 "b":2}]', "expected ',' or '}'", 8),
    ("[{}", "expected ',' or ']'", 3),
    ('[{"ts":nul}]', "invalid JSON value", 7),
]


@pytest.mark.parametrize(("text", "message", "offset"), UNSUPPORTED_CASES)
def test_each_unsupported_rule_names_what_and_where(
    text: str | bytes, message: str, offset: int
) -> None:
    got = refused(text)
    assert message in got and got.endswith(f"at byte {offset}"), got


def test_whitespace_is_json_whitespace_only() -> None:
    assert scan_events(' \t\r\n[ \t\r\n{ "ph" : "X" } \t\r\n] \t\r\n')[0] == [(STR, "X")]
    for ws in ("\x0b", "\x0c", "\xa0", "\u2028"):
        assert "at byte" in refused(f'[{ws}{{"ph":"X"}}]')


def test_a_failed_scanner_stays_failed() -> None:
    """An Unsupported mid-array stops the scanner: later calls raise the same message."""
    scanner = _scan.Scanner(b'[{"ts":1},{"ts":true}]', TOP_KEYS, ARG_KEYS, RAW_KEYS)
    with pytest.raises(_scan.Unsupported) as first:
        scanner.next(10)
    with pytest.raises(_scan.Unsupported) as again:
        scanner.next(10)
    assert str(first.value) == str(again.value)
    assert scanner.events_end == -1


def test_bad_arguments_are_type_errors() -> None:
    good = (b"[]", TOP_KEYS, ARG_KEYS, RAW_KEYS)
    for args in [
        ("[]", *good[1:]),  # str is not a buffer
        (b"[]", list(TOP_KEYS), ARG_KEYS, RAW_KEYS),
        (b"[]", TOP_KEYS, ARG_KEYS, list(RAW_KEYS)),
        (b"[]", (*TOP_KEYS, 1), ARG_KEYS, RAW_KEYS),
        (b"[]", (*TOP_KEYS, "ph"), ARG_KEYS, RAW_KEYS),
        (b"[]", ("args",), ARG_KEYS, RAW_KEYS),
        (b"[]", ("grid",), ARG_KEYS, RAW_KEYS),  # only arg keys may be raw
    ]:
        with pytest.raises(TypeError):
            _scan.Scanner(*args)
    scanner = _scan.Scanner(*good)
    for bad in (0, -1, "3", 1.5):
        with pytest.raises(TypeError):
            scanner.next(bad)
    with pytest.raises(TypeError, match="once"):
        scanner.__init__(*good)  # type: ignore[misc]
    with pytest.raises(TypeError, match="not called"):
        _scan.Scanner.__new__(_scan.Scanner).next(1)


def test_buffers_of_every_kind_and_the_buffer_is_held() -> None:
    text = b'[{"ph":"X","ts":3}]'
    want = scan(text, 4)
    for data in (bytearray(text), memoryview(text), memoryview(b"xx" + text)[2:]):
        scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
        assert scanner.next(4) is not None
    held = bytearray(text)
    scanner = _scan.Scanner(held, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    with pytest.raises(BufferError):
        held.append(0)  # the scanner holds the buffer: it cannot be resized under it
    assert scanner.next(4) is not None
    assert want[field("ts")] == [(INT, 3)]
    del scanner
    held.append(0)  # released once collected


def test_two_scanners_at_once_do_not_share_state() -> None:
    a = b'[{"ph":"A"},{"ph":"B"}]'
    b = b'{"traceEvents":[{"ph":"B"},{"ph":"C"},{"ph":"A"}]}'
    sa = _scan.Scanner(a, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    sb = _scan.Scanner(b, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    assert sa.next(1)[0] == 1 and sb.next(2)[0] == 2
    assert sa.next(5)[0] == 1 and sb.next(5)[0] == 1
    assert sa.strings == ["A", "B"] and sb.strings == ["B", "C", "A"]


# ------------------------------------------------------------------------------------------
# Fuzz: random event lists, and byte mutations of small real traces.

# Keys: mostly printable ASCII (json.dumps escapes the others, and escaped keys are refused).
PLAIN_KEY = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\'), max_size=6
)
KEY_TEXT = st.one_of(
    PLAIN_KEY,
    PLAIN_KEY,
    PLAIN_KEY,
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6),
)
STRING = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
SCALAR = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    STRING,
    st.booleans(),
)
ANY_VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(KEY_TEXT, inner, max_size=3)
    ),
    max_leaves=6,
)
# Values known fields hold; a few that msgspec or the scanner refuse, so both sides are tried.
FIELD_VALUE = st.one_of(SCALAR, SCALAR, SCALAR, ANY_VALUE)
ARGS = st.dictionaries(st.one_of(st.sampled_from(ARG_KEYS), KEY_TEXT), FIELD_VALUE, max_size=6)
EVENT = st.dictionaries(
    st.one_of(st.sampled_from((*TOP_KEYS, "args", "args")), KEY_TEXT),
    FIELD_VALUE,
    max_size=8,
).flatmap(
    lambda ev: (
        st.just(ev)
        if "args" not in ev
        else st.one_of(ARGS, ANY_VALUE).map(lambda a: {**ev, "args": a})
    )
)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    events = draw(st.lists(EVENT, max_size=6))
    header = draw(
        st.dictionaries(KEY_TEXT.filter(lambda k: k != "traceEvents"), ANY_VALUE, max_size=2)
    )
    bare = draw(st.booleans())
    doc: Any = events if bare else {**header, "traceEvents": events}
    how = draw(st.sampled_from(["msgspec", "compact", "spaced", "indented", "ascii"]))
    if how == "msgspec":
        return msgspec.json.encode(doc)
    if how == "compact":
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    if how == "spaced":
        return json.dumps(doc, separators=(" , ", " : "), ensure_ascii=False).encode()
    if how == "indented":
        return json.dumps(doc, indent="\t\r", ensure_ascii=False).encode()
    return json.dumps(doc, ensure_ascii=True).encode()


def check_against_msgspec(data: bytes, batch: int) -> str:
    """The rule: where msgspec raises, the scanner raises Unsupported; where msgspec decodes,
    the scanner gives the same columns or raises Unsupported. Returns what happened."""
    try:
        want = oracle(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError):
        want = None
    try:
        got = scan(data, batch)
    except _scan.Unsupported:
        return "unsupported"
    assert want is not None, "the scanner gave an answer where msgspec raises"
    refuse = [(j, i) for j, col in enumerate(want) for i, kv in enumerate(col) if kv[1] == REFUSE]
    assert not refuse, f"the scanner accepted a value it must refuse: {refuse[:3]}"
    assert_same(got, want)
    return "same"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=documents(), batch=st.sampled_from([1, 2, 7, 32768]))
def test_fuzz_random_documents_equal_msgspec_or_unsupported(data: bytes, batch: int) -> None:
    check_against_msgspec(data, batch)


def test_fuzz_generator_mostly_scans() -> None:
    """The fuzz above is not vacuous: plain documents of its kind scan (no Unsupported)."""
    plain = [
        {"ph": "X", "name": "k\u00e9\U0001f600", "ts": 1.25, "dur": 3, "zz": [1, {"a": None}],
         "args": {"grid": [1, 1], "External id": 5, "name": "n", "other": {"x": [True]}}},
        {"args": {}, "pid": None, "tid": "str\\\"/\b\f\n\r\t\x01\x7f"},
    ]  # fmt: skip
    for encode in (
        msgspec.json.encode,
        lambda d: json.dumps(d).encode(),
        lambda d: json.dumps(d, indent=2, ensure_ascii=False).encode(),
    ):
        assert check_against_msgspec(encode(plain), 1) == "same"
        assert check_against_msgspec(encode({"a": [1.5], "traceEvents": plain}), 7) == "same"


def small_real_traces() -> list[bytes]:
    names = [
        "nvidia/v100_small_plain.json",
        "other/backward_thread_plain.json",
        "nvidia/a100_compiled_triton_tiny.json.gz",
        "other/large_integer_ids.json.gz",
    ]
    found = [read(CORPUS / n) for n in names if (CORPUS / n).exists()]
    # The sample traces are in the repository, so the mutation test always has ground.
    found.append(read(SAMPLES / "linear-add" / "eager.pt.trace.json.gz"))
    # Keep them small: the first events and the closing brackets of the document.
    small = []
    for data in found:
        doc = json.loads(data)
        if isinstance(doc, list):
            doc = doc[:12]
        else:
            doc["traceEvents"] = doc["traceEvents"][:12]
        small.append(json.dumps(doc, indent=1, ensure_ascii=False).encode())
        small.append(msgspec.json.encode(doc))
    return small


SMALL_TRACES = small_real_traces()
MUTATION_BYTES = st.sampled_from(
    [*b'{}[]",:\\ 0123456789.eE+-tfnuxa\x00\x1f\x7f', 0x80, 0xC3, 0xED, 0xF0, 0xFF]
)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SMALL_TRACES)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data) - 1))
        what = draw(st.sampled_from(["flip", "insert", "delete", "set"]))
        if what == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif what == "insert":
            data.insert(at, draw(MUTATION_BYTES))
        elif what == "delete":
            del data[at]
        else:
            data[at] = draw(MUTATION_BYTES)
    return bytes(data)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(), batch=st.sampled_from([1, 5, 32768]))
def test_fuzz_mutated_real_traces_never_differ_from_msgspec(data: bytes, batch: int) -> None:
    check_against_msgspec(data, batch)


def test_unmutated_small_traces_scan() -> None:
    assert SMALL_TRACES and all(check_against_msgspec(d, 3) == "same" for d in SMALL_TRACES)


def test_every_truncation_of_a_small_trace_is_refused() -> None:
    """Cut anywhere before its last bracket, a document is refused (never read past its end,
    never answered); only the whole document, less trailing whitespace, scans."""
    data = SMALL_TRACES[0]
    whole = data.rstrip()
    for cut in range(len(data) + 1):
        if cut >= len(whole):
            assert check_against_msgspec(data[:cut], 50) == "same"
        else:
            with pytest.raises(_scan.Unsupported):
                scan_raw(data[:cut], 50)


def test_no_memory_is_kept_after_scanners_are_gone() -> None:
    """Scanners that finish, fail mid-array, fail in the constructor or are dropped half-way
    leave nothing allocated behind (tables, key copies, batches, the buffer reference)."""
    import gc
    import tracemalloc

    good = SMALL_TRACES[0]
    bad_late = good.replace(b'"ph"', b'"ph":true,"x"', 3)
    docs = [good, bad_late, b'{"a":1}', b"[" + b'{"ph":"x"},' * 50]

    def churn() -> None:
        for data in docs:
            try:
                scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
                scanner.next(3)  # dropped half-way, or failing
                while scanner.next(3) is not None:
                    pass
            except _scan.Unsupported:
                pass

    churn()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            churn()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # One scan of these allocates tens of kB (intern tables alone are 10 kB); 100 rounds
    # leaking any of it would be megabytes.
    assert grown < 64_000, grown


# ------------------------------------------------------------------------------------------
# Buffer ends, exactness edge cases, the lists handed out, re-entrancy, allocation failures.


def test_a_buffer_is_read_to_its_own_end_only() -> None:
    """A memoryview slice of a larger buffer ends where the slice ends: the bytes after it
    (here the rest of a valid document) are never read, so every cut is refused; a slice that
    ends exactly after the document, and a buffer allocated to exactly its length (array: no
    NUL after it, an ASan build sees any overread), scan like the bytes."""
    import array

    doc = b'{"traceEvents":[{"ph":"X","ts":12,"name":"ab\\u00e9","args":{"grid":[1,2]}}],"z":7}'
    want = scan_raw(doc)
    assert columns(*want)[field("ts")] == [(INT, 12)]
    for tail in (b"", b"  ", b"garbage", b"]}"):
        assert scan_raw(memoryview(doc + tail)[: len(doc)]) == want
        assert scan_raw(memoryview(b"[" + doc + tail)[1 : len(doc) + 1]) == want
    assert scan_raw(array.array("B", doc)) == want
    for cut in range(len(doc)):
        for view in (memoryview(doc)[:cut], memoryview(bytearray(doc))[:cut]):
            with pytest.raises(_scan.Unsupported):
                scan_raw(view)
        with pytest.raises(_scan.Unsupported):
            scan_raw(array.array("B", doc[:cut]))


EDGE_EVENTS = [
    # floats: exponent forms, signed zeros, long mantissas, halfway cases, subnormals
    '{"ts":1E+0,"dur":1e-0}', '{"ts":-0.0,"dur":-0}', '{"ts":0e0,"dur":-0E-0}',
    '{"ts":0.1000000000000000055511151231257827021181583404541015625}',
    '{"ts":1.00000000000000011102230246251565404236316680908203125}',  # halfway: to even
    '{"ts":1.00000000000000011102230246251565404236316680908203126}',  # just above halfway
    '{"ts":9007199254740993e0,"dur":9007199254740993.000000000000000000001}',
    '{"ts":2.2250738585072011e-308,"dur":2.4703282292062327e-324}',
    '{"ts":2.4703282292062328e-324,"dur":4.9406564584124654e-324}',
    '{"ts":123456789012345678901234567890e-10,"dur":0.' + "0" * 30 + "123456789012345678e40}",
    '{"ts":' + "9" * 400 + "e-400}",
    # ints at the int64 edges
    '{"ts":-9223372036854775808,"dur":9223372036854775807,"pid":-0,"tid":0}',
    # keys that are prefixes or extensions of known keys are not taken
    '{"p":"1","pha":"2","nam":3,"name ":4,"ts0":5,"args":{"External":6,"External id ":7,'
    '"gri":8,"grids":9,"Input Dims2":[1]}}',
    # known keys inside nested unknown values are not taken
    '{"zz":{"ph":"Y","args":{"stream":9}},"ph":"X","args":{"zz":{"stream":8,"grid":[0]},'
    '"stream":7},"yy":[{"name":"no"}]}',
    # "args" before, between and after the other keys
    '{"args":{"stream":1},"ph":"A"}', '{"ph":"B","args":{"stream":2},"ts":3}', '{"args":{}}',
    # whitespace everywhere, inside raw values too (kept as written)
    ' { "ph" : "W" , "args" : { "grid" : [ 1 ,\t2 ] ,\n"stream"\r: 4 } , "ts" : 5.5 } ',
    # NUL and other escapes in strings and in raw texts
    '{"name":"a\\u0000b","cat":"\\u0000","args":{"Input type":"\\u0000","kernel_file":"\\/"}}',
]  # fmt: skip


@pytest.mark.parametrize("document", ["[{}]", '{"traceEvents":[{}]}'])
def test_edge_cases_equal_msgspec(document: str) -> None:
    text = document.replace("{}", ",".join(EDGE_EVENTS))
    got = scan_events(text, batch=4)
    assert_same(got, oracle(text.encode()))
    ts = [value for kind, value in got[field("ts")] if kind == FLOAT]
    assert struct.pack("=d", -0.0) in ts and struct.pack("=d", 5e-324) in ts
    assert got[field("pid")][11] == (INT, 0) and got[field("name")][-1] == (STR, "a\x00b")
    assert got[field("stream", arg=True)][13:16] == [(INT, 7), (INT, 1), (INT, 2)]
    assert got[field("grid", arg=True)][17] == (RAW, b"[ 1 ,\t2 ]")


def test_the_lists_handed_out_cannot_change_later_codes() -> None:
    """strings and raws are copies: a caller clearing or filling them changes nothing the
    scanner gives later (codes stay indices into the next copy)."""
    text = (
        '[{"ph":"A","args":{"grid":[1]}},{"ph":"B","args":{"grid":[2]}},'
        '{"ph":"A","args":{"grid":[1]}},{"ph":"C","args":{"grid":[3]}}]'
    )
    scanner = _scan.Scanner(text.encode(), TOP_KEYS, ARG_KEYS, RAW_KEYS)
    seen = []
    while (got := scanner.next(1)) is not None:
        ph = struct.unpack("=q", got[2][field("ph")])[0]
        grid = struct.unpack("=q", got[2][field("grid", arg=True)])[0]
        seen.append((scanner.strings[ph], scanner.raws[grid]))
        for values in (scanner.strings, scanner.raws):
            values.clear()
            values.append(values)  # even a cycle through a list handed out is harmless
    assert seen == [("A", b"[1]"), ("B", b"[2]"), ("A", b"[1]"), ("C", b"[3]")]
    assert scanner.strings == ["A", "B", "C"] and scanner.raws == [b"[1]", b"[2]", b"[3]"]
    assert scanner.strings is not scanner.strings


REENTRY = """
import gc, importlib.util, sys
spec = importlib.util.spec_from_file_location("traceviz.parse._scan", sys.argv[1])
_scan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_scan)
data = ("[" + ",".join('{"ph":"X","name":"n%d"}' % i for i in range(50)) + "]").encode()
scanner = _scan.Scanner(data, ("ph", "name"), (), frozenset())
inside, inner = [False], []

def collecting(phase, info):  # runs inside next() when an allocation there starts a collection
    if phase == "start" and inside[0]:
        try:
            inner.append(scanner.next(2))
        except RuntimeError as err:
            inner.append(str(err))

gc.callbacks.append(collecting)
events, hold = 0, []
while True:
    hold.append([[] for _ in range(100)])  # an empty list free list: next() allocates anew
    gc.set_threshold(1)
    inside[0] = True
    got = scanner.next(7)
    inside[0] = False
    gc.set_threshold(700)
    if got is None:
        break
    events += got[0]
print(events, len(scanner.strings), sorted(set(map(str, inner))))
"""


def test_next_from_inside_next_is_refused() -> None:
    """A gc callback (or a finalizer, or a thread it lets in) that calls next() while next()
    is building its result must not scan into the half-handed-over batch (it crashed)."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", REENTRY, _scan.__file__],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    events, strings, inner = run.stdout.split(maxsplit=2)
    assert (events, strings) == ("50", "51"), run.stdout  # nothing lost, nothing twice
    refused = "['Scanner.next is already running']"
    # From 3.12 a collection waits for the interpreter's next check, outside next().
    assert (
        inner.strip() == refused if sys.version_info < (3, 12) else inner.strip() in (refused, "[]")
    )


def test_allocation_failures_raise_memory_error_and_stop_the_scanner() -> None:
    """Every allocation of __init__ and next() failed in turn (_testcapi.set_nomemory): a
    MemoryError, never a crash; a scanner that failed refuses to go on (the failed batch's
    events are lost, so going on would skip them); one that did not fail gives the whole answer."""
    _testcapi = pytest.importorskip("_testcapi")
    doc = (
        b'{"a":[1.5,"x"],"traceEvents":[{"ph":"X","name":"n\\u00e9","ts":1.25e-300,'
        b'"args":{"grid":[1],"stream":7}},{"ph":"X","name":"m","args":{"grid":[2]}},'
        b'{"ph":"i","name":"n\\u00e9","ts":3}],"b":{}}'
    )
    want = scan_raw(doc, 2)
    args = (doc, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    outcomes = set()
    for start in range(1, 400):
        try:
            _testcapi.set_nomemory(start, 0)
            try:
                scanner = _scan.Scanner(*args)
            finally:
                _testcapi.remove_mem_hooks()
        except MemoryError:
            outcomes.add("init")
            continue
        batches = []
        while True:
            try:
                _testcapi.set_nomemory(start, 0)
                try:
                    got = scanner.next(2)
                finally:
                    _testcapi.remove_mem_hooks()
            except MemoryError:
                outcomes.add("next")
                with pytest.raises(_scan.Unsupported, match="failed earlier"):
                    scanner.next(2)
                break
            if got is None:
                outcomes.add("whole")
                kinds = [b"".join(b[1][j] for b in batches) for j in range(N_FIELDS)]
                values = [b"".join(b[2][j] for b in batches) for j in range(N_FIELDS)]
                assert (kinds, values, scanner.strings, scanner.raws) == want
                break
            batches.append(got)
    assert outcomes == {"init", "next", "whole"}


# ------------------------------------------------------------------------------------------
# Without the GIL: Scanner.next lets other threads run while it scans, so two traces load at
# once on two cores (the two sides of a comparison). Scanners in threads give exactly what they
# give one after another; Python code runs during a scan; a second next() on a busy scanner is
# refused and no event is lost or given twice; the slow-path floats (read by strtod in the "C"
# locale, not PyOS_string_to_double, which needs the GIL) are bit-equal to Python's float.


def _documents() -> list[bytes]:
    """The sample run traces and the corpus traces under 40 MB (the largest scans run longest,
    so the threads overlap)."""
    paths = sorted(SAMPLES.glob("*/*.pt.trace.json*")) + corpus_files()
    docs = [read(p) for p in paths if p.stat().st_size < 40_000_000]
    return sorted(docs, key=len, reverse=True)[:12]


def test_scanners_in_threads_equal_one_after_another() -> None:
    docs = _documents()
    assert len(docs) >= 8
    expected = [scan_raw(d, 4096) for d in docs]
    got: list[Any] = [None] * len(docs)

    def work(i: int) -> None:
        try:
            got[i] = scan_raw(docs[i], 4096)
        except BaseException as err:  # reported by the assert below
            got[i] = err

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(docs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"document {i} ({len(docs[i]):,} bytes) differs in a thread"


def _big_document(events: int = 200_000) -> bytes:
    rows = ",".join(
        f'{{"ph":"X","name":"k{i % 50}","pid":1,"tid":2,"ts":{1000 + i}.125,"dur":1.5}}'
        for i in range(events)
    )
    return f'{{"traceEvents":[{rows}]}}'.encode()


def _ran_during_scan(data: bytes) -> bool:
    """Whether a thread woken just before the scan ran while this thread scanned ``data``.

    With a switch interval of 100 s the interpreter never takes the GIL from the thread that
    holds it, and this thread makes no blocking call between next() calls, so the other thread
    can run only while next() has released the GIL."""
    scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    go = threading.Event()
    ran: list[bool] = []

    def other() -> None:
        go.wait()
        ran.append(True)

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)  # before the thread waits for the GIL with the old interval
    thread = threading.Thread(target=other)
    try:
        thread.start()
        go.set()
        while scanner.next(20_000) is not None:
            pass
        return bool(ran)
    finally:
        sys.setswitchinterval(old)
        go.set()
        thread.join(timeout=60)


def test_next_lets_python_threads_run_while_it_scans() -> None:
    """Up to five whole scans (on a busy machine the woken thread may not get a core during
    one); a scanner that holds the GIL fails all five."""
    data = _big_document()
    assert any(_ran_during_scan(data) for _ in range(5)), "no thread ran during next()"


def test_a_busy_scanner_refuses_next_from_another_thread_and_loses_nothing() -> None:
    data = _big_document(100_000)
    scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    counts: list[int] = []
    errors: list[str] = []
    done = threading.Event()

    def pull(batch: int) -> None:
        while not done.is_set():
            try:
                got = scanner.next(batch)
            except RuntimeError as err:
                errors.append(str(err))
                time.sleep(0.0005)  # give the GIL back: the busy one needs it to finish
                continue
            if got is None:
                done.set()
                return
            counts.append(got[0])

    threads = [threading.Thread(target=pull, args=(b,)) for b in (97, 1000, 5000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sum(counts) == 100_000  # every event once
    assert set(errors) <= {"Scanner.next is already running"}
    assert scanner.strings == ["X"] + [f"k{i}" for i in range(50)]


def test_slow_path_floats_equal_python_float() -> None:
    """More than 15 significant digits or a large exponent: strtod in the "C" locale, bit-equal
    to float() (both round correctly) over random texts, e.g. Kineto's 16-digit timestamps."""
    rng = random.Random(14)
    texts = []
    for _ in range(20_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(16, 30)))
        point = rng.randint(1, len(digits) - 1)
        exponent = rng.choice(["", f"e{rng.randint(-330, 300)}", f"E+{rng.randint(0, 20)}"])
        sign = rng.choice(["", "-"])
        texts.append(f"{sign}{digits[:point].lstrip('0') or '0'}.{digits[point:]}{exponent}")
    texts = [t for t in texts if abs(float(t)) != float("inf")]
    text = "[" + ",".join(f'{{"ts":{t}}}' for t in texts) + "]"
    got = scan_events(text)[field("ts")]
    assert got == [(FLOAT, struct.pack("=d", float(t))) for t in texts]


def test_room_grows_with_the_gil_between_stretches() -> None:
    """One batch larger than its first room (FIRST_CAP = 131,072 events) stops scanning to
    grow it with the GIL held, then goes on: the same columns as in small batches."""
    data = _big_document(140_000)
    assert _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS).next(200_000)[0] == 140_000
    assert scan_raw(data, 200_000) == scan_raw(data, 9_999)
