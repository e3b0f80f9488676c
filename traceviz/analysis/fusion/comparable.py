"""Are two traces the same workload? The guard in front of every fusion figure.

A fusion map (which eager ops became which compiled kernel, bytes saved) only means something
when trace a is an eager run and trace b a compiled run *of the same model and inputs*.
:func:`comparability` checks what the traces can tell:

1. **device kind** — both ran on the same kind of device: a GPU against the CPU (or a device
   traceviz does not model) is another workload; two GPU vendors (cuda against rocm: the
   same model on an H100 and an MI300) fail only **device vendor**, which withholds the
   per-kernel fusion figures (kernel names and libraries differ by vendor) but not the speed
   and peak-memory verdicts (:attr:`Comparability.other_workload` stays False);
2. **a is eager** — a has no Inductor kernels and no compiled-region markers (a compiled
   trace as "eager" turns the map into compiled-vs-compiled);
3. **op signatures** — the ops that survive compilation as library calls (GEMMs, convolutions,
   attention: :data:`~traceviz.analysis.fusion.match.HEAVY_KEYS`) by key and the shapes of
   their ≥2-D inputs: b's extern calls should be calls a makes too (at least
   :data:`MIN_OVERLAP` of b's distinct signatures; by key alone when either side has no
   shapes);
4. **fused ops** — the ops b's Inductor kernels are named after should be ops a runs (at least
   :data:`MIN_OVERLAP` of them, after aliasing and counting the ops around each kernel);
5. **step structure** — per profiler step, b should not run many more library calls than a
   (more than 2× + 2).

When either trace is an ONNX Runtime profile (:attr:`~traceviz.trace.TraceMeta.is_onnxruntime`)
the checks are instead:

6. **framework** — both are ORT profiles (an ORT profile against a PyTorch trace is refused:
   ops and nodes are not matched by name; the runner's backends view compares them);
7. **node shapes** — device kinds as in 1, and at least :data:`MIN_SHAPE_OVERLAP` of the
   distinct ≥2-D input shapes of b's nodes are shapes a's nodes take (two optimization levels
   of one model keep their tensors; fusions reshape a few).

A check that has nothing to look at (no GEMMs in b, no Inductor kernels) passes. The result
lists the failed checks by name (:attr:`Comparability.failed`, the names below) and a reason
for each; ``forced`` records that the caller compares anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.fusion.match import COMPOSITES, HEAVY_KEYS, Coded, distinct
from traceviz.analysis.fusion.op_keys import name_keys, op_key
from traceviz.analysis.inductor_names import fused_kernel_ops
from traceviz.analysis.shapes import tensor_shapes
from traceviz.analysis.windows import full_steps
from traceviz.dense import sorted_unique
from traceviz.schema import ActivityKind, Kernels, Ops, Regions
from traceviz.trace import Trace

__all__ = ["CHECKS", "MIN_OVERLAP", "Comparability", "comparability"]

#: How check 2's reasons begin.
A_COMPILED = "a is itself compiled"
#: The checks' names, as :attr:`Comparability.failed` lists them (module docstring).
DEVICE_KIND, DEVICE_VENDOR, A_EAGER = "device kind", "device vendor", "a is eager"
SIGNATURES, FUSED_OPS, STEP_STRUCTURE = "op signatures", "fused ops", "step structure"
FRAMEWORK, NODE_SHAPES = "framework", "node shapes"
CHECKS = (
    DEVICE_KIND,
    DEVICE_VENDOR,
    A_EAGER,
    SIGNATURES,
    FUSED_OPS,
    STEP_STRUCTURE,
    FRAMEWORK,
    NODE_SHAPES,
)
#: Failed checks that still leave a and b one workload (the speed and peak verdicts stand).
_SAME_WORKLOAD = (DEVICE_VENDOR, A_EAGER)
#: Device kinds of one vendor each: the same model may run on either.
_GPU_KINDS = ("cuda", "rocm")
#: Share of b's signatures (or fused ops) that must also be a's.
MIN_OVERLAP = 0.5
#: ORT profiles: share of b's distinct ≥2-D node input shapes that must also be a's. Levels of
#: one model keep most (ALL adds Reshape/Gemm shapes: 50% on a 1-block model, 81–100% on
#: GPT-2 and the built-in models); different models measured here share none.
MIN_SHAPE_OVERLAP = 0.25


@dataclass(frozen=True)
class Comparability:
    """The guard's verdict. ``comparable`` is False when any check failed (``reasons``, one
    line each); ``signature_overlap``/``fused_op_overlap`` are the shares of checks 3 and 4
    (None when the check had nothing to look at); ``forced`` is True when the caller asked to
    compare anyway (the fusion figures are then computed although ``comparable`` is False);
    ``failed`` names the failed checks (:data:`CHECKS`), one per reason, in the same order."""

    comparable: bool
    reasons: tuple[str, ...] = ()
    signature_overlap: float | None = None
    fused_op_overlap: float | None = None
    forced: bool = False
    failed: tuple[str, ...] = ()

    @property
    def withheld(self) -> bool:
        """The fusion figures are left out (not comparable and not forced)."""
        return not self.comparable and not self.forced

    @property
    def other_workload(self) -> bool:
        """Withheld for a reason other than "a is itself compiled" or "the GPU vendors differ":
        a and b look like runs of different workloads (device kind, library calls, fused ops or
        step structure differ), so their step times and peaks are no verdict on compiling
        either. Without check names (a verdict made by hand), any reason but check 2's."""
        if not self.withheld:
            return False
        if self.failed:
            return any(name not in _SAME_WORKLOAD for name in self.failed)
        return any(not r.startswith(A_COMPILED) for r in self.reasons)


