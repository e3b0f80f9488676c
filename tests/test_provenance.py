"""Compiled kernels ↔ Inductor's provenance, eager kernels ↔ user source lines.

GIVEN tiny hand-made CPU traces and compile logs, the sample runs, and a model defined in this
file WHEN ``compiled_kernel_provenance`` / ``eager_kernel_lines`` read them THEN each kernel row
gets the compiler's entry (generated kernels by name in their region, library calls by order in
their graph call) or its exact source line, never two entries, and no kernel row is credited
twice. On every real trace, each eager line is a raw ``python_function`` frame (or line mark)
around the op; source text this machine lacks is left missing. The op context (per op its
innermost graph call, compiled region and backward marker, by parent rows) on compiled and
eager traces.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, load_trace, op, write_trace
from tests.real_data import every_trace_file, raw_events
from tests.test_compile_log import records, write_jsonl
from traceviz.analysis import provenance
from traceviz.analysis.provenance import (
    compiled_kernel_provenance,
    eager_kernel_lines,
    extern_op_name,
)
from traceviz.analysis.traffic.memory import Basis, KernelTraffic, memory_traffic
from traceviz.parse.compile_log import COMPILE_LOG, LINE_MARK_PREFIX, read_compile_log
from traceviz.schema import KERNEL_LINES_DTYPES, KERNEL_PROVENANCE_DTYPES, Ops, RegionKind
from traceviz.schema import KernelLines as KL
from traceviz.schema import KernelProvenance as KP
from traceviz.schema import Kernels as K
from traceviz.schema import Regions as R


def compiled_call(t: float, *, region: str = "0/0", prefix: str = "graph_3_") -> list[dict]:
    """One compiled step on CPU: region → graph call → cos_relu, addmm (+ copy_), add_mean."""
    return [
        op(f"Torch-Compiled Region: {region}", t, 100),
        op("## Call CompiledFxGraph abc ##", t + 1, 98, cat="user_annotation"),
        op(f"{prefix}cpp_fused_cos_relu_0", t + 2, 10),
        op("aten::addmm", t + 20, 30),
        op("aten::copy_", t + 21, 5),
        op(f"{prefix}cpp_fused_add_mean_1", t + 60, 10),
    ]


@pytest.fixture
def log(tmp_path: Path) -> Any:
    return read_compile_log(write_jsonl(tmp_path / COMPILE_LOG, records()))


def test_generated_and_library_kernels_map_to_their_entries(tmp_path: Path, log: Any) -> None:
    trace = traceviz.load(write_trace(tmp_path / "c.json", compiled_call(0) + compiled_call(200)))
    prov = compiled_kernel_provenance(trace, log)
    assert dict(prov.dtypes.astype(str)) == KERNEL_PROVENANCE_DTYPES
    names = trace.kernels[K.name].astype(str)
    got = dict(zip(names.iloc[prov[KP.kernel_row]] + "@" + prov[KP.kernel_row].astype(str),
                   prov[KP.prov_kernel], strict=True))  # fmt: skip
    assert len(prov) == len(trace.kernels) == 8  # every kernel row, once
    assert prov[KP.kernel_row].is_unique
    by_name = {k.split("@")[0]: v for k, v in got.items()}
    assert by_name == {
        "graph_3_cpp_fused_cos_relu_0": "0/0:cpp_fused_cos_relu_0:1",
        "aten::addmm": "0/0:extern_kernels.addmm:2",
        "aten::copy_": "0/0:extern_kernels.addmm:2",  # the bias copy inside the addmm
        "graph_3_cpp_fused_add_mean_1": "0/0:cpp_fused_add_mean_1:3",
    }
    primary = prov.set_index(KP.kernel_row)[KP.primary]
    copies = trace.kernels.index[names == "aten::copy_"]
    assert not primary[copies].any() and primary.sum() == 6  # 3 calls per graph call
    assert set(prov[KP.pre_grad_nodes]) == {"y_1,y", "linear", "mean,z"}
    assert list(prov[KP.est_bytes].iloc[:4]) == [1024, 2112, 2112, 1056]


def test_kernels_the_log_does_not_know_are_left_out(tmp_path: Path, log: Any) -> None:
    events = compiled_call(0)
    events[2]["name"] = "graph_3_cpp_fused_sin_7"  # not in the log
    events.append(op("aten::mul", 150, 5))  # outside any graph call
    trace = traceviz.load(write_trace(tmp_path / "c.json", events))
    prov = compiled_kernel_provenance(trace, log)
    names = set(trace.kernels[K.name].astype(str).iloc[prov[KP.kernel_row]])
    assert names == {"aten::addmm", "aten::copy_", "graph_3_cpp_fused_add_mean_1"}


def test_the_kth_library_call_is_the_kth_entry(tmp_path: Path) -> None:
    two = records()
    mappings = json.loads(two[2]["payload"])
    mappings["cppCodeToPost"]["extern_kernels.addmm:4"] = ["addmm_1"]
    two[2]["payload"] = json.dumps(mappings)
    log = read_compile_log(write_jsonl(tmp_path / "l.jsonl.gz", two))
    events = [*compiled_call(0), op("aten::addmm", 80, 10)]
    events[1]["dur"] = 95
    trace = traceviz.load(write_trace(tmp_path / "c.json", events))
    prov = compiled_kernel_provenance(trace, log).set_index(KP.kernel_row)[KP.prov_kernel]
    addmm = trace.kernels.index[trace.kernels[K.name].astype(str) == "aten::addmm"]
    assert list(prov[addmm]) == ["0/0:extern_kernels.addmm:2", "0/0:extern_kernels.addmm:4"]


def test_the_compiled_region_picks_the_compile_id(tmp_path: Path) -> None:
    other = {"frame_id": 1, "frame_compile_id": 0, "attempt": 0}
    log = read_compile_log(write_jsonl(tmp_path / "l.jsonl.gz", records() + records(**other)))
    events = compiled_call(0, region="1/0", prefix="") + compiled_call(200, prefix="")
    trace = traceviz.load(write_trace(tmp_path / "c.json", events))
    prov = compiled_kernel_provenance(trace, log)
    ts = trace.kernels[K.ts_us].iloc[prov[KP.kernel_row]].to_numpy()
    ids = prov[KP.compile_id].astype(str).to_numpy()
    assert set(ids[ts < 150]) == {"1/0"} and set(ids[ts > 150]) == {"0/0"}


def test_empty_and_bad_inputs_and_extern_op_names(tmp_path: Path, log: Any) -> None:
    trace = traceviz.load(write_trace(tmp_path / "c.json", [op("aten::mul", 0, 5)]))
    assert compiled_kernel_provenance(trace, log).empty
    assert eager_kernel_lines(trace).empty
    assert dict(eager_kernel_lines(trace).dtypes.astype(str)) == KERNEL_LINES_DTYPES
    # wrong arguments raise type errors
    trace = traceviz.load(write_trace(tmp_path / "c.json", compiled_call(0)))
    with pytest.raises(TypeError, match="log must be a CompileLog"):
        compiled_kernel_provenance(trace, "compile_log.jsonl.gz")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="trace must be a Trace"):
        eager_kernel_lines(str(tmp_path / "c.json"))  # type: ignore[arg-type]
    # extern kernel names read as aten op names
    assert extern_op_name("extern_kernels.addmm") == "aten::addmm"
    assert extern_op_name("torch.ops.aten._scaled_mm.default") == "aten::_scaled_mm"


def py(name: str, ts: float, dur: float) -> dict[str, Any]:
    return op(name, ts, dur, cat="python_function")


def test_eager_lines_prefer_the_marked_call_site(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text("class M:\n    def forward(self, x):\n        return x.relu() + 1\n")
    events = [
        py(f"{model}(2): forward", 0, 100),
        py("torch/nn/modules/module.py(1782): _call_impl", 1, 2),
        op(f"{LINE_MARK_PREFIX}{model}(3): forward", 3, 20, cat="user_annotation"),
        op("aten::relu", 4, 10),
        op("aten::add", 30, 10),  # no mark: only the Python frame (the function's first line)
        py("/venv/lib/python3.11/site-packages/torch/functional.py(9): f", 50, 20),
        op("aten::mul", 51, 10),  # inside library code inside forward
    ]
    trace = traceviz.load(write_trace(tmp_path / "e.json", events))
    lines = eager_kernel_lines(trace).set_index(KL.kernel_row)
    names = trace.kernels[K.name].astype(str)
    got = {names[r]: (row[KL.line], row[KL.exact], row[KL.code]) for r, row in lines.iterrows()}
    assert got == {
        "aten::relu": (3, True, "return x.relu() + 1"),
        "aten::add": (2, False, "def forward(self, x):"),
        "aten::mul": (2, False, "def forward(self, x):"),
    }
    assert set(lines[KL.file]) == {str(model)}


# ------------------------------------------------------------ sample runs (real traces)

SAMPLE_RUNS = sorted(p.parent for p in SAMPLES.glob(f"*/{COMPILE_LOG}"))
INDUCTOR_KERNEL = re.compile(r"^(graph_\d+_)?(cpp_|triton_)")


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=[p.name for p in SAMPLE_RUNS])
def test_every_inductor_kernel_of_a_sample_run_is_explained(run: Path) -> None:
    trace = traceviz.load(run / "compiled.pt.trace.json.gz")
    log = read_compile_log(run)
    prov = compiled_kernel_provenance(trace, log)
    assert prov[KP.kernel_row].is_unique  # no kernel row credited twice
    names = trace.kernels[K.name].astype(str)
    inductor = set(trace.kernels.index[names.str.match(INDUCTOR_KERNEL)])
    assert inductor <= set(prov[KP.kernel_row])  # linear-add has none: one addmm
    # library calls made by the compiled graphs are explained too: every kernel inside a call
    calls = trace.regions[trace.regions[R.kind] == RegionKind.FX_GRAPH_CALL.value]
    inside = _kernels_inside(trace, calls)
    assert inside <= set(prov[KP.kernel_row]) | _bare_copies(trace, inside)
    # one primary row per kernel call: per entry, at most one per graph call
    per_entry = prov[prov[KP.primary]].groupby(KP.prov_kernel, observed=True).size()
    assert (per_entry <= len(calls)).all()
    assert prov[KP.est_bytes].notna().all()  # the runner compiles cold: estimates exist
    # memory traffic: every fused kernel on the compiler's basis, credited once per call (the
    # compiler's bytes are the calls' logged estimates, no more)
    traffic = memory_traffic(trace, compile_log=log)
    fused = names.str.match(INDUCTOR_KERNEL).to_numpy()
    assert (traffic.per_kernel[KernelTraffic.basis][fused] == Basis.COMPILER.value).all()
    assert (traffic.compiler_bytes or 0) <= int(prov[prov[KP.primary]][KP.est_bytes].sum())
    assert (traffic.compiler_bytes is not None) == bool(fused.any())


def _kernels_inside(trace: Any, calls: pd.DataFrame) -> set[int]:
    k = trace.kernels
    out = set()
    for _, call in calls.iterrows():
        inside = (k[K.ts_us] >= call[R.ts_us]) & (k[K.ts_us] < call[R.ts_us] + call[R.dur_us])
        out |= set(k.index[inside])
    return out


def _bare_copies(trace: Any, rows: set[int]) -> set[int]:
    """Copies the wrapper code makes itself (input mutation), not a kernel Inductor logged."""
    names = trace.kernels[K.name].astype(str)
    return {r for r in rows if names[r] in {"aten::copy_", "aten::fill_", "aten::zero_"}}


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=[p.name for p in SAMPLE_RUNS])
def test_every_eager_kernel_of_a_sample_run_has_its_exact_line(run: Path) -> None:
    from traceviz.analysis.fusion.line_transfer import transfer_lines

    marked = traceviz.load(run / "eager_lines.pt.trace.json.gz")  # the run's lines trace
    lines = eager_kernel_lines(marked)
    assert lines[KL.kernel_row].is_unique
    assert len(lines) == len(marked.kernels) and lines[KL.exact].all()
    files = set(lines[KL.file])
    if run.name.startswith("gpt2"):  # Hugging Face code is model code: its own lines
        assert all("/transformers/" in f for f in files)
    else:
        assert {Path(f).name for f in files} == {"zoo.py"}
    # the measured eager trace (no marks) gets every line from its twin
    measured = traceviz.load(run / "eager.pt.trace.json.gz")
    assert not measured.ops["name"].astype(str).str.startswith("traceviz line").any()
    transfer = transfer_lines(measured, marked)
    assert transfer.coverage == 1.0 and transfer.located == transfer.kernels == len(
        measured.kernels
    )


# ------------------------------------------------------------ memory traffic, compiler basis


def test_compiler_estimates_fill_unestimated_kernel_calls_once(tmp_path: Path, log: Any) -> None:
    trace = traceviz.load(write_trace(tmp_path / "c.json", compiled_call(0) + compiled_call(200)))
    plain = memory_traffic(trace)
    fused = trace.kernels[K.name].astype(str).str.contains("cpp_fused").to_numpy()
    assert (plain.per_kernel[KernelTraffic.basis][fused] == Basis.NONE.value).all()
    assert plain.compiler_bytes is None

    with_log = memory_traffic(trace, compile_log=log)
    per = with_log.per_kernel
    names = trace.kernels[K.name].astype(str)
    by_name = {n: (b, e) for n, b, e in zip(names, per[KernelTraffic.basis],
                                            per[KernelTraffic.est_bytes], strict=True)}  # fmt: skip
    assert by_name["graph_3_cpp_fused_cos_relu_0"] == (Basis.COMPILER.value, 1024)
    assert by_name["graph_3_cpp_fused_add_mean_1"] == (Basis.COMPILER.value, 1056)
    assert by_name["aten::addmm"] == (Basis.COMPILER.value, 2112)  # no shapes in this trace
    assert by_name["aten::copy_"][0] == Basis.NONE.value  # inside the addmm call: not twice
    assert with_log.compiler_bytes == 2 * (1024 + 2112 + 1056)  # two graph calls
    assert with_log.estimated_bytes == with_log.compiler_bytes
    assert with_log.by_kind["compiler_bytes"].sum() == with_log.compiler_bytes
    prov = compiled_kernel_provenance(trace, log)
    same = memory_traffic(trace, provenance=prov).per_kernel
    pd.testing.assert_frame_equal(same, per)


def test_shape_estimates_are_kept_where_the_trace_has_shapes(tmp_path: Path, log: Any) -> None:
    events = compiled_call(0)
    events[3]["args"] = {"Input Dims": [[16], [8, 16], [16, 16], [], []],
                         "Input type": ["float", "float", "float", "Scalar", "Scalar"]}  # fmt: skip
    trace = traceviz.load(write_trace(tmp_path / "c.json", events))
    per = memory_traffic(trace, compile_log=log).per_kernel
    addmm = trace.kernels.index[trace.kernels[K.name].astype(str) == "aten::addmm"][0]
    assert per[KernelTraffic.basis][addmm] == Basis.ESTIMATED.value


# ------------------------------------------------------------ a real GPU trace (ROCm, Triton)

LLAMA = CORPUS / "amd" / "mi300x_compiled_llama_block_tiny.json.gz"
LLAMA_KERNELS = [  # what Inductor would log for that graph, in call order
    "triton_red_fused_add_mean_mul_pow_rsqrt_0", "extern_kernels.mm", "extern_kernels.mm",
    "extern_kernels.mm", "torch.ops.aten._scaled_dot_product_flash_attention.default",
    "extern_kernels.mm", "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1",
    "extern_kernels.mm", "extern_kernels.mm", "triton_poi_fused__unsafe_view_mul_silu_2",
    "extern_kernels.mm", "triton_poi_fused__unsafe_view_add_3",
]  # fmt: skip


@pytest.mark.skipif(not LLAMA.is_file(), reason=f"corpus trace {LLAMA} not found")
def test_gpu_triton_and_library_kernels_map_in_call_order(tmp_path: Path) -> None:
    mapping = {"cppCodeToPost": {f"{k}:{i}": [f"n{i}"] for i, k in enumerate(LLAMA_KERNELS, 1)},
               "postToPre": {}}  # fmt: skip
    items = [
        {"metadata": {"artifact": {"name": "inductor_provenance_tracking_node_mappings"},
                      "frame_id": 0, "frame_compile_id": 0}, "payload": json.dumps(mapping)}
    ]  # fmt: skip
    log = read_compile_log(write_jsonl(tmp_path / "l.jsonl.gz", items))
    trace = traceviz.load(LLAMA)
    prov = compiled_kernel_provenance(trace, log).set_index(KP.kernel_row)
    assert list(prov.index) == list(trace.kernels.index)  # all 12 device kernels
    handles = [int(p.rsplit(":", 1)[1]) for p in prov[KP.prov_kernel]]
    assert handles == list(range(1, 13))  # the k-th GEMM is the k-th extern_kernels.mm
    assert prov[KP.primary].all()


REGION = "Torch-Compiled Region: "
TRACES = [
    SAMPLES / "h200" / "graph-break" / "compiled.pt.trace.json.gz",
    SAMPLES / "h200" / "gpt2-reduce-overhead" / "compiled.pt.trace.json.gz",
    SAMPLES / "graph-break" / "compiled.pt.trace.json.gz",
    SAMPLES / "h200" / "gpt2" / "eager.pt.trace.json.gz",
    CORPUS / "nvidia" / "v100_train_compiledfunction_cudagraph.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
    CORPUS / "amd" / "mi300x_compiled_flux_hipgraph.json.gz",
]


def _nearest(parents: list[int], names: list[str], named: Callable[[str], bool]) -> list[int]:
    """Per op, the first op named so on its way up the parent rows (itself first), else -1."""
    out = []
    for row in range(len(names)):
        at = row
        while at >= 0 and not named(names[at]):
            at = parents[at]
        out.append(at)
    return out


def _is_call(name: str) -> bool:
    return name.startswith("## Call CompiledFxGraph") or name.startswith("CompiledFunction")


@pytest.mark.parametrize("path", TRACES, ids=lambda p: "/".join(p.parts[-2:]))
def test_op_context_is_the_nearest_named_op(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path} not found")
    trace = load_trace(path)
    context = provenance._OpContext(trace)
    names = trace.ops[Ops.name].astype(str).tolist()
    parents = trace.ops[Ops.parent_row].astype("Int64").fillna(-1).astype(int).tolist()
    assert context.region.tolist() == _nearest(parents, names, lambda n: n.startswith(REGION))
    backward = _nearest(parents, names, lambda n: n == "CompiledFunctionBackward")
    assert context.backward.tolist() == backward
    assert context.call.tolist() == _nearest(parents, names, _is_call)
    regions = {row: name.removeprefix(REGION) for row, name in enumerate(names)
               if name.startswith(REGION)}  # fmt: skip
    assert context.compile_id == regions


def test_a_compiled_sample_has_compile_ids() -> None:
    context = provenance._OpContext(
        load_trace(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")
    )
    assert context.compile_id and all("/" in v for v in context.compile_id.values())
    assert (context.region >= 0).any()
    assert isinstance(context.region, np.ndarray)


FRAME_CATS = {"python_function", "user_annotation", "cpu_op"}


def _frames(path: Path) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(thread "pid/tid", event name) → the (start, end) µs of each raw span of that name."""
    events = raw_events(path)
    spans: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in FRAME_CATS:
            start = float(e["ts"])
            thread = f"{e.get('pid')}/{e.get('tid')}"
            spans[(thread, str(e.get("name")))].append((start, start + float(e.get("dur", 0))))
    return spans


