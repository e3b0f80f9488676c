"""A run directory's record, without torch: run.json's typed model (:mod:`.runinfo`,
:mod:`.runinfo_backends`) and :class:`~traceviz.runs.run.Run` / :func:`~traceviz.runs.run.load_run`
that read one back. The runner writes them; the analysis, the diagnosis and the front door
read them, so they sit below all three."""
