"""Dashboard benchmark: are all views of two 1M-event traces ready within 1.2 × their load?

Builds (once, see ``make_large_trace.py``) two ~1.1M-event traces by replicating real corpus
traces 10 times: the A100 eager training step (``a`` side) and the A100 compiled + CUDA-graph
training step (``b`` side). Then, side by side in this one process (issue 14's target: all
views ready <= 1.2 x the time to load both):

1. **load**: ``traceviz.load(path, cache=False)`` of each JSON file, one after the other
   (the parse cache neither read nor written): the "load" every ratio is measured against
   so far;
2. **analysis**: ``traceviz.pipeline.compare`` of the two loaded traces: analysis of both
   sides (one after the other: nothing left to load), the comparison and the diagnosis (the
   report every view reads; not the dashboard's own code);
3. **views**: ``Dashboard(comparison=...)`` (the first tab built) and then every other tab of
   :func:`traceviz.dashboard.views.views_for` opened in turn, as a browser session does when
   each tab is clicked (built server-side on first opening), each timed;
4. **models**: the Bokeh models of every tab (``get_root``): what the session sends.

Then two more measurements of the same round:

5. **loads at once**: the two ``traceviz.load(path, cache=False)`` at once, b's on a worker
   thread (:func:`traceviz.concurrent_sides.side_by_side`): the floor of any overlap;
6. **the dashboard's path**: what ``traceviz dashboard A B`` runs before it serves:
   ``comparison_from_args([A, B])`` with its ``TraceCache`` emptied and the parse cache off
   (the two sides loaded and analysed at once by the pipeline, the comparison, the
   diagnosis), then the views and models of 3 and 4 on that report.

Ready (the dashboard's path) = 6's report + its views + its models; printed against the load
of 1 (target: ≤ 1.2, the definition used so far) and against the loads at once of 5. The
one-after-the-other breakdown (1 + 2 + 3 + 4, ready / load as before, the dashboard's own
share beside the analysis's) shows where the time goes. Loads and the dashboard's report are
printed with their CPU seconds (every thread) beside the wall seconds. Use ``--repeat 2`` or
more: the first round pays one-time costs (imports, first figures) in its first views.
Panel and Bokeh's one-time warm-up (``serve.warm_up``, what ``traceviz dashboard`` does before
serving) is done first and reported apart. The timeline must draw at most about 20k marks
(default step and whole trace). The load average (``os.getloadavg``) is printed before and
after: the machine is shared. Exits 0 whatever the numbers (a measurement, not a test).

    .venv/bin/python benchmarks/dashboard.py [--repeat 1] [--cache]
    .venv/bin/python benchmarks/dashboard.py --browser [RUN_DIR | A B] [--repeat 3]
    .venv/bin/python benchmarks/dashboard.py --browser --skip-large   # the browser part only
    .venv/bin/python benchmarks/dashboard.py --command [RUN_DIR | A B] [--repeat 5] [--cache]

``--cache`` loads the saved traces (Trace.save) instead of the JSON (written on first use next
to each file), to see the view-building cost against a fast load.

``--browser`` adds what a person waits for: ``traceviz dashboard`` on a sample run (default
``sample_traces/graph-break``) or two traces, and headless Chromium (Debian's, driven by
playwright) opening the page, ``--repeat`` times with a fresh browser each time. It prints,
per round, the seconds from ``goto`` to the page's HTML, to the first drawn chart (the target:
at most 3 s), and to every figure of the first tab, and the bytes of JavaScript/CSS the page
loaded; then the server-side cost of one session (the first tab built and its Bokeh models)
measured in this process, for the same comparison.

``--command`` (instead of the in-process rounds) times what a user waits for from the command
on: ``traceviz dashboard PATHS --no-show`` in a fresh process (default: the 1M-event pair, then
``sample_traces/graph-break``), the parse cache off (``TRACEVIZ_NO_CACHE=1``; with ``--cache``,
a cache directory of its own filled by one unmeasured run first, so every round is a warm hit):
Panel imported and warmed up, then the traces loaded. Seconds from just before the process is
started to its "parsing" line, to its "serving on" line (ready to serve), to the page's HTML
and to the first drawn chart in a fresh headless Chromium launched before the command starts
(idle on a blank page; without Chromium or playwright, an HTTP GET of the page only), and the
process's CPU seconds until it is stopped (SIGINT, as Ctrl-C). Prints every round, then the
best and the median of each.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from make_large_trace import CORPUS, make_large_trace  # noqa: E402

sys.path.insert(1, str(ROOT))
from tests.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the browser tests' launch)

SOURCES = {
    "a": CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    "b": CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
}
FACTOR = 10
TARGET_RATIO = 1.2  # issue 14: all views ready <= 1.2 x the time to load both
MARK_CAP = 20_000


def inputs(use_cache: bool) -> dict[str, Path]:
    """The two large traces (made when missing), or with ``use_cache`` their saved traces
    (Trace.save; written again when missing or of an older format)."""
    paths = {}
    for side, source in SOURCES.items():
        made = make_large_trace(source, FACTOR)
        print(
            f"{side}: {Path(made.path).name}: {made.events:,} events, {made.bytes / 1e6:.0f} MB"
            + (" (reused)" if made.reused else f" (made in {made.seconds:.1f} s)")
        )
        path = Path(made.path)
        if use_cache:
            cache = path.with_suffix(".traceviz-cache")
            if not _current_save(cache):
                import shutil

                import traceviz

                shutil.rmtree(cache, ignore_errors=True)
                traceviz.load(path).save(cache)
            path = cache
        paths[side] = path
    return paths


def _current_save(directory: Path) -> bool:
    """Whether ``directory`` holds a trace saved in the cache format this traceviz reads."""
    import json

    from traceviz.trace import CACHE_FORMAT_VERSION, CACHE_MARKER

    try:
        header = json.loads((directory / CACHE_MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(header, dict) and header.get("format_version") == CACHE_FORMAT_VERSION


def open_views(comparison: Any) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per tab: the Dashboard (first tab built) and every other tab opened in turn,
    then every tab's Bokeh models (module doc, steps 3 and 4)."""
    import panel as pn

    from traceviz.dashboard.app import Dashboard
    from traceviz.dashboard.views import views_for

    t0 = time.perf_counter()
    app = Dashboard(comparison=comparison)  # builds the first tab
    titles = views_for(comparison)
    views = {titles[0]: time.perf_counter() - t0}
    for i, title in enumerate(titles[1:], start=1):
        ts = time.perf_counter()
        app._tabs.active = i  # a tab is built when first opened
        views[title] = time.perf_counter() - ts
    models = {}
    for title, view in zip(titles, app._tabs.objects, strict=True):
        ts = time.perf_counter()
        pn.panel(view).get_root()
        models[title] = time.perf_counter() - ts
    assert app.built_tabs == titles, app.built_tabs
    return views, models


