"""The rendered-output cache writes the very bytes of an uncached render: on every sample run
(CPU and H200) and a corpus pair, for the text drawing on a pipe at several widths, on
terminals (256 colours, true colour, NO_COLOR, dumb) and into a file (-o), and for the text
formats; the stored output is what was written; the drawing does not depend on the
console's height (which the key leaves out)."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace
from traceviz import pipeline, settings
from traceviz.analysis.summary import summarize
from traceviz.commands import output_cache
from traceviz.commands.output import emit
from traceviz.diagnose import diagnose_trace
from traceviz.report.bundle import Report
from traceviz.report.formats import renderer

RUNS = sorted(p.parent for p in [*SAMPLES.glob("*/run.json"), *SAMPLES.glob("h200/*/run.json")])
CORPUS_PAIR = (
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
)
CASES = [str(run.relative_to(SAMPLES)) for run in RUNS] + ["corpus-a100"]

#: Console settings: (environment, written to a file?).
SCENARIOS: dict[str, tuple[dict[str, str], bool]] = {
    "pipe-60": ({"COLUMNS": "60"}, False),
    "pipe-100": ({"COLUMNS": "100"}, False),
    "pipe-200": ({"COLUMNS": "200"}, False),
    "tty-256": ({"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "120"}, False),
    "tty-truecolor": ({"FORCE_COLOR": "1", "COLORTERM": "truecolor", "COLUMNS": "80"}, False),
    "tty-no-color": ({"FORCE_COLOR": "1", "NO_COLOR": "1", "COLUMNS": "100"}, False),
    "tty-dumb": ({"FORCE_COLOR": "1", "TERM": "dumb"}, False),
    "file": ({}, True),
    "file-forced-colour": ({"FORCE_COLOR": "1", "TERM": "xterm"}, True),
}
# A terminal hyperlink's id is random per render (rich's Style); the rest must be identical.
LINK_ID = re.compile(r"\x1b\]8;id=[^;]*;")


def _report(case: str) -> Report:
    if case == "corpus-a100":
        if not CORPUS_PAIR[0].is_file():
            pytest.skip(f"corpus not found at {CORPUS}")
        return pipeline.compare(*CORPUS_PAIR, names=("eager", "compiled"), force=True)
    return pipeline.compare_run(SAMPLES / case)


def _written(
    write: Callable[[str | None], None],
    target: Path | None,
    capsys: pytest.CaptureFixture[str],
) -> str:
    write(None if target is None else str(target))
    out = capsys.readouterr().out
    if target is None:
        return out
    assert out == ""
    return target.read_text(encoding="utf-8")


def _set(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name in (*output_cache.RICH_ENVIRONMENT, "LINES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def _check(
    make: Callable[[], object],
    fmt: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    scenarios: dict[str, tuple[dict[str, str], bool]],
) -> None:
    """Old path (emit) and cached path (emit_cached, then the entry read back) agree."""
    monkeypatch.setenv(settings.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(settings.NO_CACHE_ENV, raising=False)
    for name, (env, to_file) in scenarios.items():
        _set(monkeypatch, env)
        target = tmp_path / f"{name}.out" if to_file else None
        old = _written(lambda path: emit(make(), path), target, capsys)  # type: ignore[arg-type]
        entry = output_cache._entry(
            "test", {"case": name}, fmt, 10, None if target is None else str(target)
        )
        assert entry is not None, name
        new = _written(
            lambda path: output_cache.emit_cached(make(), path, entry),  # type: ignore[arg-type]  # noqa: B023
            target,
            capsys,
        )
        assert LINK_ID.sub("", new) == LINK_ID.sub("", old), f"{name}: cached path differs"
        stored = entry.read()
        assert stored is not None and stored.text == new, f"{name}: stored output differs"
        assert old.strip(), name


@pytest.mark.parametrize("case", CASES)
def test_compare_text_is_byte_identical(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _report(case)
    top = 10 if len(case) % 2 else 3

    def make() -> object:
        return renderer("text").comparison(report, top=top)

    _check(make, "text", tmp_path, capsys, monkeypatch, SCENARIOS)


@pytest.mark.parametrize("case", CASES)
def test_compare_text_formats_are_byte_identical(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _report(case)
    html = case in ("graph-break", "h200/block") and importlib.util.find_spec("plotly") is not None
    formats = ["json", "markdown"] + (["html"] if html else [])  # html: the dashboard extra
    for fmt in formats:
        _check(lambda: renderer(fmt).comparison(report, top=10), fmt, tmp_path, capsys,  # noqa: B023
               monkeypatch, {"pipe": ({}, False), "file": ({}, True)})  # fmt: skip


@pytest.mark.parametrize("case", ["pointwise", "h200/attention-train", "graph-break"])
def test_summary_text_is_byte_identical(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(SAMPLES / case / "compiled.pt.trace.json.gz")
    summary, findings = summarize(trace, top=5), diagnose_trace(trace)
    for fmt in ("text", "json"):
        _check(lambda: renderer(fmt).summary(summary, findings), fmt, tmp_path, capsys,  # noqa: B023
               monkeypatch, {k: v for k, v in SCENARIOS.items() if not v[1]})  # fmt: skip


@pytest.mark.parametrize("case", ["graph-break", "h200/block", "corpus-a100"])
def test_the_drawing_does_not_depend_on_the_height(
    case: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _report(case)
    drawn = set()
    for lines in ("5", "24", "400"):
        _set(monkeypatch, {"COLUMNS": "100", "LINES": lines, "FORCE_COLOR": "1"})
        emit(renderer("text").comparison(report, top=10), None)
        drawn.add(LINK_ID.sub("", capsys.readouterr().out))
    assert len(drawn) == 1
