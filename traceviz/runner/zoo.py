"""The built-in models: small, seeded, and each telling one fusion story.

Every factory takes ``batch_size`` and returns ``(model, example_inputs)`` with seeded weights
and inputs (the global RNG is left as it was). Shapes are small enough to compile in seconds
on two CPU cores and to keep traces small.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn

from traceviz.errors import UsageError

SEED = 0
Factory = Callable[..., tuple[nn.Module, tuple[Any, ...]]]


@contextmanager
def seeded(seed: int = SEED) -> Iterator[torch.Generator]:
    """Seed weight init inside, leave the global RNG untouched outside; yields an input RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield torch.Generator().manual_seed(seed + 1)


class PointwiseChain(nn.Module):
    """cos → relu → mul → add → sin → sigmoid: six eager kernels, one fused kernel."""

    def forward(self, x: Tensor) -> Tensor:
        return torch.sigmoid(torch.sin(torch.relu(torch.cos(x)) * 2.0 + 1.0))


class LinearAdd(nn.Module):
    """``x @ W`` then ``+ b`` written as two ops: the add can ride in the matmul's epilogue."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: Tensor) -> Tensor:
        return torch.matmul(x, self.weight) + self.bias


class Mlp(nn.Module):
    """Linear → GELU → Linear: the GELU is fused into the first GEMM's output pass."""

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, features)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class LayerNormGelu(nn.Module):
    """LayerNorm (a reduction) then GELU (pointwise): one fused reduction+pointwise kernel."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.act = nn.GELU()

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.norm(x))


class CausalSelfAttention(nn.Module):
    """Softmax attention written out (scale, causal mask, softmax), so fusion has work to do."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        mask = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(batch, seq, dim)
        return self.proj(out)


class TransformerBlock(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, dim: int = 128, heads: int = 4) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, 4 * dim)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ConvBnRelu(nn.Module):
    """Conv2d → BatchNorm2d (eval) → ReLU: the normalisation and ReLU fuse after the conv."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        with torch.no_grad():  # non-trivial running statistics, so eval BN does real work
            self.bn.running_mean.uniform_(-0.5, 0.5)  # type: ignore[union-attr]
            self.bn.running_var.uniform_(0.5, 1.5)  # type: ignore[union-attr]

    def forward(self, x: Tensor) -> Tensor:
        return self.relu(self.bn(self.conv(x)))


class GraphBreak(nn.Module):
    """A data-dependent ``if`` on a tensor value: Dynamo must split the model in two graphs."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, features)
        self.fc2 = nn.Linear(features, features)

    def forward(self, x: Tensor) -> Tensor:
        y = torch.nn.functional.gelu(self.fc1(x))
        if y.sum() > 0:  # noqa: SIM108 (deliberate graph break: the branch depends on data)
            y = y * 2.0
        else:
            y = y - 1.0
        return torch.sigmoid(self.fc2(y))


class LogitsOnly(nn.Module):
    """A Hugging Face causal LM that returns its logits tensor only."""

    def __init__(self, lm: nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.lm(input_ids=input_ids).logits


def pointwise(batch_size: int = 64) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return PointwiseChain(), (torch.randn(batch_size, 1024, generator=gen),)


def linear_add(batch_size: int = 64) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return LinearAdd(256), (torch.randn(batch_size, 256, generator=gen),)


def mlp(batch_size: int = 32) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return Mlp(256, 1024), (torch.randn(batch_size, 256, generator=gen),)


def layernorm_gelu(batch_size: int = 8) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return LayerNormGelu(256), (torch.randn(batch_size, 128, 256, generator=gen),)


def attention(batch_size: int = 4) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return TransformerBlock(128, 4), (torch.randn(batch_size, 64, 128, generator=gen),)


def conv_bn_relu(batch_size: int = 8) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return ConvBnRelu(16, 32), (torch.randn(batch_size, 16, 32, 32, generator=gen),)


def graph_break(batch_size: int = 32) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return GraphBreak(256), (torch.randn(batch_size, 256, generator=gen),)


def gpt2(batch_size: int = 2) -> tuple[nn.Module, tuple[Tensor]]:
    """A 2-layer GPT-2 from a small ``GPT2Config`` with random weights: nothing is downloaded."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as err:
        raise UsageError(
            f"model 'gpt2' needs transformers ({err}); pip install 'traceviz[gpt2]'"
        ) from err
    config = GPT2Config(
        vocab_size=1024, n_positions=128, n_embd=128, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
        bos_token_id=1023, eos_token_id=1023,
    )  # fmt: skip
    with seeded() as gen:
        model = LogitsOnly(GPT2LMHeadModel(config))
        ids = torch.randint(0, config.vocab_size, (batch_size, 64), generator=gen)
    return model, (ids,)


class FusionBlock(nn.Module):
    """What fusion does, in one residual block: LayerNorm (a reduction), ``h @ W`` then ``+ b``
    (a matmul followed by an add), ``relu(cos(h)) * gelu(h)`` (a pointwise chain), ``x + h``.
    Inductor keeps the matmul a library call and fuses the rest into two C++ kernels: the
    normalisation, and the bias add with the pointwise chain and the residual add."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.weight = nn.Parameter(torch.randn(features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(features) / 10)

    def forward(self, x: Tensor) -> Tensor:
        h = self.norm(x)
        h = torch.matmul(h, self.weight) + self.bias
        h = torch.relu(torch.cos(h)) * nn.functional.gelu(h)
        return x + h


def block(batch_size: int = 8) -> tuple[nn.Module, tuple[Tensor]]:
    with seeded() as gen:
        return FusionBlock(256), (torch.randn(batch_size, 128, 256, generator=gen),)