def comparability(eager: Trace, compiled: Trace, *, force: bool = False) -> Comparability:
    """Check that ``eager`` and ``compiled`` are the same workload (module docstring)."""
    if eager.meta.is_onnxruntime or compiled.meta.is_onnxruntime:
        return _ort_comparability(eager, compiled, force=force)
    failed: list[tuple[str, str]] = []  # (check, reason)
    device = _device_check(eager, compiled)
    if device is not None:
        failed.append(device)
    a_kernels = _kernel_rows(eager)
    inductor = _inductor_names(a_kernels)
    if inductor:
        failed.append(
            (
                A_EAGER,
                f"{A_COMPILED}: it runs {len(inductor)} distinct Inductor kernel(s) "
                f"(e.g. {sorted(inductor)[0]}); a fusion map needs an eager trace as a",
            )
        )
    elif len(eager.regions):
        failed.append(
            (
                A_EAGER,
                f"{A_COMPILED}: it has {len(eager.regions)} compiled-region marker(s) "
                f"(e.g. {eager.regions[Regions.name].iloc[0]}); a fusion map needs an eager "
                "trace as a",
            )
        )
    a_sigs, a_heavy = _heavy_signatures(eager, a_kernels, inductor=False)
    b_kernels = _kernel_rows(compiled)
    b_sigs, b_heavy = _heavy_signatures(compiled, b_kernels, inductor=True)
    overlap = _signature_overlap(a_sigs, b_sigs)
    if overlap is not None and overlap < MIN_OVERLAP:
        failed.append(
            (
                SIGNATURES,
                f"only {overlap:.0%} of b's library calls (GEMM/conv/attention by op and "
                f"shape) are calls a makes ({_few(_unmet(b_sigs, a_sigs))} are not)",
            )
        )
    fused = _fused_op_overlap(eager, a_kernels, b_kernels)
    if fused is not None and fused[0] < MIN_OVERLAP:
        failed.append(
            (
                FUSED_OPS,
                f"only {fused[0]:.0%} of the ops b's Inductor kernels are named after are ops "
                f"a runs ({_few(fused[1])} are not)",
            )
        )
    steps = (len(full_steps(eager)), len(full_steps(compiled)))
    per_step = [n / k if k else float(n) for n, k in zip((a_heavy, b_heavy), steps, strict=True)]
    if b_heavy and per_step[1] > 2 * per_step[0] + 2:
        failed.append(
            (
                STEP_STRUCTURE,
                f"b runs {per_step[1]:.3g} library calls per step, a only {per_step[0]:.3g}",
            )
        )
    fused_overlap = fused[0] if fused is not None else None
    return _verdict(failed, force, signature_overlap=overlap, fused_op_overlap=fused_overlap)


