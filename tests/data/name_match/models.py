"""Two models whose blocks repeat the same ops, for the name-match order tests
(tests/test_fusion_map.py): op names alone cannot tell block 1's kernel from block 2's.

The run directories beside this file were made with (one CPU thread, caches off)::

    OMP_NUM_THREADS=1 TORCH_COMPILE_FORCE_DISABLE_CACHES=1 traceviz run \
        tests/data/name_match/models.py:two_conv_bn_relu --device cpu --steps 2 \
        --warmup 2 --iters 5 --out tests/data/name_match/two-conv-bn-relu

and the same for ``two_rmsnorm_silu_mlp`` (``--out .../two-rmsnorm-silu-mlp``); each run keeps
Inductor's provenance (``compile_log.jsonl.gz``), the truth the name-match is checked against.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class ConvBnRelu(nn.Module):
    """Conv2d → BatchNorm2d (eval) → ReLU."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        with torch.no_grad():  # non-trivial running statistics, so eval BN does real work
            self.bn.running_mean.uniform_(-0.5, 0.5)  # type: ignore[union-attr]
            self.bn.running_var.uniform_(0.5, 1.5)  # type: ignore[union-attr]

    def forward(self, x: Tensor) -> Tensor:
        return torch.relu(self.bn(self.conv(x)))


class TwoConvBnRelu(nn.Module):
    """Two conv-bn-relu blocks of the same ops, one after the other."""

    def __init__(self) -> None:
        super().__init__()
        self.block1 = ConvBnRelu(8, 16)
        self.block2 = ConvBnRelu(16, 16)

    def forward(self, x: Tensor) -> Tensor:
        return self.block2(self.block1(x))


class RmsNormSiluMlp(nn.Module):
    """RMSNorm (pow, mean, add, rsqrt, mul, mul) then a SiLU-gated MLP and a residual add."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim) + torch.randn(dim) / 10)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        h = self.down(nn.functional.silu(self.gate(h)) * self.up(h))
        return x + h


class TwoRmsNormSiluMlp(nn.Module):
    """Two RMSNorm + SiLU MLP blocks of the same ops."""

    def __init__(self) -> None:
        super().__init__()
        self.block1 = RmsNormSiluMlp(64, 128)
        self.block2 = RmsNormSiluMlp(64, 128)

    def forward(self, x: Tensor) -> Tensor:
        return self.block2(self.block1(x))


def two_conv_bn_relu() -> tuple[nn.Module, tuple[Tensor]]:
    """The conv model and its input (seeded)."""
    torch.manual_seed(0)
    return TwoConvBnRelu(), (torch.randn(4, 8, 16, 16),)


def two_rmsnorm_silu_mlp() -> tuple[nn.Module, tuple[Tensor]]:
    """The RMSNorm model and its input (seeded)."""
    torch.manual_seed(0)
    return TwoRmsNormSiluMlp(), (torch.randn(4, 32, 64),)
