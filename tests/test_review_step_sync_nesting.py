"""The runner's ``traceviz step sync`` annotation hides only the call made directly inside it
(the runner's own ``torch.cuda.synchronize``): a model's sync issued by an op nested inside
the annotation, or on another thread while it is open, is still a blocking call."""

from __future__ import annotations

import pytest

import traceviz
from tests.conftest import kernel, launch, op
from traceviz.analysis.blocking import BlockingColumns as B
from traceviz.analysis.blocking import blocking_calls
from traceviz.parse.compile_log import STEP_SYNC_MARK


def _step(events: list[dict]) -> list[dict]:
    work = [launch("cudaLaunchKernel", 10, 5, 1), kernel("k0", 18, 5, 1)]
    return [op("ProfilerStep#1", 0, 10_000, cat="user_annotation"), *work, *events]


def test_a_sync_from_an_op_nested_in_the_mark_still_blocks(tmp_trace) -> None:
    events = [
        op(STEP_SYNC_MARK, 4990, 4020, cat="user_annotation"),
        op("aten::item", 5000, 310),
        launch("cudaStreamSynchronize", 5005, 300, 99),  # inside aten::item, inside the mark
        launch("cudaDeviceSynchronize", 5400, 3500, 98),  # the runner's own: directly inside
    ]
    blocking = blocking_calls(traceviz.load(tmp_trace(_step(events))))
    assert blocking.calls[B.name].tolist() == ["cudaStreamSynchronize"]
    assert blocking.calls[B.op].tolist() == ["aten::item"]
    assert blocking.blocked_us == pytest.approx(300)


def test_a_sync_on_another_thread_while_the_mark_is_open_still_blocks(tmp_trace) -> None:
    events = [
        op(STEP_SYNC_MARK, 4990, 4020, cat="user_annotation"),
        launch("cudaDeviceSynchronize", 5000, 4000, 98),
        op("aten::item", 6000, 310, tid=2),
        launch("cudaStreamSynchronize", 6005, 300, 99, tid=2),
    ]
    blocking = blocking_calls(traceviz.load(tmp_trace(_step(events))))
    assert blocking.calls[B.name].tolist() == ["cudaStreamSynchronize"]
    assert blocking.blocked_us == pytest.approx(300)