@pytest.mark.parametrize("path", every_trace_file())
def test_each_line_is_a_raw_frame_around_the_op(path: Path) -> None:
    trace = load_trace(path)
    lines = eager_kernel_lines(trace)
    if lines.empty:
        return
    spans = _frames(path)
    kernels, ops = trace.kernels, trace.ops
    for row in lines.to_dict("records"):
        op: Any = ops.iloc[int(kernels[K.op_row].iloc[int(row[KL.kernel_row])])]
        name = f"{row[KL.file]}({row[KL.line]}): {row[KL.function]}"
        name = LINE_MARK_PREFIX + name if row[KL.exact] else name
        start = float(op[Ops.ts_us])
        around = spans[(str(op[Ops.thread]), name)]
        assert any(s - 1e-3 <= start <= e + 1e-3 for s, e in around), (name, start)
    assert lines[KL.kernel_row].is_unique  # one line per kernel at most


def test_lines_of_files_not_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every code missing (None), and some missing: the rest of each row stays."""
    trace = load_trace(SAMPLES / "pointwise" / "eager_lines.pt.trace.json.gz")
    full = eager_kernel_lines(trace)
    monkeypatch.setattr(provenance, "source_line", lambda file, line: None)
    got = eager_kernel_lines(trace)
    assert len(got) == len(full) > 0 and got[KL.code].isna().all()
    assert got.drop(columns=KL.code).equals(full.drop(columns=KL.code))
    monkeypatch.setattr(provenance, "source_line", lambda f, n: None if n % 2 else f"line {n}")
    half = eager_kernel_lines(trace)
    assert (half[KL.code].isna() == (half[KL.line] % 2 == 1)).all()
