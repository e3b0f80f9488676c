"""Reading the compiler's own record: ``traceviz.parse.compile_log``.

GIVEN structured compile logs (the runner's gzip JSON lines, a TORCH_TRACE folder, hand-made
records of both formats) WHEN ``read_compile_log`` reads them THEN the kernels, source lines
and frames tables hold what the records say; bad input raises one TraceFormatError naming the
file. No torch needed, except the one test that makes a real TORCH_TRACE log.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLES
from traceviz.errors import TraceFormatError
from traceviz.parse.compile_log import (
    COMPILE_LOG,
    is_library,
    parse_frames,
    read_compile_log,
    user_frame,
)
from traceviz.schema import (
    COMPILE_FRAMES_DTYPES,
    PROVENANCE_KERNELS_DTYPES,
    PROVENANCE_LINES_DTYPES,
)
from traceviz.schema import ProvenanceKernels as P
from traceviz.schema import ProvenanceLines as L

CTX = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
MAPPINGS = {
    "preToPost": {"y": ["cos"], "y_1": ["relu"], "linear": ["permute", "addmm"], "z": ["add"]},
    "postToPre": {"cos": ["y"], "relu": ["y_1"], "permute": ["linear"], "addmm": ["linear"],
                  "add": ["z"], "mean": ["mean"]},
    "cppCodeToPost": {"cpp_fused_cos_relu_0:1": ["relu", "cos"],
                      "extern_kernels.addmm:2": ["addmm"],
                      "cpp_fused_add_mean_1:3": ["mean", "add"]},
    "version": 2.0,
}  # fmt: skip
STACKS = {
    "cpp_fused_cos_relu_0:1": [
        '  File "/src/m.py", line 18, in forward\n    y = torch.relu(y)\n        ^^^^^\n',
        '  File "/src/m.py", line 17, in forward\n    y = torch.cos(x)\n',
    ],
    "extern_kernels.addmm:2": [
        '  File "/src/m.py", line 19, in forward\n    z = s.l(y) + x\n'
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 125, '
        "in forward\n    return F.linear(input, self.weight, self.bias)\n"
    ],
    "cpp_fused_add_mean_1:3": ['  File "/src/m.py", line 20, in forward\n    return z.mean(-1)\n'],
}
NODE_BYTES = [
    {"node": "op0", "bytes": 1024, "origins": ["cos", "relu"]},
    {
        "node": "op1",
        "bytes": 2112,
        "origins": ["addmm", "permute", "relu"],  # relu feeds it
        "extern": True,
        "kernel": "extern_kernels.addmm",
    },
    {"node": "op2_op3", "bytes": 1056, "origins": ["add", "mean"]},
]
METRICS = {"compile_id": "0/0", "co_name": "forward", "co_filename": "/src/m.py",
           "co_firstlineno": 15, "entire_frame_compile_time_s": 2.5,
           "inductor_compile_time_s": 1.5, "graph_op_count": 5, "num_graph_breaks": 0,
           "inductor_fx_local_cache_miss_count": 1}  # fmt: skip


def artifact(name: str, payload: Any, **ctx: Any) -> dict[str, Any]:
    text = payload if isinstance(payload, str) or payload is None else json.dumps(payload)
    return {"metadata": {"artifact": {"name": name, "encoding": "json"}, **(ctx or CTX)},
            "payload": text}  # fmt: skip


def records(**ctx: Any) -> list[dict[str, Any]]:
    """One compile's records, as the runner keeps them."""
    c = ctx or CTX
    return [
        {"metadata": {"dynamo_start": {"stack": []}, **c}, "payload": None},
        {"metadata": {"inductor_output_code": {"filename": "x.py"}, **c},
         "payload": "graph_3_cpp_fused_add_mean_1\ngraph_3_cpp_fused_cos_relu_0"},
        artifact("inductor_provenance_tracking_node_mappings", MAPPINGS, **c),
        artifact("inductor_provenance_tracking_kernel_stack_traces", STACKS, **c),
        artifact("traceviz_inductor_node_bytes", NODE_BYTES, **c),
        {"metadata": {"compilation_metrics": METRICS, **c}, "payload": None},
    ]  # fmt: skip


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in items).encode()))
    return path


