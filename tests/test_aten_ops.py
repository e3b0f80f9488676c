"""The aten op vocabulary (traceviz.aten_ops) and the modules that read it agree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import traceviz
from tests.conftest import CORPUS, load_trace, op
from traceviz import aten_ops
from traceviz.analysis.fusion.op_keys import NO_WORK_OPS, op_key
from traceviz.analysis.kernel_kinds import KernelKind, classify_kind
from traceviz.analysis.traffic.estimates import TrafficRule, estimate_op
from traceviz.analysis.traffic.rules import OP_RULES
from traceviz.parse.cpu_kernels import NON_COMPUTE
from traceviz.schema import Kernels

FAMILIES = {
    "MATMUL_OPS": aten_ops.MATMUL_OPS,
    "CONV_OPS": aten_ops.CONV_OPS,
    "ATTENTION_OPS": aten_ops.ATTENTION_OPS,
    "NORM_OPS": aten_ops.NORM_OPS | aten_ops.NORM_BACKWARD_OPS,
    "SOFTMAX_OPS": aten_ops.SOFTMAX_OPS | aten_ops.SOFTMAX_BACKWARD_OPS,
    "COPY_OPS": aten_ops.COPY_OPS,
}


def test_vocabulary_is_a_leaf_module() -> None:
    tree = ast.parse(Path(aten_ops.__file__).read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    ]
    assert not [m for m in imported if m.startswith("traceviz")]


def test_no_data_groups_and_families_do_not_overlap() -> None:
    groups = [aten_ops.VIEW_OPS, aten_ops.ALLOC_OPS, aten_ops.METADATA_OPS, *FAMILIES.values()]
    seen: set[str] = set()
    for group in groups:
        assert not seen & group, sorted(seen & group)
        seen |= group
    assert aten_ops.NO_DATA_OPS == aten_ops.VIEW_OPS | aten_ops.ALLOC_OPS | aten_ops.METADATA_OPS


@pytest.mark.parametrize("base", sorted(aten_ops.NO_DATA_OPS))
def test_ops_that_move_no_data_are_no_kernel_no_key(base: str) -> None:
    assert base in NON_COMPUTE and base + "_" in NON_COMPUTE
    assert base in NO_WORK_OPS and op_key(f"aten::{base}") is None
    est = estimate_op(f"aten::{base}", "[[4, 4]]", '["float"]')
    if base in aten_ops.VIEW_OPS | aten_ops.ALLOC_OPS:
        assert est is not None and est.total_bytes == 0
        assert est.rule is (TrafficRule.VIEW if base in aten_ops.VIEW_OPS else TrafficRule.ALLOC)
    else:
        assert est is None


@pytest.mark.parametrize(
    ("family", "kind"),
    [
        ("MATMUL_OPS", KernelKind.GEMM),
        ("CONV_OPS", KernelKind.CONV),
        ("ATTENTION_OPS", KernelKind.ATTENTION),
        ("NORM_OPS", KernelKind.NORMALIZATION),
        ("SOFTMAX_OPS", KernelKind.NORMALIZATION),
    ],
)
def test_compute_families_classify_as_their_kind(family: str, kind: KernelKind) -> None:
    wrong = {b: classify_kind(f"aten::{b}") for b in FAMILIES[family]}
    assert {b: k for b, k in wrong.items() if k is not kind} == {}


@pytest.mark.parametrize(
    ("family", "rule"),
    [
        ("ATTENTION_OPS", TrafficRule.ATTENTION),
        ("NORM_OPS", TrafficRule.NORM),
        ("SOFTMAX_OPS", TrafficRule.SOFTMAX),
        ("COPY_OPS", TrafficRule.COPY),
    ],
)
def test_traffic_rules_cover_the_families(family: str, rule: TrafficRule) -> None:
    dims, types = "[[2, 8, 16, 32], [2, 8, 16, 32], [2, 8, 16, 32]]", '["float", "float", "float"]'
    rules = {
        b: getattr(estimate_op(f"aten::{b}", dims, types), "rule", None) for b in FAMILIES[family]
    }
    assert {b: r for b, r in rules.items() if r is not rule} == {}
    assert FAMILIES[family] <= set(OP_RULES)


def test_every_attention_op_shares_one_fusion_key() -> None:
    assert {op_key(f"aten::{b}") for b in aten_ops.ATTENTION_OPS} == {"attention"}


def test_a_view_is_not_a_cpu_kernel(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    path = tmp_trace([op("aten::conj", 0, 5), op("aten::diagonal", 10, 5), op("aten::mul", 20, 5)])
    names = list(traceviz.load(path).kernels[Kernels.name].astype(str))
    assert names == ["aten::mul"]


@pytest.mark.skipif(not (CORPUS / "nvidia").is_dir(), reason="corpus not found")
def test_conj_on_a_real_trace_has_no_fusion_key() -> None:
    trace = load_trace(CORPUS / "nvidia" / "v100_small_plain.json")
    names = set(trace.ops["name"].astype(str))
    assert "aten::conj" in names
    assert op_key("aten::conj") is None
