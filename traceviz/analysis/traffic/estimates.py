"""Estimated memory traffic (bytes read + bytes written) of ops, from their recorded shapes.

Fusion pays off by not moving bytes, so the comparison needs bytes per eager op. The profiler
records each op's inputs (``Input Dims``, ``Input type``, ``Concrete Inputs``: JSON text as
stored in the ops table), not its outputs, so the output size follows from one rule per op
family. Every estimate names its rule (:class:`TrafficRule`); bytes are ``numel × itemsize``
(itemsize from the type string, :data:`DTYPE_BYTES`), with all inputs read once and every
output written once (caches, re-reads and strides are not modelled):

- ``pointwise``: output shape = broadcast of the tensor inputs; dtype = that of the
  highest-rank tensor input (bool for comparisons). In-place (``add_``) writes ``self``;
  ``fill_``/``zero_``/random fills only write.
- ``reduction`` (sum, mean, amax, …): reads the input; writes the reduced shape when
  ``Concrete Inputs`` give the dims, else nothing (``reduction_no_output``: the output is
  assumed small next to the input).
- ``matmul``: ``mm`` [m,k]·[k,n] → m·n; ``addmm`` (bias, a, b); ``bmm``/``baddbmm`` b·m·n;
  ``linear`` […,k]·[n,k]ᵀ → […,n]; ``matmul`` with batch broadcast; ``mv``; ``dot``. Tensor
  arguments past the op's operands (``out=``, as Inductor's extern calls pass them) are written,
  not read.
- ``conv``: output [N, C_out, spatial] with stride/padding/dilation from ``Concrete Inputs``;
  without them ``conv_approx`` assumes stride 1 and "same" padding (output spatial = input).
- ``norm`` (layer/batch/group/RMS norm) and ``softmax``: output = input size (mean/rstd and
  weight gradients are left out).
- ``attention`` (SDPA and its flash/efficient kernels): output = q's shape with v's last dim.
- ``copy`` (``copy_``, ``clone``, ``contiguous``, ``_to_copy``, ``to``): read source, write the
  copy (``_to_copy``/``to`` in the target dtype when ``Concrete Inputs`` give it);
  ``_foreach_copy_``, whose ``TensorList`` rows record no dtype, is sized from its kernels'
  names instead (:mod:`traceviz.analysis.traffic.foreach`).
- ``view`` and ``alloc`` (views, reshapes, ``empty``): 0 bytes.

Anything else, or inputs that cannot be read, gives no estimate (``None`` / ``<NA>``).

An estimate describes one op as a whole, children included: ``aten::linear`` and the
``aten::addmm`` it calls both get one. Sum over one level only (e.g. the ops that launch
kernels, or a CPU-only trace's kernel ops).

Layout: reading the recorded inputs is :mod:`traceviz.analysis.traffic.args`, the rules per op
family and the op → rule table are :mod:`traceviz.analysis.traffic.rules`; this module is the
per-op entry point (:func:`estimate_op`) and the vectorised tables. Every public name is here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.inductor_names import eager_op_base
from traceviz.analysis.traffic.args import (
    DTYPE_BYTES,
    SCALAR_TYPE_BYTES,
    dtype_bytes,
    parse_args,
    tensor_args,
)
from traceviz.analysis.traffic.rules import (
    ALLOC_OPS,
    OP_RULES,
    VIEW_OPS,
    TrafficEstimate,
    TrafficRule,
)
from traceviz.dense import first_of_codes

__all__ = [
    "DTYPE_BYTES",
    "SCALAR_TYPE_BYTES",
    "Traffic",
    "TrafficEstimate",
    "TrafficRule",
    "dtype_bytes",
    "estimate_op",
    "estimate_op_bytes",
    "estimate_triton_bytes",
    "triton_args_bytes",
]


class Traffic:
    """Columns of the tables :func:`estimate_op_bytes` and :func:`estimate_triton_bytes` return."""

    est_bytes = "est_bytes"  # estimated bytes read + written (Int64; <NA>: no estimate)
    rule = "rule"  # TrafficRule value (category; <NA>: no estimate)


def estimate_op(
    name: str,
    input_dims: str | None,
    input_types: str | None,
    concrete_inputs: str | None = None,
) -> TrafficEstimate | None:
    """Estimate one eager op's traffic from its ops-table row (JSON text), or None.

    ``name`` is the trace op name (``aten::addmm``); the rules are in the module docstring.
    Never raises on malformed input: what cannot be read gives None.
    """
    if not isinstance(name, str):
        return None
    raw = eager_op_base(name)
    base = eager_op_base(name, strip_inplace=True)
    rule = OP_RULES.get(base)
    if rule is None:
        return None
    if base in VIEW_OPS or base in ALLOC_OPS:
        return rule(base, [], False)
    args = parse_args(input_dims, input_types, concrete_inputs)
    return None if args is None else rule(base, args, raw != base)


def triton_args_bytes(input_dims: str | None, input_types: str | None) -> int | None:
    """Bytes of an Inductor kernel launch's tensor arguments (inputs and outputs), or None.

    Each argument is counted once: a buffer the kernel reads and writes in place
    (``in_out_ptr``) appears once in the argument list and is counted once; one passed twice
    is counted twice. Broadcast (stride-0) arguments count their own size.
    """
    args = parse_args(input_dims, input_types, None)
    if args is None:
        return None
    tensors = tensor_args(args)
    return sum(t.nbytes for t in tensors) if tensors else None


# --- vectorised entry points -------------------------------------------------------------


def _group_rows(columns: Sequence[pd.Series]) -> tuple[npt.NDArray[np.int64], list[list[Any]]]:
    """Group id per row over the distinct value combinations, and each group's values."""
    codes_uniques = [pd.factorize(c, use_na_sentinel=True) for c in columns]
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for codes, uniques in codes_uniques:
        key, _ = pd.factorize(key * (len(uniques) + 1) + (np.asarray(codes) + 1))
    key = np.asarray(key, dtype=np.int64)
    first = first_of_codes(key)  # np.unique(key, return_index=True)[1], without its sort
    picked = []  # per column, each group's value: codes gathered at once, uniques as a list
    for codes, uniques in codes_uniques:
        values = list(uniques)
        picked.append([values[c] if c >= 0 else None for c in np.asarray(codes)[first].tolist()])
    groups = [list(values) for values in zip(*picked, strict=True)]
    return key, groups


