"""The rendered-output cache (traceviz/commands/output_cache.py): a second `traceviz compare`
or `traceviz summary` of unchanged inputs with the same options writes the first one's bytes
without pandas, with the right exit code; anything that changes the bytes misses; damage is
a miss; foreign entries are never read; --no-cache writes nothing; concurrent runs write one
output entry and one report entry.
A hit, with --max-bytes and --cache-dir too, imports neither pandas nor NumPy nor the parser.

The cache writes the very bytes of an uncached render: on every sample run (CPU and H200) and
a corpus pair, for the text drawing on a pipe at several widths, on terminals (256 colours,
true colour, NO_COLOR, dumb) and into a file (-o), and for the text formats; the stored output
is what was written; the drawing does not depend on the console's height (which the key
leaves out)."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace
from traceviz import pipeline, report_cache, settings
from traceviz.analysis.summary import summarize
from traceviz.cli import main
from traceviz.commands import compare as compare_command
from traceviz.commands import output_cache
from traceviz.commands.output import FILE_WIDTH, console, emit
from traceviz.commands.output_cache import ENTRY_PREFIX, PAYLOAD_FILE
from traceviz.diagnose import diagnose_trace
from traceviz.report.bundle import Report
from traceviz.report.formats import renderer

GRAPH_BREAK = SAMPLES / "graph-break"  # a warning finding
LINEAR_ADD = SAMPLES / "linear-add"  # an error finding
ATTENTION = SAMPLES / "attention"  # info findings only
HEAVY = (
    "pandas",
    "numpy",
    "pyarrow",
    "msgspec",
    "traceviz.pipeline",
    "traceviz.parse",
    "traceviz.analysis",
)
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


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(settings.CACHE_DIR_ENV, str(root))
    monkeypatch.delenv(settings.NO_CACHE_ENV, raising=False)
    for name in output_cache.RICH_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    return root


def outputs(root: Path) -> list[Path]:
    return sorted(root.glob(f"{ENTRY_PREFIX}*")) if root.is_dir() else []


def _set(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name in (*output_cache.RICH_ENVIRONMENT, "LINES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def fresh_env(cache: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a command in a fresh interpreter on ``cache``."""
    drop = (settings.NO_CACHE_ENV, settings.MAX_BYTES_ENV)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, settings.CACHE_DIR_ENV: str(cache), **extra}


@dataclasses.dataclass(frozen=True)
class Looks:
    """The command line, run in this process on the test's cache (``cache``), counting in
    ``builds`` the reports and summaries it builds (output-cache misses)."""

    cache: Path
    builds: list[str]
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    def run(self, argv: list[str]) -> tuple[int, str]:
        code = main(argv)
        out, err = self.capsys.readouterr()
        assert not err, err
        return code, out

    def uncached(self, argv: list[str]) -> tuple[int, str]:
        """The output without any cache (rendered straight onto the console)."""
        with self.monkeypatch.context() as patch:
            patch.setenv(settings.NO_CACHE_ENV, "1")
            return self.run(argv)

    def second_look(self, argv: list[str]) -> tuple[int, str]:
        """``argv``'s exit code and output without any cache, once a miss and then a hit
        have given the same, the miss building the one report or summary."""
        reference = self.uncached(argv)
        self.builds.clear()
        assert self.run(argv) == reference  # a miss: rendered into a string, then written
        assert self.run(argv) == reference  # a hit
        assert self.builds == [argv[0]]
        return reference

    def first_entry(self, argv: list[str]) -> tuple[tuple[int, str], Path]:
        """``argv`` run on the empty cache: its exit code and output, and the one output
        entry it wrote."""
        reference = self.run(argv)
        (entry,) = outputs(self.cache)
        return reference, entry


