"""List the built-in models and the fusion story each one tells.

One line each: name, the fusion story it tells, and its kernels per step eager → compiled as
`traceviz compare` counts them on its sample run (CPU, float32).

Run one with `traceviz run NAME`. Your own model: `traceviz run path/to/file.py:factory`,
where factory() returns (model, example_inputs).

examples:
  traceviz models
  traceviz models | cut -d' ' -f1    # the names alone, for scripts (a pipe: one line each)
  COLUMNS=80 traceviz models          # wrapped at 80 columns
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import textwrap

from traceviz.runner import BUILTIN_MODELS, DEFAULT_MODEL
from traceviz.units import ascii_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    width = max(len(name) for name in BUILTIN_MODELS)
    # wrapped at the terminal's width, or $COLUMNS; in a pipe without it one line a model
    value = os.environ.get("COLUMNS", "")
    columns = int(value) if value.isdecimal() and int(value) > 20 else None
    if sys.stdout.isatty():
        columns = shutil.get_terminal_size().columns
    for model in BUILTIN_MODELS.values():
        notes = []
        if model.name == DEFAULT_MODEL:
            notes.append("default")
        module = {"gpt2": "transformers"}.get(model.extra or "", model.extra)
        if module and importlib.util.find_spec(module) is None:
            notes.append(f"needs pip install 'traceviz[{model.extra}]'")
        suffix = f" [{'; '.join(notes)}]" if notes else ""
        line = f"{model.name:<{width}}  {model.line}{suffix}"
        if not sys.stdout.isatty():  # ASCII in a pipe, as the other commands' text
            line = ascii_text(line)
        if columns:  # wrap under the story; a pipe keeps one line per model
            line = textwrap.fill(line, columns - 1, subsequent_indent=" " * (width + 2))
        print(line)
    return 0