def timed(work: Any) -> tuple[Any, float, float]:
    """``work()``, its wall seconds and its CPU seconds (every thread of the process)."""
    w0, c0 = time.perf_counter(), time.process_time()
    value = work()
    return value, time.perf_counter() - w0, time.process_time() - c0


def one_after_the_other(paths: dict[str, Path]) -> dict[str, Any]:
    """Both loads, one after the other; the analysis of the two loaded traces (compare
    analyses them on this thread: nothing to load); the views and models (module doc)."""
    import traceviz
    from traceviz.pipeline import compare
    from traceviz.report import figures

    traces, load, load_cpu = timed(
        lambda: {side: traceviz.load(path, cache=False) for side, path in paths.items()}
    )
    comparison, analysis, _ = timed(
        lambda: compare(traces["a"], traces["b"], names=("eager", "compiled"))
    )
    views, models = open_views(comparison)
    return {
        "load": load,
        "load_cpu": load_cpu,
        "analysis": analysis,
        "views": sum(views.values()),
        "models": sum(models.values()),
        "per_view": views,
        "per_model": models,
        "events": sum(t.stats.events_in for t in traces.values()),
        "marks_step": figures.timeline_marks(figures.timeline_figure(comparison, step=0)),
        "marks_all": figures.timeline_marks(figures.timeline_figure(comparison, step=None)),
    }


def dashboard_path(paths: dict[str, Path]) -> dict[str, Any]:
    """What `traceviz dashboard A B` runs: its loader (its TraceCache emptied, the parse
    cache off), the two sides loaded and analysed at once (the pipeline), compare, diagnose;
    then the views and models."""
    from traceviz.dashboard.loading import CACHE, comparison_from_args

    CACHE.clear()
    os.environ["TRACEVIZ_NO_CACHE"] = "1"
    try:
        report, opened, opened_cpu = timed(
            lambda: comparison_from_args([str(paths["a"]), str(paths["b"])])
        )
    finally:
        os.environ.pop("TRACEVIZ_NO_CACHE")
        CACHE.clear()
    views, models = open_views(report)
    return {
        "open": opened,
        "open_cpu": opened_cpu,
        "dash_views": sum(views.values()),
        "dash_models": sum(models.values()),
        "dash_per_view": views,
        "dash_per_model": models,
    }