_INT64_MAX = 2**63 - 1


def _result_frame(
    key: npt.NDArray[np.int64], results: list[tuple[int, str] | None], index: pd.Index
) -> pd.DataFrame:
    """The per-row frame from one result per group (None: no estimate)."""
    results = [r if r is None or r[0] <= _INT64_MAX else None for r in results]
    rules = [r.value for r in TrafficRule]
    est = np.array([r[0] if r else 0 for r in results], dtype=np.int64)
    has = np.array([r is not None for r in results], dtype=bool)
    rule_code = np.array([rules.index(r[1]) if r else -1 for r in results], dtype=np.int64)
    row_est = pd.array(est[key], dtype="Int64")
    row_est[~has[key]] = pd.NA
    return pd.DataFrame(
        {
            Traffic.est_bytes: row_est,
            Traffic.rule: pd.Categorical.from_codes(rule_code[key], categories=pd.Index(rules)),
        },
        index=index,
    )


def estimate_op_bytes(
    names: pd.Series,
    input_dims: pd.Series,
    input_types: pd.Series,
    *,
    concrete_inputs: pd.Series | None = None,
) -> pd.DataFrame:
    """Estimated traffic per op row, aligned with ``names``.

    Columns (:class:`Traffic`): ``est_bytes`` (Int64, bytes read + written; <NA> without an
    estimate) and ``rule`` (category of :class:`TrafficRule` values). Each distinct
    (name, dims, types, concrete inputs) combination is estimated once (:func:`estimate_op`).
    """
    columns = [names, input_dims, input_types]
    if concrete_inputs is not None:
        columns.append(concrete_inputs)
    if any(len(c) != len(names) for c in columns):
        raise ValueError("names, input_dims, input_types and concrete_inputs differ in length")
    key, groups = _group_rows(columns)
    results: list[tuple[int, str] | None] = []
    for values in groups:
        name, dims, types, *rest = [v if isinstance(v, str) else None for v in values]
        est = estimate_op(name or "", dims, types, rest[0] if rest else None)
        results.append((est.total_bytes, est.rule.value) if est else None)
    return _result_frame(key, results, names.index)


def estimate_triton_bytes(
    input_dims: pd.Series, input_types: pd.Series, kernel_num_gb: pd.Series
) -> pd.DataFrame:
    """Estimated traffic per Inductor kernel launch op (the ``triton_…`` CPU-side op).

    Uses Inductor's own ``kernel_num_gb × 1e9`` where present (``inductor_num_gb``), else
    the sum of the launch's tensor arguments (``triton_args``, :func:`triton_args_bytes`).
    Columns as :func:`estimate_op_bytes`.
    """
    key, groups = _group_rows([input_dims, input_types])
    results: list[tuple[int, str] | None] = []
    for values in groups:
        dims, types = [v if isinstance(v, str) else None for v in values]
        total = triton_args_bytes(dims, types)
        results.append((total, TrafficRule.TRITON_ARGS.value) if total is not None else None)
    frame = _result_frame(key, results, input_dims.index)
    gb = pd.to_numeric(pd.Series(kernel_num_gb), errors="coerce").to_numpy(dtype=float)
    use = np.isfinite(gb) & (gb >= 0)
    if use.any():
        frame.loc[use, Traffic.est_bytes] = np.round(gb[use] * 1e9).astype(np.int64)
        frame.loc[use, Traffic.rule] = TrafficRule.INDUCTOR_NUM_GB.value
    return frame
