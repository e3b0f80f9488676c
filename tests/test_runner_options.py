"""Runner options, model specs, run.json and the CLI's failure paths — without compiling.

GIVEN options, MODEL specs, run.json files or command lines WHEN validated / resolved / read /
run THEN they are accepted as documented or refused with one clear line (exit 2 in the CLI).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.runinfo_builder import run_info
from traceviz import cli
from traceviz.errors import TraceFormatError, UsageError
from traceviz.runner import BUILTIN_MODELS, DEFAULT_MODEL, Options, load_model, load_run
from traceviz.runner.options import TOLERANCES, tolerance_for
from traceviz.runs.runinfo import RUN_JSON, SCHEMA_VERSION, RunInfo, decode, encode
from traceviz.units import ascii_text

# ---------------------------------------------------------------- options


def test_options_defaults_are_valid() -> None:
    options = Options()
    assert (options.device, options.mode, options.backend) == ("auto", "default", "inductor")
    assert options.steps >= 1 and options.iters >= 1 and options.warmup >= 0


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"device": "tpu"}, "--device must be one of auto, cpu, cuda"),
        ({"mode": "fast"}, "--mode must be one of"),
        ({"dtype": "float8"}, "--dtype must be one of"),
        ({"steps": 0}, "--steps must be an integer >= 1"),
        ({"iters": 0}, "--iters must be an integer >= 1"),
        ({"warmup": -1}, "--warmup must be an integer >= 0"),
        ({"batch_size": 0}, "--batch-size must be an integer >= 1"),
        ({"steps": True}, "--steps must be an integer"),
        ({"mode": "max-autotune", "backend": "aot_eager"}, "applies to the inductor backend"),
    ],
)
def test_bad_options_raise_one_line_usage_errors(kwargs: dict, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment) as info:
        Options(**kwargs)
    assert "\n" not in str(info.value)


def test_tolerance_is_that_of_the_least_precise_floating_output() -> None:
    assert tolerance_for(["float32"]) == TOLERANCES["float32"]
    assert tolerance_for(["float32", "bfloat16"]) == TOLERANCES["bfloat16"]
    assert tolerance_for(["int64"]) == TOLERANCES["float32"]
    assert tolerance_for([]) == TOLERANCES["float32"]


# ---------------------------------------------------------------- CLI parsing


def parse(*argv: str):  # type: ignore[no-untyped-def]
    return cli.build_parser().parse_args(list(argv))


def test_run_parses_every_documented_option() -> None:
    args = parse(
        "run", "mlp", "--device", "cpu", "--mode", "max-autotune", "--backend", "inductor",
        "--dtype", "bfloat16", "--batch-size", "4", "--steps", "2", "--warmup", "1",
        "--iters", "7", "--train", "--out", "somewhere",
    )  # fmt: skip
    assert (args.model, args.device, args.mode, args.backend) == (
        "mlp",
        "cpu",
        "max-autotune",
        "inductor",
    )
    assert (args.dtype, args.batch_size, args.steps, args.warmup, args.iters) == (
        "bfloat16",
        4,
        2,
        1,
        7,
    )
    assert args.train is True and args.out == "somewhere"


def test_run_defaults() -> None:
    args = parse("run")
    assert args.model == DEFAULT_MODEL
    assert (args.device, args.mode, args.backend, args.dtype) == (
        "auto",
        "default",
        "inductor",
        None,
    )
    assert args.train is False and args.out is None and args.batch_size is None


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "mlp", "--device", "tpu"],
        ["run", "mlp", "--mode", "fast"],
        ["run", "mlp", "--dtype", "float64"],
        ["run", "mlp", "--steps", "two"],
    ],
)
def test_run_rejects_bad_choices_with_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse(*argv)
    assert info.value.code == 2


def test_demo_parses_its_options() -> None:
    args = parse("demo", "--model", "pointwise", "--device", "cpu", "--out", "d")
    assert (args.model, args.device, args.out) == ("pointwise", "cpu", "d")
    assert parse("demo").model == DEFAULT_MODEL


# ---------------------------------------------------------------- model specs


def test_every_builtin_model_has_a_story_and_an_importable_factory_path() -> None:
    assert set(BUILTIN_MODELS) == {
        "block", "pointwise", "linear-add", "mlp", "layernorm-gelu", "attention",
        "conv-bn-relu", "graph-break", "gpt2",
    }  # fmt: skip
    assert DEFAULT_MODEL in BUILTIN_MODELS
    assert all(model.story for model in BUILTIN_MODELS.values())
    pytest.importorskip("torch")  # the factories' module builds torch models
    for model in BUILTIN_MODELS.values():
        module, factory = model.factory.split(":")
        assert callable(getattr(importlib.import_module(module), factory))


def test_unknown_model_names_the_choices() -> None:
    choices = "unknown model 'nope'; built-in models are block, pointwise"
    with pytest.raises(UsageError, match=choices):
        load_model("nope")


def write_factory(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "my_model.py"
    path.write_text(textwrap.dedent(body))
    return path


FACTORY = """
    import torch

    def make(batch_size: int = 3):
        return torch.nn.Linear(4, 2), (torch.ones(batch_size, 4),)

    def no_batch():
        return torch.nn.Identity(), (torch.ones(2),)

    def broken():
        raise RuntimeError("weights are missing\\nsecond line")

    def wrong():
        return 42

    not_callable = 5