def _verdict(failed: list[tuple[str, str]], force: bool, **overlaps: float | None) -> Comparability:
    """The verdict of the failed (check, reason) pairs."""
    reasons, checks = tuple(r for _, r in failed), tuple(c for c, _ in failed)
    return Comparability(not failed, reasons, forced=force, failed=checks, **overlaps)


def _device_check(a: Trace, b: Trace) -> tuple[str, str] | None:
    """Check 1: (check name, reason) when the device kinds differ, else None. Two GPU vendors
    fail "device vendor" only (module docstring)."""
    kinds = (a.device_kind.value, b.device_kind.value)
    if kinds[0] == kinds[1]:
        return None
    if kinds[0] in _GPU_KINDS and kinds[1] in _GPU_KINDS:
        return (
            DEVICE_VENDOR,
            f"device vendors differ: {kinds[0]} vs {kinds[1]} (per-kernel fusion figures need "
            "one vendor's kernels; the speed and peak-memory verdicts stand)",
        )
    return DEVICE_KIND, f"device kinds differ: {kinds[0]} vs {kinds[1]}"


def _ort_comparability(a: Trace, b: Trace, *, force: bool) -> Comparability:
    """Checks 6 and 7 (module docstring): one side an ONNX Runtime profile."""
    frameworks = (a.meta.framework, b.meta.framework)
    if frameworks[0] != frameworks[1]:
        what = {"pytorch": "a PyTorch trace", "onnxruntime": "an ONNX Runtime profile"}
        reason = (
            f"frameworks differ: a is {what[frameworks[0]]}, b {what[frameworks[1]]}; ops "
            "and ORT nodes are not matched by name (`traceviz run --backends "
            "eager,compile,onnxruntime` compares them in its backends view)"
        )
        return Comparability(comparable=False, reasons=(reason,), forced=force, failed=(FRAMEWORK,))
    failed: list[tuple[str, str]] = []  # (check, reason)
    device = _device_check(a, b)
    if device is not None:
        failed.append(device)
    a_shapes, b_shapes = _node_shapes(a), _node_shapes(b)
    overlap = len(a_shapes & b_shapes) / len(b_shapes) if a_shapes and b_shapes else None
    if overlap is not None and overlap < MIN_SHAPE_OVERLAP:
        unmet = {"[" + "x".join(map(str, s)) + "]" for s in b_shapes - a_shapes}
        failed.append(
            (
                NODE_SHAPES,
                f"only {overlap:.0%} of the tensor shapes (≥2-D) b's nodes take are shapes "
                f"a's nodes take ({_few(unmet)} are not)",
            )
        )
    return _verdict(failed, force)  # the overlap is in the reason, not check 3's field


def _node_shapes(trace: Trace) -> set[tuple[int, ...]]:
    """The distinct ≥2-D input shapes of an ORT profile's nodes (each dims text read once)."""
    rows = trace.kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    rows = rows[np.isfinite(rows)].astype(np.int64)
    dims = trace.ops[Ops.input_dims].astype(object).to_numpy()[rows]
    out: set[tuple[int, ...]] = set()
    for text in {d for d in dims if isinstance(d, str)}:
        out |= {tuple(s) for s in tensor_shapes(text) if len(s) >= 2}
    return out


def _kernel_rows(trace: Trace) -> pd.DataFrame:
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    return kernels.loc[is_kernel, [Kernels.name, Kernels.op_name, Kernels.op_row]]


def _inductor_names(kernels: pd.DataFrame) -> set[str]:
    names = distinct(Coded.of(kernels[Kernels.name]))
    return {str(n) for n in names if fused_kernel_ops(str(n)) is not None}


Signature = tuple[str, frozenset[str] | None]


