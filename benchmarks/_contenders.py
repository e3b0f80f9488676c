"""One benchmark contender, run once in a fresh process: ``python _contenders.py NAME PATH``.

``benchmarks/parse.py`` starts this file once per measurement, with the interpreter the
contender needs (HolisticTraceAnalysis lives in its own virtual environment), and reads its
peak RSS from ``os.wait4``. Only the standard library is imported at the top, so any of those
interpreters can run it; each contender imports what it measures inside its function.

Each contender takes the trace path and returns ``(rows, detail)``: a count that shows the
work was done and a short description of the result. The time measured is that call alone
(from the path to the parsed result, file read included); interpreter start-up and the
imports are excluded, since each contender's imports are done before the clock starts.

The last stdout line is one JSON object: ``seconds`` (wall), ``cpu_seconds`` (this process's
CPU time over the same call, all threads), ``rows``, ``detail``,
``rss_after_import_kb``; or ``error`` and ``kind`` ("unavailable" when the contender cannot
run here, "failed" when it ran and raised).
"""

import json
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

Result = tuple[int, str]


class Unavailable(Exception):
    """The contender cannot run in this interpreter (a missing package or function)."""


def _io(path: str) -> tuple[Callable[[], Result], str]:
    def run() -> Result:
        data = Path(path).read_bytes()
        return len(data), f"{len(data) / 1e6:.1f} MB read"

    return run, "Path.read_bytes()"


def _orjson(path: str) -> tuple[Callable[[], Result], str]:
    try:
        import orjson
    except ImportError as err:
        raise Unavailable(f"orjson is not installed: {err}") from err

    def run() -> Result:
        doc = orjson.loads(Path(path).read_bytes())
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        return len(events), "dicts and lists"

    return run, f"orjson {orjson.__version__}"


def _typed_decoder() -> Any:
    """msgspec decoder: every event as a Struct of the Chrome top-level fields, args a dict."""
    try:
        import msgspec
    except ImportError as err:
        raise Unavailable(f"msgspec is not installed: {err}") from err

    class Event(msgspec.Struct):
        ph: str = ""
        cat: str | None = None
        name: str = ""
        pid: int | str = 0
        tid: int | str = 0
        ts: float | None = None
        dur: float | None = None
        id: int | str | None = None
        args: dict[str, Any] | None = None

    class Document(msgspec.Struct):
        traceEvents: list[Event]  # other top-level keys are parsed and skipped

    return msgspec.json.Decoder(Document), msgspec.__version__


def _msgspec_typed(path: str) -> tuple[Callable[[], Result], str]:
    decoder, version = _typed_decoder()

    def run() -> Result:
        doc = decoder.decode(Path(path).read_bytes())
        return len(doc.traceEvents), "Struct per event, args dict"

    return run, f"msgspec {version}"


def _msgspec_typed_nogc(path: str) -> tuple[Callable[[], Result], str]:
    import gc

    decoder, version = _typed_decoder()

    def run() -> Result:
        gc.disable()
        try:
            doc = decoder.decode(Path(path).read_bytes())
        finally:
            gc.enable()
        return len(doc.traceEvents), "as msgspec-typed, cyclic GC off during decode"

    return run, f"msgspec {version}"


def _traceviz_load(path: str) -> tuple[Callable[[], Result], str]:
    try:
        import traceviz
        from traceviz.parse import load_trace  # noqa: F401  (what traceviz.load calls)
    except (ImportError, AttributeError) as err:
        raise Unavailable(f"traceviz.load is not available yet: {err}") from err

    def run() -> Result:
        # The parse itself: the automatic parse cache (issue 14) neither read nor written.
        trace = traceviz.load(path, cache=False)
        tables = trace.tables()
        detail = ", ".join(f"{name} {len(table):,}" for name, table in tables.items() if len(table))
        return int(trace.stats.events_in), detail

    import pandas as pd

    from traceviz.parse import native

    way = "native scanner" if native.scanner_module() is not None else "Python path"
    # pandas imports pyarrow at its own import whenever it is installed: say which it was.
    arrow = sys.modules.get("pyarrow")
    with_arrow = f"pyarrow {arrow.__version__}" if arrow is not None else "no pyarrow"
    return run, f"traceviz {traceviz.__version__} ({way}), pandas {pd.__version__}, {with_arrow}"


