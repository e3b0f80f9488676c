"""The ONNX Runtime graph analyses on tiny graphs that this ORT really optimizes: op counts,
the dataflow mapping (fused, kept, folded), the partition of exported nodes, the profile
reader, and the match of fused nodes to Inductor kernels."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tests import ort_fixtures as fx
from traceviz.analysis.fusion.ops import KERNEL_OPS_DTYPES
from traceviz.analysis.onnx.fusion import CrossFusion, cross_fusion
from traceviz.analysis.onnx.graph import GraphMapping, Mapped, map_graph, op_counts
from traceviz.analysis.onnx.nodes import Graph, aten_name, graph_of, read_graph
from traceviz.analysis.onnx.profile_nodes import read_profile_nodes
from traceviz.errors import TraceFormatError

pytest.importorskip("onnxruntime")


def _optimized(tmp_path: Path, build, level: str, *, profile: bool = False):  # type: ignore[no-untyped-def]
    src = build(tmp_path / "model.onnx")
    dest = tmp_path / f"ort_{level}.onnx"
    prof = tmp_path / f"ort_{level}.profile.json" if profile else None
    fx.optimize(src, level, dest, feeds=fx.feeds_for(src), profile=prof)
    return read_graph(src), read_graph(dest), prof


def _mapped(tmp_path: Path, build, level: str):  # type: ignore[no-untyped-def]
    """The exported and optimized graphs and their mapping, checked to be a partition."""
    exported, optimized, _ = _optimized(tmp_path, build, level)
    mapping = map_graph(exported, optimized, level=level)
    assert_partition(exported, mapping)
    return exported, optimized, mapping


def _claimed(mapping: GraphMapping) -> list[str]:
    names = ", ".join(mapping.nodes[Mapped.exported_nodes]).split(", ")
    return [n for n in names if n]


def assert_partition(exported: Graph, mapping: GraphMapping) -> None:
    """Each exported node is claimed at most once, or folded, never both; together they are
    at most the exported nodes."""
    claimed = _claimed(mapping)
    folded = list(mapping.folded["node"])
    assert len(claimed) == len(set(claimed))
    assert not set(claimed) & set(folded)
    assert set(claimed) | set(folded) <= {n.name for n in exported.nodes}
    assert int(mapping.nodes[Mapped.exported_count].sum()) == len(claimed)
    assert set(mapping.claims) == set(claimed)


def _fused_rows(mapping: GraphMapping) -> list[dict[str, object]]:
    return mapping.fused.to_dict("records")


def test_matmul_add_becomes_one_gemm_that_claims_both(tmp_path: Path) -> None:
    exported, optimized, mapping = _mapped(tmp_path, fx.matmul_add, "basic")
    (row,) = _fused_rows(mapping)
    assert row[Mapped.op] == "ai.onnx:Gemm" and row[Mapped.kind] == "fused"
    assert set(str(row[Mapped.exported_nodes]).split(", ")) == {"/fc/MatMul", "/fc/Add"}
    assert row[Mapped.scopes] == "fc"  # the legacy-style name's module path
    kept = mapping.nodes[mapping.nodes[Mapped.kind] == "kept"]
    assert list(kept[Mapped.exported_nodes]) == ["/act/Relu"]
    counts = op_counts({"exported": exported, "basic": optimized})
    by = {(g, o): int(c) for g, o, c in counts.itertuples(index=False)}
    assert by[("basic", "ai.onnx:Gemm")] == sum(n.op_type == "Gemm" for n in optimized.nodes)
    assert ("basic", "ai.onnx:MatMul") not in by
    assert sum(c for (g, _), c in by.items() if g == "exported") == len(exported.nodes)


def test_extended_level_fuses_into_contrib_nodes_and_disable_keeps_all(tmp_path: Path) -> None:
    exported, _, mapping = _mapped(tmp_path, fx.gelu_erf, "extended")
    (row,) = _fused_rows(mapping)
    assert row[Mapped.op].startswith("com.microsoft:") and "Gelu" in row[Mapped.op]
    assert row[Mapped.exported_count] == len(exported.nodes)  # all five nodes
    assert mapping.folded.empty
    # add then layer norm becomes SkipLayerNormalization
    *_, mapping = _mapped(tmp_path, fx.skip_layer_norm, "extended")
    (row,) = _fused_rows(mapping)
    assert row[Mapped.op] == "com.microsoft:SkipLayerNormalization"
    assert set(str(row[Mapped.exported_nodes]).split(", ")) == {"/add/Add", "/ln/LN"}
    # the disable level keeps every node
    exported, _, mapping = _mapped(tmp_path, fx.skip_layer_norm, "disable")
    assert set(mapping.nodes[Mapped.kind]) == {"kept"}
    assert sorted(_claimed(mapping)) == sorted(n.name for n in exported.nodes)


def test_constant_branch_is_folded_and_identity_removed(tmp_path: Path) -> None:
    *_, mapping = _mapped(tmp_path, fx.constant_branch, "basic")
    reasons = dict(zip(mapping.folded["node"], mapping.folded["reason"], strict=True))
    assert reasons["/const/Sqrt"] == reasons["/const/Mul"] == "constant-folded"
    assert reasons["/Identity"] == "removed"
    assert "/Add" in _claimed(mapping) and mapping.fused.empty  # the Add is kept as it was


def test_a_node_two_groups_need_is_claimed_once_and_counted_as_shared() -> None:
    from onnx import TensorProto, helper

    def model(nodes):  # type: ignore[no-untyped-def]
        io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "u", "v")]
        return helper.make_model(helper.make_graph(nodes, "g", io[:1], io[1:]))

    exported = graph_of(model([
        helper.make_node("Exp", ["a"], ["t"], name="X"),
        helper.make_node("Relu", ["t"], ["u"], name="Y"),
        helper.make_node("Sigmoid", ["t"], ["v"], name="Z"),
    ]))  # fmt: skip
    optimized = graph_of(model([
        helper.make_node("F1", ["a"], ["u"], name="F1", domain="x"),
        helper.make_node("F2", ["a"], ["v"], name="F2", domain="x"),
    ]))  # fmt: skip
    mapping = map_graph(exported, optimized, level="all")
    assert_partition(exported, mapping)
    rows = mapping.nodes.set_index(Mapped.node)
    assert set(str(rows.loc["F1", Mapped.exported_nodes]).split(", ")) == {"X", "Y"}
    assert rows.loc["F2", Mapped.exported_nodes] == "Z"
    assert rows.loc["F2", Mapped.shared] == 1 and rows.loc["F1", Mapped.shared] == 0
    table = cross_fusion(mapping)
    assert dict(zip(table[CrossFusion.node], table[CrossFusion.shared], strict=True)) == {
        "F1": 0,
        "F2": 1,
    }


def test_profile_reader_counts_runs_and_tolerates_a_cut_short_file(tmp_path: Path) -> None:
    _, optimized, profile = _optimized(tmp_path, fx.matmul_add, "basic", profile=True)
    assert profile is not None
    events = json.loads(profile.read_text())
    nodes = read_profile_nodes(profile)
    assert nodes.runs == sum(e.get("name") == "model_run" for e in events)
    node_events = [e for e in events if e.get("cat") == "Node"
                   and e["name"].endswith("_kernel_time")]  # fmt: skip
    assert nodes.calls == len(node_events)
    assert nodes.time_us == pytest.approx(sum(e["dur"] for e in node_events))
    assert set(nodes.nodes["node"]) <= {n.name for n in optimized.nodes}
    cut = tmp_path / "cut.json"
    cut.write_text(profile.read_text().rstrip().rstrip("]"))
    again = read_profile_nodes(cut)
    assert again.runs == nodes.runs and again.calls == nodes.calls


def test_fused_time_is_a_partition_of_the_profile(tmp_path: Path) -> None:
    exported, optimized, profile = _optimized(tmp_path, fx.matmul_add, "basic", profile=True)
    nodes = read_profile_nodes(profile)  # type: ignore[arg-type]
    mapping = map_graph(exported, optimized, level="basic")
    fused = cross_fusion(mapping, profile=nodes)
    everything = cross_fusion(
        GraphMapping("basic", mapping.nodes.assign(kind="fused"), mapping.folded, {}, 0, 0),
        profile=nodes,
    )
    per_run = nodes.time_us / nodes.runs
    assert 0 < fused[CrossFusion.time_us].sum() <= per_run + 1e-9
    assert everything[CrossFusion.time_us].sum() == pytest.approx(per_run)


def test_bad_files_raise_one_error_naming_them(tmp_path: Path) -> None:
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00not a model\xff" * 10)
    with pytest.raises(TraceFormatError, match=re.escape("junk.onnx")):
        read_graph(junk)
    with pytest.raises(TraceFormatError, match=re.escape("missing.onnx")):
        read_graph(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a profile"}')
    with pytest.raises(TraceFormatError, match=re.escape("bad.json")):
        read_profile_nodes(bad)
    (tmp_path / "garbage.json").write_text("[{")
    with pytest.raises(TraceFormatError, match=re.escape("garbage.json")):
        read_profile_nodes(tmp_path / "garbage.json")


def _kernel_ops(rows: list[tuple[str, str]]) -> pd.DataFrame:
    table = pd.DataFrame([(k, o, 1, 10.0) for k, o in rows], columns=list(KERNEL_OPS_DTYPES))
    return table.astype(KERNEL_OPS_DTYPES)


def test_inductor_kernels_are_the_ones_sharing_most_aten_ops(tmp_path: Path) -> None:
    exported, optimized, _ = _optimized(tmp_path, fx.skip_layer_norm, "extended")
    exported = Graph(  # give the exported nodes the aten ops a dynamo export records
        exported.path,
        tuple(
            type(n)(**{**n.__dict__, "aten_op": "aten::add" if n.op_type == "Add"
                       else "aten::layer_norm"})
            for n in exported.nodes
        ),
        exported.inputs,
        exported.initializers,
    )  # fmt: skip
    ops = _kernel_ops([
        ("cpp_fused_add_native_layer_norm_0", "aten::add"),
        ("cpp_fused_add_native_layer_norm_0", "aten::native_layer_norm"),
        ("cpp_fused_add_1", "aten::add"),
        ("aten::addmm", "aten::addmm"),
    ])  # fmt: skip
    table = cross_fusion(map_graph(exported, optimized, level="extended"), kernel_ops=ops)
    (row,) = table.to_dict("records")
    assert row[CrossFusion.inductor_kernels] == "cpp_fused_add_native_layer_norm_0"
    assert row[CrossFusion.match] == "aten-op"
    assert pd.isna(row[CrossFusion.time_us])  # no profile given: no time


def test_legacy_graphs_match_inductor_kernels_by_onnx_op_type(tmp_path: Path) -> None:
    exported, optimized, _ = _optimized(tmp_path, fx.matmul_add, "basic")
    ops = _kernel_ops([("aten::addmm", "aten::addmm"), ("cpp_fused_relu_0", "aten::relu")])
    (row,) = cross_fusion(map_graph(exported, optimized, level="basic"), kernel_ops=ops).to_dict(
        "records"
    )
    assert row[CrossFusion.inductor_kernels] == "aten::addmm"
    assert row[CrossFusion.match] == "onnx-op"


def test_aten_names_drop_the_overload() -> None:
    assert aten_name("aten.linear.default") == "aten::linear"
    assert aten_name("aten.add.Tensor") == "aten::add"
    assert aten_name("mylib.op") == "mylib.op"


@pytest.fixture(scope="module")
def dynamo_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(16, 16)
            self.ln = torch.nn.LayerNorm(16)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(16, 16))

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.mlp(self.ln(x + torch.relu(self.fc1(x))))

    path = tmp_path_factory.mktemp("dynamo") / "model.onnx"
    torch.onnx.export(Block().eval(), (torch.randn(2, 4, 16),), str(path), dynamo=True)
    return path


def test_dynamo_export_metadata_gives_aten_ops_scopes_and_lines(dynamo_export: Path) -> None:
    graph = read_graph(dynamo_export)
    by_op = {n.op_type: n for n in graph.nodes}
    linear = [n for n in graph.nodes if n.aten_op == "aten::linear"]
    assert {n.scope for n in linear} == {"fc1", "mlp.0"}  # each module's full path
    assert by_op["LayerNormalization"].aten_op == "aten::layer_norm"
    assert all(n.aten_op.startswith("aten::") for n in graph.nodes)
    assert all(n.source.startswith(__file__) for n in graph.nodes)


def test_dynamo_export_fused_nodes_carry_the_aten_ops_they_replaced(
    dynamo_export: Path, tmp_path: Path
) -> None:
    fx.optimize(dynamo_export, "all", tmp_path / "all.onnx")
    exported, optimized = read_graph(dynamo_export), read_graph(tmp_path / "all.onnx")
    mapping = map_graph(exported, optimized, level="all")
    assert_partition(exported, mapping)
    assert len(mapping.fused)
    claimed_aten = {n.aten_op for n in exported.nodes if n.name in set(_claimed(mapping))}
    for row in mapping.fused.to_dict("records"):
        names = set(str(row[Mapped.exported_nodes]).split(", "))
        want = list(dict.fromkeys(n.aten_op for n in exported.nodes if n.name in names))
        assert str(row[Mapped.aten_ops]).split(", ") == want
        assert set(want) <= claimed_aten