def write_torch_trace(path: Path, items: list[dict[str, Any]]) -> Path:
    """The TORCH_TRACE format: glog prefix + metadata JSON, payload lines after a tab."""
    lines = []
    for i, r in enumerate(items):
        prefix = f"V1130 13:50:{i:02d}.123456 4242 torch/_dynamo/convert_frame.py:1234]"
        lines.append(f"{prefix} {json.dumps(r['metadata'])}")
        if r["payload"] is not None:
            lines.extend("\t" + line for line in r["payload"].split("\n"))
    path.write_text("\n".join(lines) + "\n")
    return path


def check_tables(log: Any) -> None:
    """What ``records()`` says, table by table."""
    k = log.kernels
    assert dict(k.dtypes.astype(str)) == PROVENANCE_KERNELS_DTYPES
    assert dict(log.lines.dtypes.astype(str)) == PROVENANCE_LINES_DTYPES
    assert dict(log.frames.dtypes.astype(str)) == COMPILE_FRAMES_DTYPES
    assert list(k[P.kernel]) == ["cpp_fused_cos_relu_0", "extern_kernels.addmm",
                                 "cpp_fused_add_mean_1"]  # fmt: skip
    assert list(k[P.handle]) == [1, 2, 3]
    assert list(k[P.extern]) == [False, True, False]
    assert list(k[P.graph]) == [3, 3, 3]
    assert k[P.prov_kernel].iloc[0] == "0/0:cpp_fused_cos_relu_0:1"
    assert list(k[P.pre_grad_nodes]) == ["y_1,y", "linear", "mean,z"]
    # op1 shares "relu" with kernel 1, but it is a library call: the addmm
    assert list(k[P.est_bytes]) == [1024, 2112, 1056]
    lines = log.lines
    assert list(zip(lines[L.kernel], lines[L.line], strict=True)) == [
        ("cpp_fused_cos_relu_0", 18), ("cpp_fused_cos_relu_0", 17),
        ("extern_kernels.addmm", 19), ("cpp_fused_add_mean_1", 20),
    ]  # fmt: skip
    assert lines[L.code].iloc[0] == "y = torch.relu(y)"
    assert set(lines[L.file]) == {"/src/m.py"}  # the torch frame is folded to its caller
    f = log.frames.iloc[0]
    assert (f["compile_id"], f["compile_time_s"], f["graph_ops"]) == ("0/0", 2.5, 5)
    assert not f["cache_hit"]


@pytest.mark.parametrize(
    ("write", "name"),
    [(write_jsonl, COMPILE_LOG), (write_torch_trace, "dedicated_log_torch_trace_abc.log")],
    ids=["runner-jsonl", "torch-trace"],
)
def test_a_log_file_and_its_directory(tmp_path: Path, write: Any, name: str) -> None:
    check_tables(read_compile_log(write(tmp_path / name, records())))
    check_tables(read_compile_log(tmp_path))  # the directory finds its file


def test_backward_graph_of_the_same_compile_gets_its_own_index(tmp_path: Path) -> None:
    both = records() + records()[1:5]  # a second Inductor graph for compile 0/0
    log = read_compile_log(write_jsonl(tmp_path / "log.jsonl.gz", both))
    assert list(log.kernels[P.graph_index]) == [0, 0, 0, 1, 1, 1]
    assert log.kernels[P.prov_kernel].is_unique
    assert log.kernels[P.prov_kernel].iloc[3] == "0/0[1]:cpp_fused_cos_relu_0:1"


def test_two_compile_ids_stay_apart(tmp_path: Path) -> None:
    other = {"frame_id": 1, "frame_compile_id": 0, "attempt": 0}
    log = read_compile_log(write_jsonl(tmp_path / "l.jsonl.gz", records() + records(**other)))
    assert list(log.kernels[P.compile_id].astype(str)) == ["0/0"] * 3 + ["1/0"] * 3
    assert list(log.kernels[P.graph_index]) == [0] * 6