def _heavy_signatures(
    trace: Trace, kernels: pd.DataFrame, *, inductor: bool
) -> tuple[set[Signature], int]:
    """Distinct (key, shapes) of the kernels whose own op is a heavy op, and how many such
    kernels there are. Shapes are the set of the ≥2-D inputs' dims (None when the op has
    none recorded). With ``inductor``, Inductor kernels are left out (b's library calls).

    Worked on codes: the label (op name, else kernel name) and the op's ``Input Dims`` are
    looked at once per distinct value, never as one object per kernel or op."""
    name = Coded.of(kernels[Kernels.name])
    op = Coded.of(kernels[Kernels.op_name])
    label = np.where(op.codes >= 0, op.codes, name.codes + len(op.uniques))
    label[(op.codes < 0) & (name.codes < 0)] = -1
    rows = kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    if inductor:
        fused = _inductor_names(kernels)
        keep = ~name.flags(lambda n: n in fused)
        label, rows = label[keep], rows[keep]
    texts = np.concatenate([op.uniques, name.uniques])
    used = sorted_unique(label[label >= 0])  # (np.unique's, without its sort)
    heavy_label = np.zeros(len(texts) + 1, dtype=bool)  # the last: no label (code −1)
    heavy_label[used] = [op_key(str(t)) in HEAVY_KEYS for t in texts[used]]
    heavy = heavy_label[label]
    op_rows = rows[heavy]
    has_op = ~np.isnan(op_rows)
    dim_codes = np.full(len(op_rows), -1, dtype=np.int64)
    dim_texts: npt.NDArray[np.object_] = np.empty(0, dtype=object)
    if len(trace.ops) and has_op.any():
        dims = Coded.of(trace.ops[Ops.input_dims])
        dim_codes[has_op] = dims.codes[op_rows[has_op].astype(np.int64)]
        dim_texts = dims.uniques
    # each distinct (label, dims) once; a set, so their order does not matter
    pairs = np.unique(label[heavy] * (len(dim_texts) + 1) + (dim_codes + 1))
    sigs: set[Signature] = set()
    for pair in pairs.tolist():
        at, dim = divmod(pair, len(dim_texts) + 1)
        text = dim_texts[dim - 1] if dim > 0 else None
        sigs.add((str(op_key(str(texts[at]))), _matrix_dims(text)))
    return sigs, int(heavy.sum())


def _matrix_dims(text: object) -> frozenset[str] | None:
    """The distinct dims of the ≥2-D inputs of an ``Input Dims`` text (None when unknown).
    A set, so ``mm(x, w, out=y)`` and ``addmm(bias, x, w)`` meet."""
    if not isinstance(text, str) or not text:
        return None
    mats = frozenset(str(list(d)) for d in tensor_shapes(text) if len(d) >= 2)
    return mats or None


def _meets(x: Signature, y: Signature) -> bool:
    """Same key, and shapes unknown on either side or one set within the other."""
    if x[0] != y[0]:
        return False
    if x[1] is None or y[1] is None:
        return True
    return x[1] <= y[1] or y[1] <= x[1]


def _signature_overlap(a: set[Signature], b: set[Signature]) -> float | None:
    """Share of b's signatures that meet one of a's (None when b has none)."""
    if not b:
        return None
    return sum(any(_meets(y, x) for x in a) for y in b) / len(b)


def _fused_op_overlap(
    eager: Trace, a_kernels: pd.DataFrame, b_kernels: pd.DataFrame
) -> tuple[float, set[str]] | None:
    """Share of the keys b's Inductor kernels are named after that a's ops have, and the
    missing ones (None when b has no Inductor kernel naming an op)."""
    wanted: set[str] = set()
    for name in _inductor_names(b_kernels):
        wanted.update(name_keys(name))
    if not wanted:
        return None
    names = set(eager.ops[Ops.name].astype(object).dropna().unique()) if len(eager.ops) else set()
    names |= set(a_kernels[Kernels.name].astype(object).dropna().unique())
    have: set[str] = set()
    for name in names:
        have.update(name_keys(str(name)))
    for key in list(have):
        have.update(COMPOSITES.get(key, ()))
    missing = wanted - have
    return 1 - len(missing) / len(wanted), missing


def _unmet(b: set[Signature], a: set[Signature]) -> set[str]:
    return {
        f"{key} {'x'.join(sorted(shape)) if shape else '(no shapes)'}"
        for key, shape in b
        if not any(_meets((key, shape), x) for x in a)
    }


def _few(items: set[str], limit: int = 3) -> str:
    text = sorted(items)
    more = f" and {len(text) - limit} more" if len(text) > limit else ""
    return ", ".join(text[:limit]) + more