"""


def test_file_and_module_factories_are_called_with_the_batch_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch", reason="torch not installed (runner extra)")
    path = write_factory(tmp_path, FACTORY)
    loaded = load_model(f"{path}:make", batch_size=5)
    assert loaded.name == "my_model" and loaded.spec == f"{path}:make"  # the file's name
    assert tuple(loaded.inputs[0].shape) == (5, 4)
    assert tuple(load_model(f"{path}:make").inputs[0].shape) == (3, 4)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_model("my_model:no_batch").name == "my_model"  # the module's name


@pytest.mark.parametrize(
    ("attr", "kwargs", "fragment"),
    [
        ("missing", {}, "has no callable 'missing'"),
        ("not_callable", {}, "has no callable 'not_callable'"),
        ("broken", {}, "factory raised RuntimeError: weights are missing$"),
        ("wrong", {}, r"must return \(model, example_inputs\), got int"),
        ("no_batch", {"batch_size": 2}, "takes no batch_size argument"),
    ],
)
def test_bad_factories_give_one_line(
    tmp_path: Path, attr: str, kwargs: dict, fragment: str
) -> None:
    pytest.importorskip("torch", reason="torch not installed (runner extra)")
    path = write_factory(tmp_path, FACTORY)
    with pytest.raises(UsageError, match=fragment) as info:
        load_model(f"{path}:{attr}", **kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("does/not/exist.py:make", "no such file"),
        ("no_such_module_xyz:make", "cannot import module 'no_such_module_xyz'"),
        (":make", "expected path/to/file.py:factory"),
    ],
)
def test_missing_files_and_modules(spec: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        load_model(spec)


def test_file_that_fails_to_import(tmp_path: Path) -> None:
    path = write_factory(tmp_path, "raise ImportError('no such thing')\n")
    with pytest.raises(UsageError, match=r"importing .* failed: ImportError: no such thing"):
        load_model(f"{path}:make")


def test_gpt2_without_transformers_says_what_to_install() -> None:
    pytest.importorskip("torch")
    try:
        import transformers  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("transformers is installed")
    with pytest.raises(UsageError, match=r"pip install 'traceviz\[gpt2\]'"):
        load_model("gpt2")


# ---------------------------------------------------------------- CLI failure paths


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["nope", "--device", "cpu"], "unknown model 'nope'"),
        (["{factory}:missing", "--device", "cpu"], "has no callable 'missing'"),
        (["pointwise", "--device", "cpu", "--backend", "nope"], "unknown torch.compile backend"),
        (["pointwise", "--device", "cuda"], "--device cuda asked for, but CUDA is not available"),
        (["pointwise", "--steps", "0"], "--steps must be an integer >= 1"),
    ],
)
def test_cli_bad_run_exits_2_with_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch", reason="torch not installed (runner extra)")
    if "cuda" in argv and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    factory = write_factory(tmp_path, FACTORY)
    code, _, err = run_cli(capsys, "run", *(a.format(factory=factory) for a in argv))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("traceviz run: error: ") and fragment in err


def test_models_lists_one_line_per_model_or_fits_the_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe without a width: one line each
    code, out, _ = run_cli(capsys, "models")
    lines = out.splitlines()
    assert code == 0 and [line.split()[0] for line in lines] == list(BUILTIN_MODELS)
    stories = [ascii_text(m.line) for m in BUILTIN_MODELS.values()]  # a pipe: ASCII
    assert all(story in line for story, line in zip(stories, lines, strict=True))
    assert "[default" in next(line for line in lines if line.startswith(DEFAULT_MODEL + " "))
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "models")
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 80
    names = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert names == list(BUILTIN_MODELS)  # each story wrapped under its own name


def test_runner_registry_and_run_reader_import_no_torch() -> None:
    code = (
        "import sys, traceviz, traceviz.runner, traceviz.commands.run, traceviz.commands.models,"
        " traceviz.commands.demo;"
        "traceviz.runner.BUILTIN_MODELS; traceviz.load_run;"
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# ---------------------------------------------------------------- run.json


def sample_info() -> RunInfo:
    """A small, valid run.json record (as a compile failure leaves it)."""
    return run_info(
        compile={"ok": False, "error": {"phase": "compile", "type": "E", "message": "boom"}},
        timing={"method": "m", "eager": {"samples_us": [1.0]}},
        traces={"eager": "eager.pt.trace.json.gz"},
    )


def test_run_json_round_trips(tmp_path: Path) -> None:
    info = sample_info()
    assert info.schema_version == SCHEMA_VERSION
    (tmp_path / RUN_JSON).write_bytes(encode(info))
    run = load_run(tmp_path)
    assert run.info == info and run.directory == tmp_path
    assert load_run(tmp_path / RUN_JSON).info == info
    assert run.compiled_trace is None and run.eager_trace == tmp_path / "eager.pt.trace.json.gz"
    assert not run.ok and run.problems() == ["compiled model failed during compile: E: boom"]


def test_load_run_without_run_json(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"no run\.json: not a traceviz run directory"):
        load_run(tmp_path)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "no integer schema_version"),
        (b'{"schema_version": 99}', "schema 99 is newer than this traceviz reads"),
        (b'{"schema_version": 1, "model": 3}', "does not match schema 1"),
    ],
)
def test_bad_run_json_names_the_file(tmp_path: Path, data: bytes, fragment: str) -> None:
    with pytest.raises(TraceFormatError, match=fragment) as info:
        decode(data, source=tmp_path / RUN_JSON)
    assert str(tmp_path / RUN_JSON) in str(info.value)


# ---------------------------------------------------------------- sample runs in the repo

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"


@pytest.mark.parametrize("name", [n for n in BUILTIN_MODELS if n != "gpt2"])
def test_every_sample_run_is_complete_and_current(name: str) -> None:
    run = load_run(SAMPLES / name)
    assert run.info.schema_version == SCHEMA_VERSION and run.info.model.name == name
    assert run.ok and run.info.options.device == "cpu"
    assert run.eager_trace is not None and run.eager_trace.is_file()
    assert run.compiled_trace is not None and run.compiled_trace.is_file()
    assert run.info.command is not None and run.info.command.startswith(f"traceviz run {name} ")


def test_sample_runs_stay_small() -> None:
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert total < 3 * 2**20
