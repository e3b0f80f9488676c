"""The statistical verdict under ``traceviz run``/``demo``'s timing table, and the note that
leads their output when the profiled steps do not look like the timed ones.

The table's last row is compiled's median step against eager's; on a noisy machine that
ratio alone can read 2× slower while the timed samples cannot tell the two apart. This line
gives the verdict of :func:`traceviz.analysis.timing.speed.compare_samples` on the same samples
(run.json's ``timing.*.samples_us``), the one ``traceviz compare`` prints.
"""

from __future__ import annotations

from traceviz.analysis.timing.profiled import profiled_vs_timed
from traceviz.analysis.timing.speed import SAME, compare_samples, ratio_words
from traceviz.report.profiled_note import profiled_note
from traceviz.runs.run import Run
from traceviz.runs.runinfo import RunInfo


def speed_line(info: RunInfo) -> str | None:
    """``"speed verdict: compiled is 1.28× faster than eager (95% interval …)"`` for a run
    with timed eager and compiled steps, else None; ratios one way round
    (:func:`~traceviz.analysis.timing.speed.ratio_words`)."""
    timing = info.timing
    if timing.compiled is None:
        return None
    verdict = compare_samples(timing.eager.samples_us, timing.compiled.samples_us)
    if not verdict.tested:
        return None
    how = f"{verdict.interval_text()}; bootstrap of the medians of the timed steps"
    if verdict.verdict == SAME:
        return (
            f"speed verdict: no significant difference (median {ratio_words(verdict.ratio)}, {how})"
        )
    return f"speed verdict: compiled is {ratio_words(verdict.ratio)} than eager ({how})"


def profiled_line(run: Run) -> str | None:
    """The "profiled times are not representative: …" note
    (:func:`traceviz.report.profiled_note.profiled_note`) when the run's profiled step medians
    disagree with its timed ones; None when they agree, or without both traces and timing.
    Reads both traces (the parse cache keeps them for the ``compare`` that follows)."""
    if run.eager_trace is None or run.compiled_trace is None or run.info.timing.compiled is None:
        return None
    check = profiled_vs_timed(
        run.load_eager(), run.load_compiled(), names=("eager", "compiled"), run_info=run.info
    )
    return profiled_note(check)