@pytest.fixture
def looks(
    cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Looks:
    import traceviz

    builds: list[str] = []
    for owner, name, kind in ((compare_command, "build", "compare"),
                              (traceviz, "load", "summary")):  # fmt: skip
        real = getattr(owner, name)

        def counted(*args, _real=real, _kind=kind, **kwargs):  # type: ignore[no-untyped-def]
            builds.append(_kind)
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
    return Looks(cache, builds, capsys, monkeypatch)


# ---- the key, without the parser -----------------------------------------------------------


def test_versions_from_dist_info_agree_with_importlib_metadata() -> None:
    names = ("numpy", "pandas", "pyarrow", "msgspec", "rich", "plotly", "orjson", "PyYAML")
    found = report_cache.package_versions(names)
    for name in names:
        try:
            expected: str | None = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            expected = None
        assert found[name] == expected, name
    assert report_cache.package_versions(["no-such-dist-xyz"]) == {"no-such-dist-xyz": None}


def test_the_package_fingerprint_covers_the_front_ends_the_reports_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "traceviz"
    for rel in ("cli.py", "analysis/kinds.py", "commands/output.py", "dashboard/app.py"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text("x = 1\n")
    monkeypatch.setattr(report_cache, "_PACKAGE", package)

    def fingerprints() -> tuple[str, str]:
        report_cache._fingerprints.cache_clear()
        return report_cache._source_fingerprint(), report_cache.package_fingerprint()

    try:
        report, whole = fingerprints()
        (package / "commands" / "output.py").write_text("x = 22\n")
        after_command = fingerprints()
        assert after_command[0] == report and after_command[1] != whole
        (package / "analysis" / "kinds.py").write_text("x = 22\n")
        after_analysis = fingerprints()
        assert after_analysis[0] != report and after_analysis[1] != after_command[1]
    finally:
        monkeypatch.undo()
        report_cache._fingerprints.cache_clear()


@pytest.mark.parametrize(
    "env",
    [{}, {"FORCE_COLOR": "1"}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "1"},
     {"TERM": "dumb", "FORCE_COLOR": "1"}, {"COLUMNS": "77"}],
)  # fmt: skip
def test_the_stand_in_for_an_output_file_is_the_files_console(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _set(monkeypatch, env)
    with open(tmp_path / "out.txt", "w", encoding="utf-8") as handle:
        real = output_cache.describe(console(file=handle, width=FILE_WIDTH))
    assert output_cache.describe(console(file=io.StringIO(), width=FILE_WIDTH)) == real


# ---- second looks ----------------------------------------------------------------------------


SECOND_LOOKS = [
    *(["compare", str(GRAPH_BREAK), "--format", fmt] for fmt in ("text", "json", "markdown")),
    *(["summary", str(GRAPH_BREAK / "compiled.pt.trace.json.gz"), "--format", fmt, "--top", "3"]
      for fmt in ("text", "json")),
    ["compare", *map(str, CORPUS_PAIR), "--force", "--top", "5"],
]  # fmt: skip


@pytest.mark.parametrize("argv", SECOND_LOOKS)
def test_a_second_look_writes_the_same_bytes_without_building(
    argv: list[str], looks: Looks
) -> None:
    if not Path(argv[1]).exists():
        pytest.skip(f"{argv[1]} not found (corpus at {CORPUS})")
    reference = looks.second_look(argv)
    (entry,) = outputs(looks.cache)
    assert (entry / PAYLOAD_FILE).read_text(encoding="utf-8") == reference[1]


@pytest.mark.parametrize(
    ("run", "fail_on"),
    [(GRAPH_BREAK, "warning"), (GRAPH_BREAK, "error"), (LINEAR_ADD, "error"),
     (LINEAR_ADD, "warning"), (ATTENTION, "warning"), (ATTENTION, None)],
)  # fmt: skip
def test_fail_on_exit_code_is_the_same_on_a_hit(
    run: Path,
    fail_on: str | None,
    looks: Looks,
) -> None:
    argv = ["compare", str(run), "--format", "json"] + (["--fail-on", fail_on] if fail_on else [])
    looks.second_look(argv)
    # the code is the findings' own, whatever --fail-on the entry was written under
    other = [a for a in argv if a not in ("--fail-on", "warning", "error")] + ["--fail-on", "error"]
    expected = looks.uncached(other)
    looks.builds.clear()
    assert looks.run(other) == expected
    assert looks.builds == []


def test_the_fail_on_codes_are_exercised() -> None:
    """The runs above cover both codes (the findings of these sample runs)."""
    from traceviz.pipeline import compare_run

    reached = {run.name: compare_command.severities_reached(compare_run(run))
               for run in (GRAPH_BREAK, LINEAR_ADD, ATTENTION)}  # fmt: skip
    assert reached == {"graph-break": ("warning",), "linear-add": ("warning", "error"),
                       "attention": ()}  # fmt: skip


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_output_file_gets_the_same_bytes(
    fmt: str,
    tmp_path: Path,
    looks: Looks,
) -> None:
    target = tmp_path / "report.out"
    argv = ["compare", str(GRAPH_BREAK), "--format", fmt, "-o", str(target)]
    assert looks.uncached(argv) == (0, "")
    reference = target.read_bytes()
    target.unlink()
    looks.builds.clear()
    for _ in range(2):
        assert looks.run(argv) == (0, "")
        assert target.read_bytes() == reference
        target.write_text("something else")
    assert looks.builds == ["compare"]
    # a file and stdout: the same text formats share one entry, a drawing does not
    looks.run(["compare", str(GRAPH_BREAK), "--format", fmt])
    assert len(outputs(looks.cache)) == (2 if fmt == "text" else 1)


def test_output_onto_a_device_is_not_cached(looks: Looks) -> None:
    argv = ["compare", str(ATTENTION), "--format", "json", "-o", os.devnull]
    for _ in range(2):
        assert looks.run(argv) == (0, "")
    assert looks.builds == ["compare", "compare"] and outputs(looks.cache) == []


# ---- what misses -----------------------------------------------------------------------------


def test_each_option_and_input_change_misses(
    tmp_path: Path,
    looks: Looks,
) -> None:
    builds, monkeypatch = looks.builds, looks.monkeypatch
    a, b = (tmp_path / "eager.json.gz", tmp_path / "compiled.json.gz")
    a.write_bytes((GRAPH_BREAK / "eager.pt.trace.json.gz").read_bytes())
    b.write_bytes((GRAPH_BREAK / "compiled.pt.trace.json.gz").read_bytes())
    base = ["compare", str(a), str(b)]
    variants = [
        base,
        [*base, "--top", "3"],
        [*base, "--format", "json"],
        [*base, "--names", "x", "y"],
        [*base, "--force"],
    ]
    seen = set()
    for argv in variants:
        first = looks.run(argv)
        assert looks.run(argv) == first
        seen.add(first[1])
    assert builds == ["compare"] * len(variants) and len(outputs(looks.cache)) == len(variants)
    assert len(seen) >= 4  # --force changes nothing on a comparable pair
    builds.clear()
    monkeypatch.setenv("COLUMNS", "90")  # another width
    narrow = looks.run(base)
    monkeypatch.setenv("FORCE_COLOR", "1")  # a terminal, in colour
    monkeypatch.setenv("TERM", "xterm-256color")
    colour = looks.run(base)
    monkeypatch.setenv("NO_COLOR", "1")
    plain_terminal = looks.run(base)
    assert builds == ["compare"] * 3
    assert (
        "\x1b[" in colour[1] and "\x1b[" in plain_terminal[1] and "\x1b[38" not in plain_terminal[1]
    )
    assert "\x1b[" not in narrow[1]
    for name in ("FORCE_COLOR", "TERM", "NO_COLOR", "COLUMNS"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "120")
    builds.clear()
    st = b.stat()
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # the input touched
    looks.run(base)
    assert builds == ["compare"]


def test_a_width_changed_during_the_render_is_not_stored(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS")
    width = [100]
    monkeypatch.setattr(os, "get_terminal_size", lambda *_: os.terminal_size((width[0], 30)))
    entry = output_cache._entry("compare", {"x": 1}, "text", 10, None)
    assert entry is not None and entry.key["render"]["console"]["width"] == 100
    width[0] = 90  # the terminal resized while the report is built
    output_cache.emit_cached(lambda c: c.print("x" * 95), None, entry)
    assert capsys.readouterr().out == "x" * 90 + "\n" + "x" * 5 + "\n"  # drawn at 90
    assert outputs(cache) == []


# ---- safety ----------------------------------------------------------------------------------


def test_damaged_entries_are_misses_and_rewritten(looks: Looks) -> None:
    argv = ["compare", str(ATTENTION), "--format", "markdown"]
    reference, entry = looks.first_entry(argv)
    payload = entry / PAYLOAD_FILE
    damages: list[Callable[[], None]] = [
        lambda: payload.write_bytes(payload.read_bytes().replace(b"|", b"!", 1)),  # same size
        lambda: payload.write_bytes(payload.read_bytes()[:-3]),
        lambda: payload.unlink(),
        lambda: (entry / "entry.json").write_text("{not json"),
        lambda: (entry / "entry.json").write_text(
            json.dumps({**json.loads((entry / "entry.json").read_text()), "reached": ["fatal"]})
        ),
    ]
    for damage in damages:
        looks.builds.clear()
        damage()
        assert looks.run(argv) == reference
        assert looks.builds == ["compare"]
        assert looks.run(argv) == reference  # rewritten
        assert looks.builds == ["compare"]
        (entry,) = outputs(looks.cache)
        payload = entry / PAYLOAD_FILE


def _plant(entry: Path, text: str) -> None:
    """Replace an entry's output by ``text``, its header made to match (a forged entry)."""
    import hashlib

    data = text.encode()
    (entry / PAYLOAD_FILE).write_bytes(data)
    header = json.loads((entry / "entry.json").read_text())
    header.update(payload_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (entry / "entry.json").write_text(json.dumps(header))


@pytest.mark.parametrize("writable", ["directory", "entry.json", "payload"])
def test_an_entry_others_could_write_is_never_read(writable: str, looks: Looks) -> None:
    argv = ["compare", str(ATTENTION), "--format", "json"]
    reference, entry = looks.first_entry(argv)
    _plant(entry, "planted\n")
    target = {"directory": entry, "entry.json": entry / "entry.json",
              "payload": entry / PAYLOAD_FILE}[writable]  # fmt: skip
    mode = target.stat().st_mode
    target.chmod(mode | 0o022)
    looks.builds.clear()
    assert looks.run(argv) == reference  # the planted bytes are not shown
    assert looks.builds == ["compare"]
    if writable == "directory":  # not ours to remove either
        assert (entry / PAYLOAD_FILE).read_text() == "planted\n"
        target.chmod(mode)
        assert looks.run(argv) == (0, "planted\n")  # the check was all that stopped it


def test_a_linked_entry_is_never_read(tmp_path: Path, looks: Looks) -> None:
    argv = ["compare", str(ATTENTION), "--format", "json"]
    reference, entry = looks.first_entry(argv)
    elsewhere = tmp_path / "elsewhere"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    looks.builds.clear()
    assert looks.run(argv) == reference
    assert looks.builds == ["compare"] and entry.is_symlink()


def test_no_cache_writes_no_output(tmp_path: Path, cache: Path) -> None:
    env = fresh_env(cache)
    exe = Path(sys.executable).with_name("traceviz")
    argv = [str(exe), "compare", str(ATTENTION), "--format", "json"]
    subprocess.run([*argv, "--no-cache"], env=env, capture_output=True, check=True)
    subprocess.run(argv, env={**env, "TRACEVIZ_NO_CACHE": "1"}, capture_output=True, check=True)
    assert outputs(cache) == []
    other = tmp_path / "other-cache"
    subprocess.run([*argv, "--cache-dir", str(other)], env=env, capture_output=True, check=True)
    assert outputs(cache) == [] and len(outputs(other)) == 1


def test_output_entries_share_the_size_bound(looks: Looks) -> None:
    _, first = looks.first_entry(["compare", str(ATTENTION), "--format", "json"])
    os.utime(first / "entry.json", (1, 1))  # the least recently used
    looks.monkeypatch.setenv(settings.MAX_CACHE_BYTES_ENV, "1")
    looks.run(["compare", str(ATTENTION), "--format", "markdown"])
    assert first not in outputs(looks.cache) and len(outputs(looks.cache)) == 1


def _cli_code(argv: list[str]) -> str:
    return (
        "import sys, json\n"
        "from traceviz.cli import main\n"
        f"code = main({argv!r})\n"
        "sys.stdout.flush()\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('\\nHEAVY=' + json.dumps([code, heavy]), file=sys.stderr)\n"
    )


def _run_fresh(argv: list[str], env: dict[str, str]) -> tuple[str, int, list[str]]:
    done = subprocess.run([sys.executable, "-c", _cli_code(argv)], env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    _, _, facts = done.stderr.rpartition("\nHEAVY=")
    assert facts, done.stderr[-2000:]
    code, heavy = json.loads(facts)
    return done.stdout, code, heavy


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", str(LINEAR_ADD), "--fail-on", "error"],
        ["compare", str(GRAPH_BREAK), "--format", "json"],
        ["compare", str(GRAPH_BREAK / "eager.pt.trace.json.gz"),
         str(GRAPH_BREAK / "compiled.pt.trace.json.gz"), "--format", "markdown"],
        ["summary", str(ATTENTION / "compiled.pt.trace.json.gz")],
        ["compare", str(ATTENTION), "--max-bytes", "64M"],
        ["summary", str(ATTENTION / "eager.pt.trace.json.gz"), "--max-bytes", "1GiB"],
        ["compare", str(LINEAR_ADD), "--cache-dir", "{elsewhere}", "--format", "json"],
        ["summary", str(ATTENTION / "compiled.pt.trace.json.gz"), "--cache-dir", "{elsewhere}",
         "--max-bytes", "100000000"],
    ],
)  # fmt: skip
def test_a_hit_imports_no_pandas_numpy_or_parser(
    argv: list[str], cache: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"  # --cache-dir: another directory than the environment's
    argv = [word.format(elsewhere=elsewhere) for word in argv]
    env = fresh_env(cache, COLUMNS="100")
    first, first_code, first_heavy = _run_fresh(argv, env)
    assert "pandas" in first_heavy  # the miss builds it
    second, second_code, second_heavy = _run_fresh(argv, env)
    assert (second, second_code) == (first, first_code) and first
    assert second_heavy == [], f"a hit imported {second_heavy}"
    assert outputs(elsewhere if "--cache-dir" in argv else cache)  # the hit was that cache's


def test_concurrent_runs_write_one_entry(cache: Path) -> None:
    """Three runs at once write one output entry and one report entry, and leave no
    temporary file."""
    env = fresh_env(cache, COLUMNS="100")
    exe = Path(sys.executable).with_name("traceviz")
    argv = [str(exe), "compare", str(ATTENTION)]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(3)]  # fmt: skip
    results = [proc.communicate() for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), results
    assert len({out for out, _ in results}) == 1 and all(not err for _, err in results)
    third = subprocess.run(argv, env=env, capture_output=True, check=True)
    assert third.stdout == results[0][0]
    assert len(outputs(cache)) == 1 and len(list(cache.glob(f"{report_cache.ENTRY_PREFIX}*"))) == 1
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals")
def test_on_a_real_terminal(cache: Path) -> None:
    """Under a pseudo-terminal (colours, hyperlinks, its own width): the miss prints what the
    uncached command prints (hyperlink ids are random per render), the hit the miss's bytes,
    and another terminal width is another entry."""
    import fcntl
    import pty
    import struct
    import termios

    env = {k: v for k, v in os.environ.items() if k not in output_cache.RICH_ENVIRONMENT}
    env.update(TERM="xterm-256color", TRACEVIZ_CACHE_DIR=str(cache))

    def on_terminal(width: int, **extra: str) -> bytes:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, width, 0, 0))
        code = "import sys; from traceviz.cli import main; sys.exit(main())"
        argv = [sys.executable, "-c", code, "compare", str(GRAPH_BREAK)]
        proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower,
                                env={**env, **extra})  # fmt: skip
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait() == 0, out[-2000:]
        os.close(leader)
        return out

    def without_link_ids(out: bytes) -> bytes:
        return re.sub(rb"\x1b\]8;id=[^;]*;", b"", out)

    reference = on_terminal(111, TRACEVIZ_NO_CACHE="1")
    assert b"\x1b[" in reference and b"\x1b]8;id=" in reference  # colours and links
    miss, hit = on_terminal(111), on_terminal(111)
    assert without_link_ids(miss) == without_link_ids(reference)
    assert hit == miss
    assert len(outputs(cache)) == 1
    narrower = on_terminal(90)
    assert without_link_ids(narrower) != without_link_ids(miss) and len(outputs(cache)) == 2


