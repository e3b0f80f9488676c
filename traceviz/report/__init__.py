"""Renderers: one :class:`~traceviz.report.bundle.Report` (comparison + findings, made by
:mod:`traceviz.pipeline`) as text (rich), JSON, Markdown, HTML, a Perfetto trace and figures.
:mod:`~traceviz.report.formats` is the ``--format`` registry; nothing here runs a diagnosis."""
