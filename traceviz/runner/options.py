"""The runner's options: allowed values, defaults and validation (shared by the CLI and the API).

Nothing here imports torch, so ``traceviz run --help`` and option errors are instant.
"""

from __future__ import annotations

from dataclasses import dataclass

from traceviz.errors import UsageError

DEVICES = ("auto", "cpu", "cuda")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DTYPES = ("float32", "bfloat16", "float16")
DEFAULT_MODEL = "block"

BACKENDS = ("eager", "compile", "onnxruntime")  # --backends; eager and compile are required
DEFAULT_BACKENDS = ("eager", "compile")
OFFLINE_OPTIMIZERS = ("transformers",)  # --ort-offline <optimizer>:<model_type>

DEFAULT_STEPS = 5
DEFAULT_WARMUP = 3
DEFAULT_ITERS = 20

# Tolerances of the correctness check by output dtype (rtol, atol). Inductor reorders and fuses
# float arithmetic (and computes half-precision intermediates in float32), so compiled outputs
# differ from eager by rounding; these bounds pass rounding and fail real miscompilation.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-3, 1e-4),
    # float32 GEMMs/convolutions computed in TF32 (10-bit mantissa; cuDNN convolutions by
    # default): PyTorch's own tests check TF32 results to 5e-3
    "tf32": (5e-3, 5e-3),
    "bfloat16": (5e-2, 5e-2),
    "float16": (1e-2, 1e-2),
}
PRECISION_ORDER = ("float64", "float32", "tf32", "float16", "bfloat16")  # most to least precise


@dataclass(frozen=True)
class Options:
    """What the user asked for, validated; ``device="auto"`` is resolved later, with torch."""

    device: str = "auto"
    mode: str = "default"
    backend: str = "inductor"
    dtype: str | None = None
    batch_size: int | None = None
    train: bool = False
    steps: int = DEFAULT_STEPS
    warmup: int = DEFAULT_WARMUP
    iters: int = DEFAULT_ITERS
    backends: tuple[str, ...] = DEFAULT_BACKENDS
    ort_offline: str | None = None

    def __post_init__(self) -> None:
        _check_choice("device", self.device, DEVICES)
        _check_choice("mode", self.mode, MODES)
        if self.dtype is not None:
            _check_choice("dtype", self.dtype, DTYPES)
        if self.mode != "default" and self.backend != "inductor":
            raise UsageError(
                f"--mode {self.mode} applies to the inductor backend only, not {self.backend!r}"
            )
        _check_count("steps", self.steps, minimum=1)
        _check_count("warmup", self.warmup, minimum=0)
        _check_count("iters", self.iters, minimum=1)
        if self.batch_size is not None:
            _check_count("batch-size", self.batch_size, minimum=1)
        _check_backends(self.backends, self.ort_offline, train=self.train)


def parse_backends(text: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``"eager,compile,onnxruntime"`` (or a sequence of names) → a tuple of names."""
    names = text.split(",") if isinstance(text, str) else list(text)
    return tuple(n.strip() for n in names if n.strip())


def _check_backends(backends: tuple[str, ...], offline: str | None, *, train: bool) -> None:
    for name in backends:
        _check_choice("backends", name, BACKENDS)
    if not {"eager", "compile"} <= set(backends):
        raise UsageError(f"--backends must include eager and compile, not {','.join(backends)!r}")
    if "onnxruntime" in backends and train:
        raise UsageError("--backends onnxruntime runs inference only; drop --train")
    if offline is None:
        return
    if "onnxruntime" not in backends:
        raise UsageError("--ort-offline needs --backends ...,onnxruntime")
    optimizer, _, model_type = offline.partition(":")
    if optimizer not in OFFLINE_OPTIMIZERS or not model_type:
        raise UsageError(
            f"--ort-offline must be transformers:<model_type> (e.g. transformers:gpt2), "
            f"not {offline!r}"
        )


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise UsageError(f"--{name} must be one of {', '.join(choices)}, not {value!r}")


def _check_count(name: str, value: int, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"--{name} must be an integer >= {minimum}, not {value!r}")


def tolerance_for(dtypes: list[str]) -> tuple[float, float]:
    """(rtol, atol) of the least precise floating dtype among ``dtypes`` (float32's if none)."""
    floating = [d for d in PRECISION_ORDER if d in dtypes]
    return TOLERANCES[floating[-1]] if floating else TOLERANCES["float32"]
