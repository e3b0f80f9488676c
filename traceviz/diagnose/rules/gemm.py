"""GEMMs: library GEMMs that autotuning could replace, and a matmul's add left unfused.

- **Extern GEMMs** (compiled traces): GEMM kernels inside compiled regions that Inductor did
  not generate (cuBLAS, hipBLASLt, oneDNN/MKL, or an ATen fallback) taking a sizeable share of
  the step, when the compile did not already use ``max-autotune`` (known from run.json).
  ``max-autotune`` benchmarks Triton/C++ GEMM templates against the library call and can fuse
  the following pointwise ops into the GEMM as an epilogue. No gain is estimated: only the
  benchmark can tell.
- **Matmul + add left unfused** (any trace): a matmul kernel (``mm``/``bmm``/``matmul``, or an
  extern GEMM in a compiled trace) immediately followed on its stream/thread by a pointwise
  kernel that adds, on the matmul's output shape (when shapes are recorded). ``addmm`` (or
  ``F.linear``, or an epilogue-fused template) does the add inside the GEMM.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.inductor_names import eager_op_base, fused_kernel_ops
from traceviz.analysis.kernel_kinds import KernelKind, KernelSource
from traceviz.analysis.kernels import Classified
from traceviz.analysis.shapes import tensor_shapes
from traceviz.analysis.timing.timeline import same_context
from traceviz.diagnose import docs
from traceviz.diagnose.facts import (
    TraceFacts,
    autotuned,
    kernel_time_gain,
    kernel_times,
    middle_name,
    short_name,
    timeline_of,
    top_names,
)
from traceviz.diagnose.facts import us as _us
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.schema import Kernels, Ops

EXTERN_GEMM_ID = "extern-gemm"
MATMUL_ADD_ID = "unfused-matmul-add"
#: Extern GEMMs below a tenth of the step are not worth a longer compile.
EXTERN_GEMM_SHARE = 0.10
#: Matmul + add pairs whose adds take under 1% of the step are not worth a code change.
MATMUL_ADD_SHARE = 0.01
#: GEMM ops whose result still needs a separate add (addmm/linear/baddbmm add in the GEMM).
PLAIN_MATMULS = frozenset({"mm", "bmm", "matmul"})
ADD_OPS = frozenset({"add"})
MATMUL_ADD_BASIS = (
    "upper bound: the separate add kernels' time (measured); fused into the GEMM the add "
    "costs little more than writing the GEMM's output"
)
#: Ops in a fused kernel's name that move no data of their own (not counted as its work).
VIEW_OPS = frozenset(
    {"view", "_unsafe_view", "reshape", "expand", "permute", "t", "transpose", "squeeze",
     "unsqueeze", "slice", "select", "as_strided", "alias"}
)  # fmt: skip
SHARED_ADD_BASIS = (
    "an add fused with other ops counts an even share of its kernel's time (rough: the "
    "kernel still runs for the other ops)"
)


def extern_gemms(facts: TraceFacts) -> list[Finding]:
    """Extern GEMMs in a compiled trace that ``max-autotune`` could template."""
    if facts.is_onnxruntime:  # ORT profiles: no compiled code (ort_advice.py)
        return []
    if not facts.compiled or autotuned(facts.run_info):
        return []
    kernels = facts.kernels
    # on the categorical columns themselves: by code, no object per kernel
    mask = (kernels[Classified.kind] == KernelKind.GEMM.value) & (
        kernels[Classified.source] == KernelSource.EXTERN.value
    )
    if not mask.any():
        return []
    rows = kernels[mask.to_numpy()]
    durs = kernel_times(rows)
    time_us = facts.per_step(float(durs.sum()))
    share = facts.share(time_us)
    if share is None or share < EXTERN_GEMM_SHARE:
        return []
    names = rows[Kernels.op_name].astype(object).fillna(rows[Kernels.name].astype(object))
    if facts.is_gpu:  # the library kernel, after the op that called it
        kernel_names = rows[Kernels.name].astype(object).astype(str).map(middle_name)
        names = names.astype(str).where(
            names.astype(str) == kernel_names, names.astype(str) + ": " + kernel_names
        )
    evidence: list[Evidence | str] = [
        Evidence("extern GEMM kernels per step", facts.per_step(len(rows)), Unit.COUNT),
        Evidence("their time per step", time_us, Unit.US, share),
    ]
    evidence += [
        f"{name}: {calls:.3g} per step, {_us(t)} per step"
        for name, calls, t in top_names(names, durs, facts.n_steps)
    ]
    mode = facts.run_info.compile.mode if facts.run_info is not None else None
    if mode:
        evidence.append(f"compile mode: {mode}")
    cpu = "" if facts.is_gpu else " On CPU, also set `torch._inductor.config.freezing = True` "
    cpu += "(inference): the C++ GEMM template needs constant weights." if cpu else ""
    return [
        Finding(
            id=EXTERN_GEMM_ID,
            severity=Severity.INFO,
            title=f"{facts.name}: {100 * share:.0f}% of the step is in library (extern) GEMMs "
            "that Inductor did not generate",
            evidence=tuple(evidence),
            next_step='Try `torch.compile(model, mode="max-autotune")` (or '
            '"max-autotune-no-cudagraphs"): Inductor benchmarks its GEMM templates against the '
            "library call and can fuse the following pointwise ops into the GEMM. Compilation "
            f"takes longer; keep it only if the step gets faster.{cpu}",
            docs_url=docs.TORCH_COMPILE,
            trace=facts.name,
        )
    ]


def matmul_add(facts: TraceFacts) -> list[Finding]:
    """A matmul followed directly by an add on its output, as two kernels."""
    if facts.is_onnxruntime:  # ORT fuses MatMul+Add itself (BASIC and up): ort_advice.py
        return []
    seq = timeline_of(facts)
    if len(seq) < 2:
        return []
    pairs = _pairs(facts, seq)
    if not pairs:
        return []
    adds = seq.loc[[j for _, j in pairs]]
    durs = adds["dur"].to_numpy(dtype=float)
    shares = _per_name_value(adds["label"], add_share)
    time_us = facts.per_step(float(durs.sum()))
    own_us = facts.per_step(float((durs * shares).sum()))
    share = facts.share(own_us)
    if share is None or share < MATMUL_ADD_SHARE:
        return []
    gemms = seq.loc[[i for i, _ in pairs]]
    shared = bool((shares < 1).any())
    evidence: list[Evidence | str] = [
        Evidence("matmul → add pairs per step", facts.per_step(len(pairs)), Unit.COUNT),
        Evidence("the add kernels' time per step", time_us, Unit.US, facts.share(time_us)),
        *(
            [Evidence("the adds' own share per step (estimated)", own_us, Unit.US, share)]
            if shared
            else []
        ),
        "GEMM kernels: " + ", ".join(sorted({short_name(str(x), 50) for x in gemms["label"]})[:3]),
        "add kernels: " + ", ".join(sorted({short_name(str(x), 50) for x in adds["label"]})[:3]),
    ]
    basis = f"{MATMUL_ADD_BASIS}; {SHARED_ADD_BASIS}" if shared else MATMUL_ADD_BASIS
    gain = kernel_time_gain(facts, own_us, basis)
    if facts.compiled and autotuned(facts.run_info):
        step = (
            "Inductor called a library GEMM and added afterwards, even with max-autotune "
            "(its GEMM templates lost to the library call, or could not take this add as an "
            "epilogue). Write the op as `torch.addmm(bias, x, w)` / `F.linear` so the library "
            "GEMM adds the bias itself."
        )
    elif facts.compiled:
        step = (
            "Inductor called a library GEMM and added afterwards. Write the op as "
            "`torch.addmm(bias, x, w)` / `F.linear`, or compile with "
            '`mode="max-autotune"` so a GEMM template can fuse the add as an epilogue.'
        )
    else:
        step = (
            "Write `x @ w + b` as `torch.addmm(b, x, w)` or `F.linear(x, w.T, b)` (one GEMM "
            "that adds the bias), or compile the model."
        )
    return [
        Finding(
            id=MATMUL_ADD_ID,
            severity=Severity.INFO,
            title=f"{facts.name}: a matmul and the add after it run as separate kernels",
            evidence=tuple(evidence),
            est_gain_us=gain.us,
            gain_basis=gain.basis,
            next_step=step,
            docs_url=docs.ADDMM,
            trace=facts.name,
        )
    ]


def _pairs(facts: TraceFacts, seq: pd.DataFrame) -> list[tuple[int, int]]:
    """(gemm row, add row) index pairs of consecutive kernels in ``seq``."""
    gemm = seq["kind"].isin([KernelKind.GEMM.value]).to_numpy(dtype=bool)
    pointwise = seq["kind"].isin([KernelKind.POINTWISE.value]).to_numpy(dtype=bool)
    labels = seq["label"]
    # a pair is a GEMM row then a pointwise row: the names tested on those rows only
    plain = np.zeros(len(seq), dtype=bool)
    plain[gemm] = _per_name(labels[gemm], is_plain_matmul) | _op_names_are(
        facts, seq["op"][gemm], is_plain_matmul
    )
    adds = np.zeros(len(seq), dtype=bool)
    adds[pointwise] = _per_name(labels[pointwise], is_add)
    candidate = np.zeros(len(seq), dtype=bool)
    candidate[1:] = gemm[:-1] & pointwise[1:] & plain[:-1] & adds[1:]
    candidate &= same_context(seq)
    at = np.flatnonzero(candidate)
    ops = seq["op"].to_numpy(dtype=float)
    gemm_dims, add_dims = _dims(facts, ops[at - 1]), _dims(facts, ops[at])
    return [
        (int(seq.index[j - 1]), int(seq.index[j]))
        for j, g, a in zip(at.tolist(), gemm_dims, add_dims, strict=True)
        if _same_output(g, a)
    ]


def _op_names_are(
    facts: TraceFacts, op_rows: pd.Series, test: Callable[[str], bool]
) -> npt.NDArray[np.bool_]:
    """``test`` of the launching op's name per row (of "" when there is none)."""
    rows = op_rows.to_numpy(dtype=float)
    names = facts.trace.ops[Ops.name]
    known = np.isfinite(rows) & (rows >= 0) & (rows < len(names))
    out = np.full(len(rows), test(""), dtype=bool)
    out[known] = _per_name(names.iloc[rows[known].astype(np.int64)], test)
    return out