def loads_at_once(paths: dict[str, Path]) -> dict[str, Any]:
    """Both loads at once, side b's on a worker thread (the pipeline's helper)."""
    import traceviz
    from traceviz.concurrent_sides import side_by_side

    def load(side: str) -> Any:
        return traceviz.load(paths[side], cache=False)

    _, at_once, at_once_cpu = timed(lambda: side_by_side(lambda: load("a"), lambda: load("b")))
    return {"load_at_once": at_once, "load_at_once_cpu": at_once_cpu}


def measure(paths: dict[str, Path]) -> dict[str, Any]:
    """One round: the warm-up, the sequential path, both loads at once, the dashboard's
    path (module doc)."""
    import panel as pn

    from traceviz.dashboard.app import EXTENSIONS
    from traceviz.dashboard.serve import warm_up

    pn.extension(*EXTENSIONS)
    _, warm, _ = timed(warm_up)  # once per server process, before any trace: not a load
    return {
        "warm_up": warm,
        **one_after_the_other(paths),
        **loads_at_once(paths),
        **dashboard_path(paths),
    }


def load_average() -> str:
    """The 1/5/15-minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


FIRST_CHART_TARGET_S = 3.0
DEFAULT_RUN = ROOT / "sample_traces" / "graph-break"


def browser_round(url: str) -> dict[str, float]:
    """One fresh headless Chromium opening ``url``: seconds to the HTML, to the first drawn
    chart and to all charts of the first tab, bytes of scripts and stylesheets loaded; then
    the first chart again on a reload in the same browser (its caches warm, as on a revisit)."""
    from playwright.sync_api import sync_playwright

    sizes: list[int] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(300_000)

        def count(response: Any) -> None:
            if response.request.resource_type in ("script", "stylesheet"):
                sizes.append(int(response.headers.get("content-length") or 0))

        page.on("response", count)
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        t_html = time.perf_counter() - t0
        page.locator(".js-plotly-plot .main-svg").first.wait_for()
        t_first = time.perf_counter() - t0
        expected = page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
        page.wait_for_function(
            "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2 * n",
            arg=expected,
        )
        t_all = time.perf_counter() - t0
        loaded = sum(sizes)
        t1 = time.perf_counter()
        page.reload(wait_until="commit")
        page.locator(".js-plotly-plot .main-svg").first.wait_for()
        t_again = time.perf_counter() - t1
        browser.close()
    return {
        "html": t_html,
        "first_chart": t_first,
        "all_charts": t_all,
        "bytes": loaded,
        "reload": t_again,
    }


def session_cost(paths: list[str]) -> dict[str, float]:
    """Server-side seconds of one browser session: the Dashboard (first tab built) and the
    Bokeh models of the page, for the comparison the server holds."""
    import panel as pn

    from traceviz.dashboard.app import EXTENSIONS, Dashboard
    from traceviz.dashboard.loading import comparison_from_args
    from traceviz.dashboard.serve import warm_up

    pn.extension(*EXTENSIONS)
    warm_up()
    comparison = comparison_from_args(paths)
    best = {"dashboard": math.inf, "models": math.inf}
    for _ in range(3):
        t0 = time.perf_counter()
        app = Dashboard(comparison=comparison)
        t1 = time.perf_counter()
        pn.panel(app).get_root()
        t2 = time.perf_counter()
        best = {
            "dashboard": min(best["dashboard"], t1 - t0),
            "models": min(best["models"], t2 - t1),
        }
    return best


def browser_main(paths: list[str], repeat: int) -> int:
    """``--browser``: serve ``paths`` and time the page in Chromium (see the module doc)."""
    import socket
    import subprocess
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "traceviz.cli", "dashboard", *paths, "--port", str(port)]
    server = subprocess.Popen([*cmd, "--no-show"], cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(url, timeout=60):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    print("the dashboard did not start", file=sys.stderr)
                    return 1
                time.sleep(0.5)
        rounds = [browser_round(url) for _ in range(max(repeat, 1))]
    finally:
        server.terminate()
        server.wait(timeout=60)
    cost = session_cost(paths)
    print(f"dashboard of {' '.join(paths)}, {len(rounds)} fresh browser sessions at 1600 px")
    print()
    print(
        "| round | HTML (s) | first chart (s) | first tab's charts (s) | JS+CSS (MB) "
        "| first chart on reload (s) |"
    )
    print("|---|---|---|---|---|---|")
    for i, r in enumerate(rounds, 1):
        print(
            f"| {i} | {r['html']:.2f} | {r['first_chart']:.2f} | {r['all_charts']:.2f} | "
            f"{r['bytes'] / 1e6:.1f} | {r['reload']:.2f} |"
        )
    best = min(r["first_chart"] for r in rounds)
    median = sorted(r["first_chart"] for r in rounds)[len(rounds) // 2]
    verdict = "PASS" if median <= FIRST_CHART_TARGET_S else "FAIL"
    print()
    print(
        f"first chart: best {best:.2f} s, median {median:.2f} s "
        f"(target ≤ {FIRST_CHART_TARGET_S:.0f} s)  {verdict}"
    )
    print(
        f"server side per session (best of 3, in this process): Dashboard with its first tab "
        f"{cost['dashboard']:.2f} s, Bokeh models {cost['models']:.2f} s"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}; python {platform.python_version()}"
    )
    return 0


def command_round(
    paths: list[str], *, chart: bool, cache_dir: str | None = None
) -> dict[str, float]:
    """One fresh ``traceviz dashboard PATHS --no-show`` process (parse cache off:
    ``TRACEVIZ_NO_CACHE=1``, or in ``cache_dir``), timed
    from just before it is started: to its "parsing" line, to its "serving on" line (ready to
    serve), to the page's HTML (Chromium's ``goto`` until the response begins, else an HTTP
    GET) and, with ``chart``, to the first drawn chart in a fresh headless Chromium launched
    (and idle on a blank page) before the command starts. Then the process is stopped with
    SIGINT (as Ctrl-C) and its CPU seconds (user + system, every thread, until stopped: the
    page's session included) are read with ``os.wait4``."""
    import contextlib
    import signal
    import subprocess
    import threading
    import urllib.request

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = dict(os.environ)
    if cache_dir is None:
        env["TRACEVIZ_NO_CACHE"] = "1"
    else:
        env.pop("TRACEVIZ_NO_CACHE", None)
        env["TRACEVIZ_CACHE_DIR"] = cache_dir
    cmd = [sys.executable, "-m", "traceviz.cli", "dashboard", *paths, "--port", str(port)]
    seen: dict[str, float] = {}
    log: list[str] = []
    ready = threading.Event()
    with contextlib.ExitStack() as stack:
        page = stack.enter_context(_blank_page()) if chart else None
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [*cmd, "--no-show"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                log.append(line.rstrip())
                for key, text in (("parsing", ": parsing "), ("serving", ": serving on ")):
                    if text in line and key not in seen:
                        seen[key] = time.perf_counter() - t0
                if "serving" in seen:
                    ready.set()
            ready.set()  # the process ended

        threading.Thread(target=read, daemon=True).start()
        try:
            ready.wait(timeout=300)
            if "serving" not in seen:
                raise RuntimeError("the dashboard did not start:\n" + "\n".join(log[-20:]))
            if page is not None:
                page.goto(url, wait_until="commit")
                seen["html"] = time.perf_counter() - t0
                page.locator(".js-plotly-plot .main-svg").first.wait_for()
                seen["first_chart"] = time.perf_counter() - t0
            else:
                with urllib.request.urlopen(url, timeout=300) as response:
                    response.read()
                seen["html"] = time.perf_counter() - t0
        finally:
            proc.send_signal(signal.SIGINT)
            timer = threading.Timer(60, proc.kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)
    return {**seen, "cpu": usage.ru_utime + usage.ru_stime}


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _blank_page() -> Any:
    """A context giving a blank page of a fresh headless Chromium (closed at the end)."""
    import contextlib

    from playwright.sync_api import sync_playwright

    @contextlib.contextmanager
    def opened() -> Any:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                page.set_default_timeout(300_000)
                page.goto("about:blank")
                yield page
            finally:
                browser.close()

    return opened()


def can_chart() -> bool:
    """Whether Chromium and playwright are here (else ``--command`` times the HTML only)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return Path(CHROMIUM).exists()


COMMAND_KEYS = (
    ("parsing", "parsing line"),
    ("serving", "serving (ready)"),
    ("html", "page HTML"),
    ("first_chart", "first chart"),
    ("cpu", "CPU"),
)


def command_main(targets: list[list[str]], repeat: int, use_cache: bool) -> None:
    """``--command``: each target's ``traceviz dashboard`` timed from its start; best and median.
    With ``use_cache``, in a parse cache of its own, filled by one unmeasured run first."""
    import tempfile

    chart = can_chart()
    if not chart:
        print(f"(no Chromium at {CHROMIUM} or no playwright: the page's HTML only)")
    with tempfile.TemporaryDirectory(prefix="traceviz-bench-cache-") as tmp:
        cache_dir = tmp if use_cache else None
        for paths in targets:
            if cache_dir is not None:  # the parse cache filled: every round a warm hit
                command_round(paths, chart=False, cache_dir=cache_dir)
            command_target(paths, repeat, chart, cache_dir)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}; python {platform.python_version()}"
    )


def command_target(paths: list[str], repeat: int, chart: bool, cache_dir: str | None) -> None:
    """One target of ``--command``: its rounds and their summary."""
    rounds = [command_round(paths, chart=chart, cache_dir=cache_dir) for _ in range(max(repeat, 1))]
    print()
    print(
        f"`traceviz dashboard {' '.join(paths)}`, fresh process, parse cache "
        f"{'warm' if cache_dir else 'off'}, {len(rounds)} rounds (load average {load_average()})"
    )
    print()
    keys = [(k, title) for k, title in COMMAND_KEYS if all(k in r for r in rounds)]
    print("| round | " + " | ".join(f"{title} (s)" for _, title in keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for i, r in enumerate(rounds, 1):
        print(f"| {i} | " + " | ".join(f"{r[k]:.2f}" for k, _ in keys) + " |")
    for k, title in keys:
        values = [r[k] for r in rounds]
        print(f"{title}: best {min(values):.2f} median {_median(values):.2f}")


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def large_pair() -> list[str]:
    """The 1M-event pair's two JSON files (made when missing)."""
    return [str(path) for path in inputs(use_cache=False).values()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best is kept (1)")
    parser.add_argument(
        "--cache", action="store_true", help="load the saved traces (Trace.save) instead"
    )
    parser.add_argument(
        "--browser",
        nargs="*",
        metavar="PATH",
        help=f"also time the page in Chromium (default run: {DEFAULT_RUN.name})",
    )
    parser.add_argument(
        "--skip-large", action="store_true", help="skip the 1M-event pair (with --browser)"
    )
    parser.add_argument(
        "--command",
        nargs="*",
        metavar="PATH",
        help="time `traceviz dashboard` from its start to ready and to the first chart, the "
        f"load beside Panel's import off and on (default: the 1M pair and {DEFAULT_RUN.name}); "
        "instead of the in-process rounds",
    )
    args = parser.parse_args(argv)
    print(f"load average before: {load_average()}")
    if args.command is not None:
        targets = [args.command] if args.command else [large_pair(), [str(DEFAULT_RUN)]]
        command_main(targets, args.repeat, args.cache)
    elif not args.skip_large:
        large_main(args.cache, args.repeat)
    if args.browser is not None:
        browser_main(args.browser or [str(DEFAULT_RUN)], args.repeat)
    print(f"load average after: {load_average()}")
    return 0


def best_of(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each part's best (shortest) time over the rounds, per view and per tab's models too
    (the parts are independent; one slow round, e.g. a load under a neighbour's job, does
    not choose the others); the totals are the sums of the bests. A CPU time is the one of
    its part's best round."""
    best = dict(rounds[0])
    for key in ("warm_up", "load", "analysis", "load_at_once", "open"):
        fastest = min(rounds, key=lambda r: r[key])
        best[key] = fastest[key]
        if f"{key}_cpu" in fastest:
            best[f"{key}_cpu"] = fastest[f"{key}_cpu"]
    for key, total in (
        ("per_view", "views"),
        ("per_model", "models"),
        ("dash_per_view", "dash_views"),
        ("dash_per_model", "dash_models"),
    ):
        best[key] = {title: min(r[key][title] for r in rounds) for title in rounds[0][key]}
        best[total] = sum(best[key].values())
    return best


def large_main(use_cache: bool, repeat: int) -> None:
    """The two 1M-event traces: load vs every view ready, against the 1.2 x target."""
    paths = inputs(use_cache)
    rounds = [measure(paths) for _ in range(max(repeat, 1))]
    for i, r in enumerate(rounds, 1):
        ready = r["load"] + r["analysis"] + r["views"] + r["models"]
        dash = r["open"] + r["dash_views"] + r["dash_models"]
        print(
            f"# round {i}: one after the other: load {r['load']:.2f} s, analysis "
            f"{r['analysis']:.2f} s, views {r['views']:.2f} s, models {r['models']:.2f} s, "
            f"ready {ready:.2f} s; loads at once {r['load_at_once']:.2f} s; dashboard: sides "
            f"at once {r['open']:.2f} s, ready {dash:.2f} s = {dash / r['load']:.2f} x load "
            f"(load average {load_average()})"
        )
    best = best_of(rounds)
    load, analysis = best["load"], best["analysis"]
    views, models = best["views"], best["models"]
    ready = load + analysis + views + models
    print()
    print("Best of each part over the rounds. One after the other, as before:")
    print()
    print("| step | seconds | CPU s | × load |")
    print("|---|---:|---:|---:|")
    print(
        f"| load both traces ({best['events']:,.0f} events, cache off), one after the other "
        f"| {load:.2f} | {best['load_cpu']:.2f} | 1.00 |"
    )
    print(
        f"| analysis: analyse both, compare, diagnose | {analysis:.2f} | | {analysis / load:.2f} |"
    )
    for title, seconds in best["per_view"].items():
        print(f"| view {title!r} built ({seconds / load:.3f} × load) | {seconds:.2f} | | |")
    print(f"| views, all {len(best['per_view'])} | {views:.2f} | | {views / load:.2f} |")
    print(f"| Bokeh models of every tab | {models:.2f} | | {models / load:.2f} |")
    print(f"| **all views ready** | **{ready:.2f}** | | **{ready / load:.2f}** |")
    print(f"| (once per server process, before: Panel/Bokeh warm-up) | {best['warm_up']:.2f} | | |")
    at_once, opened = best["load_at_once"], best["open"]
    dash_views, dash_models = best["dash_views"], best["dash_models"]
    dash = opened + dash_views + dash_models
    print()
    print("What `traceviz dashboard A B` runs (the sides loaded and analysed at once):")
    print()
    print("| step | seconds | CPU s | × load |")
    print("|---|---:|---:|---:|")
    print(
        f"| (both loads alone, at once in two threads) | {at_once:.2f} | "
        f"{best['load_at_once_cpu']:.2f} | {at_once / load:.2f} |"
    )
    print(
        f"| load + analyse both sides at once, compare, diagnose (`comparison_from_args`) | "
        f"{opened:.2f} | {best['open_cpu']:.2f} | {opened / load:.2f} |"
    )
    n_views = len(best["dash_per_view"])
    print(f"| views, all {n_views} | {dash_views:.2f} | | {dash_views / load:.2f} |")
    print(f"| Bokeh models of every tab | {dash_models:.2f} | | {dash_models / load:.2f} |")
    print(f"| **all views ready** | **{dash:.2f}** | | **{dash / load:.2f}** |")
    print()
    verdict = "PASS" if dash <= TARGET_RATIO * load else "FAIL"
    print(
        f"ready / load = {dash:.2f} / {load:.2f} = {dash / load:.2f}  (target <= {TARGET_RATIO}; "
        f"load: both loads one after the other, as defined so far)  {verdict}"
    )
    print(
        f"ready / loads at once = {dash:.2f} / {at_once:.2f} = {dash / at_once:.2f}  (against "
        f"the two loads run at once in two threads)"
    )
    print(
        f"one after the other: ready / load = {ready:.2f} / {load:.2f} = {ready / load:.2f}; "
        f"of which the dashboard's own views + models: {(views + models) / load:.2f} x load, "
        f"the analysis: {analysis / load:.2f} x load"
    )
    ok_marks = max(best["marks_step"], best["marks_all"]) <= MARK_CAP
    print(
        f"timeline marks: first step {best['marks_step']:,.0f}, whole trace "
        f"{best['marks_all']:,.0f} (cap {MARK_CAP:,})  {'PASS' if ok_marks else 'FAIL'}"
    )
    print()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}; "
        f"python {platform.python_version()}; inputs: {'saved traces' if use_cache else 'JSON'}"
    )


if __name__ == "__main__":
    sys.exit(main())
