"""The ``traceviz`` command: one thin module per subcommand in :mod:`traceviz.commands`.

Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int``; its docstring
is its ``--help`` text. Errors from the library (:class:`~traceviz.errors.TraceVizError`) become
one line on stderr and exit code 2; nothing the user did wrong prints a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from traceviz import __version__
from traceviz.errors import TraceVizError

# Subcommand name -> module under traceviz.commands (imported lazily so `--help` stays fast).
COMMANDS: dict[str, str] = {
    "demo": "demo",
    "run": "run",
    "models": "models",
    "summary": "summary",
    "compare": "compare",
    "dashboard": "dashboard",
}


def _load(module_name: str) -> ModuleType:
    return importlib.import_module(f"traceviz.commands.{module_name}")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, every subcommand included."""
    parser = argparse.ArgumentParser(
        prog="traceviz",
        description="What did kernel fusion (torch.compile) do to my model, and why is it "
        "(or isn't it) faster?",
    )
    parser.add_argument("--version", action="version", version=f"traceviz {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = _load(module_name)
        doc = (module.__doc__ or "").strip()
        summary = doc.splitlines()[0] if doc else name
        cmd = sub.add_parser(
            name,
            help=summary,
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(cmd)
        cmd.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``traceviz`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._module.run(args))
    except TraceVizError as err:
        print(f"traceviz {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("traceviz: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