def _per_name(names: pd.Series, test: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
    """``test`` per row, evaluated once per distinct name (False where the name is missing);
    a categorical column once per category, its rows looked up by code."""
    if isinstance(names.dtype, pd.CategoricalDtype):
        cats = names.cat.categories
        hit = np.array([test(str(c)) for c in cats] + [False], dtype=bool)  # −1: missing
        return np.asarray(hit[names.cat.codes.to_numpy()], dtype=bool)
    codes, uniques = pd.factorize(names)
    hits = np.array([test(str(u)) for u in uniques], dtype=bool)
    out = np.zeros(len(names), dtype=bool)
    out[codes >= 0] = hits[codes[codes >= 0]]
    return out


def is_plain_matmul(name: str) -> bool:
    """An op or kernel name of a GEMM whose result still needs a separate add
    (:data:`PLAIN_MATMULS`)."""
    return eager_op_base(name, strip_inplace=True) in PLAIN_MATMULS


def is_add(name: str) -> bool:
    """An add op, or a fused kernel whose name says it adds (:data:`ADD_OPS`)."""
    fused = fused_kernel_ops(name)
    if fused is not None:
        return bool(ADD_OPS & set(fused.ops))
    # in-place add_ is left out: autograd's gradient accumulation, not a bias add
    return eager_op_base(name) in ADD_OPS


def add_share(name: str) -> float:
    """The share of an add kernel's time that is the add's own: 1 for an add alone (an eager
    add, or a fused kernel of add and views), else an even share of the fused kernel's
    distinct ops other than views (cpp_fused_add_cos_gelu_mul_relu: 1/5)."""
    fused = fused_kernel_ops(name)
    if fused is None:
        return 1.0
    work = set(fused.ops) - VIEW_OPS
    return 1.0 / len(work) if work else 1.0


def _per_name_value(names: pd.Series, value: Callable[[str], float]) -> npt.NDArray[np.float64]:
    """``value`` per row, evaluated once per distinct name (1 where the name is missing)."""
    codes, uniques = pd.factorize(names.astype(object))
    values = np.array([value(str(u)) for u in uniques] + [1.0], dtype=float)
    return np.asarray(values[np.where(codes >= 0, codes, len(uniques))], dtype=float)


def _same_output(gemm_dims: str | None, add_dims: str | None) -> bool:
    """The add reads a tensor of the matmul's output shape (True when shapes are unknown)."""
    out = _matmul_output(gemm_dims)
    if out is None or add_dims is None:
        return True
    return out in tensor_shapes(add_dims)


def _dims(facts: TraceFacts, ops: npt.NDArray[np.float64]) -> list[str | None]:
    """The ``Input Dims`` text of each op row (None: no op, or shapes not recorded)."""
    dims = facts.trace.ops[Ops.input_dims]
    known = np.isfinite(ops) & (ops >= 0) & (ops < len(dims))
    out = np.full(len(ops), None, dtype=object)
    out[known] = dims.iloc[ops[known].astype(np.int64)].to_numpy(dtype=object)
    return [v if isinstance(v, str) else None for v in out.tolist()]


def _matmul_output(dims: str | None) -> tuple[int, ...] | None:
    """(..., m, n) from the first two tensor inputs (..., m, k) and (..., k, n)."""
    if dims is None:
        return None
    shapes = [s for s in tensor_shapes(dims) if len(s) >= 2]
    if len(shapes) < 2:
        return None
    a, b = shapes[0], shapes[1]
    return (*a[:-1], b[-1])