# ---- byte identity with the uncached render ------------------------------------------------


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


@pytest.fixture
def identical(
    cache: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., None]:
    """``check(make, fmt, scenarios)``: the old path (emit) and the cached path (emit_cached,
    then the entry read back) agree in each console scenario, on the test's ``cache``."""

    def check(make: Callable[[], Any], fmt: str, scenarios: dict[str, Any]) -> None:
        for name, (env, to_file) in scenarios.items():
            _set(monkeypatch, env)
            target = tmp_path / f"{name}.out" if to_file else None
            old = _written(lambda path: emit(make(), path), target, capsys)
            out = None if target is None else str(target)
            entry = output_cache._entry("test", {"case": name}, fmt, 10, out)
            assert entry is not None, name
            new = _written(lambda path: output_cache.emit_cached(make(), path, entry), target,  # noqa: B023
                           capsys)  # fmt: skip
            assert LINK_ID.sub("", new) == LINK_ID.sub("", old), f"{name}: cached path differs"
            stored = entry.read()
            assert stored is not None and stored.text == new, f"{name}: stored output differs"
            assert old.strip(), name

    return check


@pytest.mark.parametrize("case", CASES)
def test_compare_is_byte_identical(case: str, identical: Callable[..., None]) -> None:
    report = _report(case)
    top = 10 if len(case) % 2 else 3
    identical(lambda: renderer("text").comparison(report, top=top), "text", SCENARIOS)
    html = case in ("graph-break", "h200/block") and importlib.util.find_spec("plotly") is not None
    for fmt in ["json", "markdown"] + (["html"] if html else []):  # html: the dashboard extra
        identical(lambda: renderer(fmt).comparison(report, top=10), fmt,  # noqa: B023
                  {"pipe": ({}, False), "file": ({}, True)})  # fmt: skip


@pytest.mark.parametrize("case", ["pointwise", "h200/attention-train", "graph-break"])
def test_summary_text_is_byte_identical(case: str, identical: Callable[..., None]) -> None:
    trace = load_trace(SAMPLES / case / "compiled.pt.trace.json.gz")
    summary, findings = summarize(trace, top=5), diagnose_trace(trace)
    for fmt in ("text", "json"):
        identical(lambda: renderer(fmt).summary(summary, findings), fmt,  # noqa: B023
                  {k: v for k, v in SCENARIOS.items() if not v[1]})  # fmt: skip


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
