"""TF32-aware correctness: on CUDA, cuDNN convolutions run float32 in TF32 by default, and a
compiled conv differs from eager by TF32 rounding (1e-3 on an H200 conv-bn-relu run), which
float32's tolerances wrongly call a mismatch."""

from __future__ import annotations

from unittest import mock

import pytest

torch = pytest.importorskip("torch")

from traceviz.runner.compare import compare_outputs, tf32_in_effect  # noqa: E402


def test_tf32_tolerance_passes_tf32_rounding_and_still_fails_real_errors() -> None:
    x = torch.linspace(-2, 2, 64)
    tf32_rounding = x + 1e-3  # the error seen on an H200 conv-bn-relu run
    assert compare_outputs(x, tf32_rounding).passed is False  # float32 bounds
    relaxed = compare_outputs(x, tf32_rounding, tf32=True)
    assert relaxed.passed and relaxed.tf32 and (relaxed.rtol, relaxed.atol) == (5e-3, 5e-3)
    assert compare_outputs(x, x + 0.05, tf32=True).passed is False


def test_tf32_does_not_loosen_lower_precision_or_integer_outputs() -> None:
    half = torch.ones(8, dtype=torch.bfloat16)
    result = compare_outputs(half, half.clone(), tf32=True)
    assert result.rtol == 5e-2 and result.tf32 is False  # bf16's own, looser bounds
    ids = torch.arange(4)
    assert compare_outputs(ids, ids.clone(), tf32=True).tf32 is False


def test_tf32_in_effect_only_on_cuda_with_convolutions_or_tf32_matmuls() -> None:
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 4))
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert tf32_in_effect(conv, cpu) is False
    with torch.backends.cudnn.flags(allow_tf32=True):
        assert tf32_in_effect(conv, cuda) is True
        with mock.patch.object(torch, "get_float32_matmul_precision", return_value="highest"):
            assert tf32_in_effect(mlp, cuda) is False
        with mock.patch.object(torch, "get_float32_matmul_precision", return_value="high"):
            assert tf32_in_effect(mlp, cuda) is True
    with torch.backends.cudnn.flags(allow_tf32=False):
        assert tf32_in_effect(conv, cuda) is False
