"""The hand-off object renderers take: a :class:`Report`, one comparison plus its findings.

Analysis knows nothing of diagnosis, so the bundle is made above both (by
:mod:`traceviz.pipeline`, the front door) and handed to every renderer, the dashboard and the
widgets. A Report *is* a :class:`~traceviz.analysis.compare.Comparison` (a subclass adding
``findings``), so code written for a comparison reads a report unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from traceviz.analysis.backends import BackendsView
from traceviz.analysis.compare import Comparison
from traceviz.analysis.roofline.peaks import DevicePeaks
from traceviz.diagnose.finding import Finding
from traceviz.report.snippet import comparison_html_snippet


@dataclass(frozen=True)
class Report(Comparison):
    """A comparison and its diagnosis findings (most severe first), as one value.

    Tables and sides are the comparison's own fields (``metrics``, ``kinds``, ``a``, ``b`` …);
    ``findings`` are :class:`~traceviz.diagnose.Finding` values.
    """

    findings: list[Finding] = field(default_factory=list)
    #: eager, compiled and each ONNX Runtime level side by side (run directories with ORT
    #: backends; :func:`traceviz.analysis.backends.backends_view`), else None
    backends: BackendsView | None = None
    #: the user's device peaks (``--peaks FILE``, :func:`traceviz.analysis.roofline.peaks.
    #: read_peaks_file`) for every side's roofline; None: each device's row of the peak table
    peaks: DevicePeaks | None = None

    @classmethod
    def of(cls, comparison: Comparison, findings: list[Finding]) -> Report:
        """Bundle ``comparison`` (its fields, not copies of its tables) with ``findings``."""
        parts = {f.name: getattr(comparison, f.name) for f in dataclasses.fields(Comparison)}
        return cls(**parts, findings=list(findings))

    @property
    def comparison(self) -> Comparison:
        """The comparison part (the report itself, read as a comparison)."""
        return self

    def _repr_html_(self) -> str:  # rich display in Jupyter
        return comparison_html_snippet(self)