def test_stack_frames_fold_library_code_to_the_caller() -> None:
    text = (
        '  File "/home/u/model.py", line 40, in forward\n    x = self.block(x)\n'
        '  File "/home/u/.venv/lib/python3.11/site-packages/transformers/x.py", line 9, in f\n'
        "    return g(x)\n"
    )
    assert [f[:2] for f in parse_frames(text)] == [("/home/u/model.py", 40), (
        "/home/u/.venv/lib/python3.11/site-packages/transformers/x.py", 9)]  # fmt: skip
    # a model library's frame is model code: its line is where the op is written
    hf = "/home/u/.venv/lib/python3.11/site-packages/transformers/x.py"
    assert user_frame(text) == (hf, 9, "f", "return g(x)")
    torch_inner = text + '  File "/v/site-packages/torch/nn/functional.py", line 3, in f\n'
    assert user_frame(torch_inner)[:2] == (hf, 9)
    assert user_frame('  File "torch/nn/functional.py", line 3, in f\n') is None
    assert is_library("torch/nn/modules/linear.py") and not is_library("/home/u/model.py")
    assert is_library("/usr/lib/python3.11/contextlib.py")
    assert is_library("/opt/py/lib/python3.11/functools.py") and is_library("<frozen runpy>")
    # a pip-installed traceviz keeps its built-in models' lines; its marking hook is not code
    site = "/v/lib/python3.11/site-packages/"
    assert not is_library(site + "traceviz/runner/zoo.py")
    assert is_library(site + "traceviz/runner/lines.py") and is_library(site + "triton/x.py")
    assert not is_library("/usr/lib/python3/dist-packages/timm/models/vit.py")
    # a venv that lives in a folder named torch (as on the H200 machine) is not torch itself
    assert not is_library("/opt/torch/.venv/lib/python3.12/site-packages/transformers/a.py")
    assert is_library("/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/functional.py")
    assert not is_library("/home/u/torch/my_model.py")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "no structured compile-log records"),
        (b"not a log line\n", "not a TORCH_TRACE record"),
        (b"\tpayload first\n", "payload line before any record"),
        (b"V1130 13:50:00.000001 1 a.py:1] {not json\n", "metadata is not JSON"),
        (b'{"metadata": 3}\n', "no metadata object"),
        (b'{"metadata": {}\n', "is not JSON"),
        (b"\x1f\x8b\x08garbage", "cannot read"),
    ],
)
def test_bad_input_names_the_file(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match=reason) as err:
        read_compile_log(path)
    assert str(path) in str(err.value)


def test_bad_payload_and_missing_paths(tmp_path: Path) -> None:
    bad = [artifact("inductor_provenance_tracking_node_mappings", "{oops")]
    with pytest.raises(TraceFormatError, match="payload is not JSON"):
        read_compile_log(write_jsonl(tmp_path / "x.jsonl.gz", bad))
    with pytest.raises(TraceFormatError, match="no such file"):
        read_compile_log(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TraceFormatError, match=r"no compile_log\.jsonl\.gz"):
        read_compile_log(empty)


def test_a_log_without_provenance_has_empty_tables(tmp_path: Path) -> None:
    only_metrics = [r for r in records() if "compilation_metrics" in r["metadata"]]
    log = read_compile_log(write_jsonl(tmp_path / "m.jsonl.gz", only_metrics))
    assert log.kernels.empty and log.lines.empty and not log.has_provenance
    assert len(log.frames) == 1


MODEL = textwrap.dedent(
    """
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(16, 16)

        def forward(self, x):
            y = torch.cos(x)
            y = torch.relu(y)
            z = self.l(y) + x
            return z.mean(-1)

    torch.compile(M())(torch.randn(8, 16))
    """
)  # cos: line 10, relu: 11, linear + add: 12, mean: 13


