"""Renderers: the same result objects as text (rich), JSON, Markdown, HTML and figures."""
