"""The ``traceviz`` command: one thin module per subcommand in :mod:`traceviz.commands`.

Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int``; its docstring
is its ``--help`` text. Errors from the library (:class:`~traceviz.errors.TraceVizError`) become
one line on stderr and exit code 2; nothing the user did wrong prints a traceback. When the
reader of the output goes away (``traceviz compare … | head -2``), the command stops quietly
with exit code 141 (128 + SIGPIPE, what a shell reports for a tool killed by a closed pipe): not
0, since the report was cut short, and not 1, which ``--fail-on`` uses.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from traceviz import __version__
from traceviz.errors import TraceVizError, UsageError

# Subcommand name -> module under traceviz.commands (imported lazily so `--help` stays fast).
COMMANDS: dict[str, str] = {
    "demo": "demo",
    "run": "run",
    "models": "models",
    "summary": "summary",
    "compare": "compare",
    "dashboard": "dashboard",
}
# Commands that read trace files, and so take --max-bytes.
READS_TRACES = frozenset({"summary", "compare", "dashboard"})
EXIT_PIPE_CLOSED = 141


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
        if name in READS_TRACES:
            _add_max_bytes(cmd)
        cmd.set_defaults(_module=module)
    return parser


def _add_max_bytes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-bytes",
        metavar="SIZE",
        help="refuse a trace whose JSON (after gzip) is larger than SIZE, e.g. 512M or 8GiB "
        "(default: $TRACEVIZ_MAX_BYTES, else 4GiB); guards against gzip bombs",
    )


def _apply_max_bytes(args: argparse.Namespace) -> None:
    """--max-bytes reaches every trace load of this process through the environment."""
    value = getattr(args, "max_bytes", None)
    if value is not None:
        from traceviz.parse.read import MAX_BYTES_ENV, parse_size

        try:
            os.environ[MAX_BYTES_ENV] = str(parse_size(value))
        except UsageError as err:
            raise UsageError(f"--max-bytes: {err}") from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or already closed
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``traceviz`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return 2
    try:
        _apply_max_bytes(args)
        code = int(args._module.run(args))
        sys.stdout.flush()  # a closed pipe shows here, not after main has returned
        return code
    except TraceVizError as err:
        message = " ".join(str(err).split("\n"))  # one line, whatever the file name holds
        print(f"traceviz {args.command}: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        print("traceviz: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