def _traceviz_python(path: str) -> tuple[Callable[[], Result], str]:
    """traceviz.load the Python way (msgspec structs): the native scanner turned off."""
    os.environ["TRACEVIZ_NATIVE"] = "0"  # this contender's own process
    return _traceviz_load(path)


def _traceviz_decode(path: str) -> tuple[Callable[[], Result], str]:
    """The first phase of traceviz.load alone: read + msgspec decode into its own Event type."""
    import gc

    try:
        import traceviz
        from traceviz.parse.read import decode_events, read_bytes
    except ImportError as err:
        raise Unavailable(f"traceviz.parse.read is not available: {err}") from err

    def run() -> Result:
        source = Path(path)
        gc.disable()  # as traceviz.load does
        try:
            events, _ = decode_events(source, read_bytes(source))
        finally:
            gc.enable()
        return len(events), "traceviz.parse.events.Event per event (GC off)"

    return run, f"traceviz {traceviz.__version__}"


def _hta(path: str, backend: str | None) -> tuple[Callable[[], Result], str]:
    try:
        import pandas as pd
        from hta.common.trace import Trace
        from hta.configs.parser_config import ParserBackend, ParserConfig
    except ImportError as err:
        raise Unavailable(f"HolisticTraceAnalysis is not installed here: {err}") from err
    from importlib.metadata import version

    cfg = ParserConfig.get_default_cfg()
    if backend is not None:
        if backend == "ijson_batch_and_compress":
            try:
                import ijson
            except ImportError as err:
                raise Unavailable(f"ijson is not installed: {err}") from err
            if "yajl" not in ijson.backend:
                raise Unavailable(f"ijson backend is {ijson.backend}, not yajl2_c")
        cfg.set_parser_backend(ParserBackend(backend))

    trace_file = Path(path).resolve()

    def run() -> Result:
        # What hta.trace_analysis.TraceAnalysis(trace_files={0: ...}, trace_dir=...) does for one
        # rank: parse the file (one rank: no multiprocessing), align and filter, index by event.
        t = Trace(
            trace_files={0: trace_file.name}, trace_dir=str(trace_file.parent), parser_config=cfg
        )
        t.load_traces(include_last_profiler_step=False)
        df = t.get_trace(0)
        return len(df), f"one DataFrame, {len(df):,} rows x {df.shape[1]} cols"

    used = backend or "default (json)"
    arrow = (
        "pyarrow " + sys.modules["pyarrow"].__version__
        if "pyarrow" in sys.modules
        else "no pyarrow"
    )
    return run, (
        f"HTA {version('holistictraceanalysis')}, backend {used}, pandas {pd.__version__}, {arrow}"
    )


CONTENDERS: dict[str, Callable[[str], tuple[Callable[[], Result], str]]] = {
    "io": _io,
    "orjson": _orjson,
    "msgspec-typed": _msgspec_typed,
    "msgspec-typed-nogc": _msgspec_typed_nogc,
    "traceviz": _traceviz_load,
    "traceviz-python": _traceviz_python,
    "traceviz-core": _traceviz_load,  # run by the core install's interpreter (no pyarrow)
    "traceviz-cache": _traceviz_load,  # the path is the cache directory
    "traceviz-decode": _traceviz_decode,
    "hta": lambda path: _hta(path, None),
    "hta-pandas2": lambda path: _hta(path, None),  # the same, in a venv with pandas 2.x
    "hta-ijson": lambda path: _hta(path, "ijson_batch_and_compress"),
}


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.flush()
    print(json.dumps(record), flush=True)


def main(argv: list[str]) -> int:
    name, path = argv[1], argv[2]
    try:
        run, versions = CONTENDERS[name](path)
    except Unavailable as err:
        _emit({"error": str(err), "kind": "unavailable"})
        return 3
    rss_after_import_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        rows, detail = run()
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    except ImportError as err:  # a lazy import inside the library under test
        traceback.print_exc()
        _emit({"error": f"{type(err).__name__}: {err}", "kind": "unavailable"})
        return 3
    except Exception as err:
        traceback.print_exc()
        _emit({"error": f"{type(err).__name__}: {err}", "kind": "failed", "versions": versions})
        return 1
    _emit(
        {
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "rows": rows,
            "detail": detail,
            "versions": versions,
            "rss_after_import_kb": rss_after_import_kb,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
