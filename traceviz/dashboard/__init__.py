"""The Panel dashboard and its notebook widgets (needs the ``dashboard`` extra: panel, plotly).

- :class:`~traceviz.dashboard.app.Dashboard`: the app, a ``pn.viewable.Viewer``;
- :func:`~traceviz.dashboard.serve.serve`: ``traceviz dashboard`` (loopback by default);
- ``panel serve traceviz/dashboard/panel_app.py --args RUN_DIR``: the same app under Panel's
  own server;
- :mod:`traceviz.widgets`: the same components inline in Jupyter.
"""