@pytest.mark.slow
def test_a_real_torch_trace_directory(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    env = {**os.environ, "TORCH_TRACE": str(tmp_path / "trace"), "INDUCTOR_PROVENANCE": "1",
           "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=600)
    log = read_compile_log(tmp_path / "trace")
    names = set(log.kernels[P.kernel])
    assert "extern_kernels.addmm" in names
    assert any(n.startswith("cpp_fused") and "cos" in n for n in names)
    lines = log.lines[log.lines[L.file] == str(script)]
    by_kernel = lines.groupby(L.kernel)[L.line].apply(set).to_dict()
    assert by_kernel["extern_kernels.addmm"] == {12}
    fused = [set(v) for k, v in by_kernel.items() if "cos" in k]
    assert fused == [{10, 11}]
    assert {13} <= set().union(*by_kernel.values())
    assert log.frames["compile_time_s"].iloc[0] > 0


SAMPLE_RUNS = sorted(p.parent for p in SAMPLES.glob(f"*/{COMPILE_LOG}"))


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=[p.name for p in SAMPLE_RUNS])
def test_sample_runs_have_provenance_and_frames(run: Path) -> None:
    log = read_compile_log(run)
    assert log.has_provenance and not log.frames.empty
    assert log.kernels[P.prov_kernel].is_unique
    assert set(log.lines[L.prov_kernel]) <= set(log.kernels[P.prov_kernel])
    assert (log.frames["compile_time_s"] > 0).all()


def test_a_backward_graph_with_an_empty_mapping_takes_its_kernels_from_the_stacks(
    tmp_path: Path,
) -> None:
    backward_stacks = {
        "cpp_fused_div_0:1": ['  File "/src/m.py", line 20, in forward\n    return z.mean(-1)\n'],
        "extern_kernels.mm:2": ['  File "/src/m.py", line 19, in forward\n    z = s.l(y) + x\n'],
        "cpp_fused_sum_1:3": ['  File "/src/m.py", line 19, in forward\n    z = s.l(y) + x\n'],
    }
    backward_bytes = [
        {"node": "op0", "bytes": 100, "origins": ["div"], "extern": False},
        {"node": "op1", "bytes": 200, "origins": ["mm"], "extern": True,
         "kernel": "extern_kernels.mm"},
        {"node": "op2", "bytes": 300, "origins": ["sum_1"], "extern": False},
    ]  # fmt: skip
    items = [
        *records(),
        artifact("inductor_provenance_tracking_node_mappings", {"version": 2.0}),
        artifact("inductor_provenance_tracking_kernel_stack_traces", backward_stacks),
        artifact("traceviz_inductor_node_bytes", backward_bytes),
    ]
    log = read_compile_log(write_jsonl(tmp_path / "t.jsonl.gz", items))
    back = log.kernels[log.kernels[P.graph_index] == 1]
    assert list(back[P.kernel]) == ["cpp_fused_div_0", "extern_kernels.mm", "cpp_fused_sum_1"]
    assert list(back[P.est_bytes]) == [100, 200, 300]  # in code-generation order
    assert set(back[P.post_grad_nodes]) == {""}
    lines = log.lines[log.lines[L.prov_kernel].str.startswith("0/0[1]:")]
    assert list(lines[L.line]) == [20, 19, 19]


@pytest.mark.skipif(not (SAMPLES / "graph-break" / COMPILE_LOG).is_file(), reason="no sample")
def test_graph_break_sample_frames_say_where_and_why() -> None:
    run = SAMPLES / "graph-break"
    frames = read_compile_log(run).frames
    info = json.loads((run / "run.json").read_text())
    assert list(frames["compile_id"].astype(str)) == [c["compile_id"] for c in
                                                      info["dynamo"]["compiles"]]  # fmt: skip
    assert int(frames["graph_breaks"].sum()) == info["dynamo"]["graph_break_count"]
    brk = info["dynamo"]["graph_breaks"][0]
    reason = frames["break_reason"].dropna().iloc[0]
    assert reason.endswith(f"{brk['file']}:{brk['line']}") and "Data-dependent" in reason


def test_an_older_run_json_without_the_compile_log_still_reads(tmp_path: Path) -> None:
    from traceviz.runs.run import load_run

    info = json.loads((SAMPLES / "mlp" / "run.json").read_text())
    assert info["traces"]["compile_log"] == COMPILE_LOG
    del info["traces"]["compile_log"], info["profiler"]["eager_with_stack"]
    (tmp_path / "run.json").write_text(json.dumps(info))
    run = load_run(tmp_path)
    assert run.compile_log is None and run.info.traces.compile_log is None
    assert not run.info.profiler.eager_with_stack
