"""Decode Inductor's kernel names into the aten ops each kernel fused.

Inductor names a generated kernel after the aten ops it came from (``descriptive_names =
"original_aten"``, the default)::

    [graph_<G>_]<backend>_[<subkind>_]fused_<op>_<op>_..._<index>

``backend`` is ``triton`` or ``cpp``; ``subkind`` (Triton only) is the first three letters of
the kernel's category (:class:`TritonSubkind`); the ops are the *sorted, de-duplicated* base
names of the aten ops, joined by ``_``; ``index`` numbers the kernels of one graph. Examples::

    triton_poi_fused_add_cos_relu_0                 -> ("add", "cos", "relu")
    triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1
                                                    -> ("_unsafe_view", "add", "mean", ...)
    graph_0_cpp_fused_native_layer_norm_0           -> ("native_layer_norm",)
    triton_poi_fused_0                              -> ()   (no op names recorded)
    triton__0d1d2d3d                                -> Triton, ops unknown (older Inductor)

Op names contain underscores (``native_layer_norm``, ``_to_copy``), so the op list is not split
on ``_``: it is segmented against the known aten op names (``traceviz/data/aten_ops.txt``,
written by ``scripts/gen_aten_ops.py``) by dynamic programming, preferring, in order:

1. the fewest words left outside a known op name;
2. ops in sorted order (Inductor sorts them, so an unsorted reading is a wrong reading);
3. the fewest ops.

Words that match no known op (custom ops such as ``moe_forward``) are kept: a run of adjacent
unknown words becomes one op. Words made only of digits (node-name suffixes such as ``add_1``
under ``descriptive_names="inductor_node"``) are dropped. Nothing here imports torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import cache, lru_cache
from importlib import resources

__all__ = [
    "FusedName",
    "TritonSubkind",
    "eager_op_base",
    "fused_kernel_ops",
    "known_aten_ops",
    "segment_ops",
]


class TritonSubkind(str, Enum):
    """The kernel category Inductor writes into a Triton kernel's name."""

    POINTWISE = "poi"
    REDUCTION = "red"
    PERSISTENT_REDUCTION = "per"  # the whole reduction fits in one block
    TEMPLATE = "tem"  # a template kernel: mm/addmm/bmm/conv, flex attention
    FOREACH = "for"  # a combo kernel over many tensors (foreach ops)
    UNKNOWN = "unk"


@dataclass(frozen=True, slots=True)
class FusedName:
    """One decoded Inductor kernel name.

    ``prefix`` is the backend, ``"triton"`` or ``"cpp"``; ``subkind`` is set for descriptive
    Triton names only; ``ops`` are the aten op base names in name order (sorted); ``index`` is
    the kernel's number in its graph; ``graph`` is ``G`` of a ``graph_G_`` prefix; ``descriptive``
    is False for old mangled Triton names (``triton__0d1d2d``), whose ops are unknown.
    """

    prefix: str
    subkind: TritonSubkind | None
    ops: tuple[str, ...]
    index: int | None
    graph: int | None = None
    descriptive: bool = True


_INDUCTOR_NAME = re.compile(
    r"(?:graph_(?P<graph>\d+)_)?(?P<prefix>triton|cpp)_"
    r"(?:(?P<sub>poi|red|per|tem|for|unk)_)?fused(?:_(?P<rest>\w*))?",
    re.ASCII,
)
_MANGLED_TRITON = re.compile(r"triton_+\d+[0-9a-z]*", re.ASCII)
_SUBKINDS = {s.value: s for s in TritonSubkind}
_INPLACE = re.compile(r"[A-Za-z0-9]_$")  # "add_" but not "__and__"


@cache
def known_aten_ops() -> frozenset[str]:
    """The functional aten op base names shipped in ``traceviz/data/aten_ops.txt``."""
    text = resources.files("traceviz").joinpath("data/aten_ops.txt").read_text(encoding="utf-8")
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


def _max_words(known: frozenset[str]) -> int:
    """Most words in one op name of ``known`` (bounds the segmentation search)."""
    return max((len(_boundaries(op)) for op in known), default=1)


@cache
def _max_aten_words() -> int:
    return _max_words(known_aten_ops())


def _boundaries(body: str) -> list[tuple[int, int]]:
    """Candidate words of ``body`` as (start, end) slices.

    A word ends at a ``_`` separator or at the end; the next word starts after that separator
    and may itself begin with ``_`` (``add__softmax`` → ``add``, ``_softmax``).
    """
    words: list[tuple[int, int]] = []
    start = 0
    while start < len(body):
        end = body.find("_", start + 1)
        if end < 0:
            end = len(body)
        words.append((start, end))
        start = end + 1
    return words


def segment_ops(body: str, known: frozenset[str] | None = None) -> tuple[str, ...]:
    """Split the op part of an Inductor name into op names (see the module docstring).

    ``known`` defaults to :func:`known_aten_ops`. Never raises; an empty body gives ``()``.
    """
    if known is None:
        known, max_words = known_aten_ops(), _max_aten_words()
    else:
        max_words = _max_words(known)
    words = _boundaries(body)
    n = len(words)
    if n == 0:
        return ()
    # best[i][last op]: (cost, (previous position, previous last op), last op is known)
    Cost = tuple[int, int, int]
    State = tuple[Cost, tuple[int, str | None], bool]
    best: list[dict[str | None, State]] = [{} for _ in range(n + 1)]
    best[0][None] = ((0, 0, 0), (-1, None), True)
    for i in range(n):
        for last, (cost, _, _) in best[i].items():
            for j in range(i + 1, min(n, i + max_words) + 1):
                text = body[words[i][0] : words[j - 1][1]]
                is_known = text in known
                if not is_known and j > i + 1:
                    continue  # unknown text is taken one word at a time
                unknown, unsorted, count = cost
                new = (
                    unknown + (0 if is_known else 1),
                    unsorted + (1 if last is not None and text < last else 0),
                    count + 1,
                )
                slot = best[j].get(text)
                if slot is None or new < slot[0]:
                    best[j][text] = (new, (i, last), is_known)
    segs: list[tuple[str, bool]] = []
    pos, last = n, min(best[n], key=lambda op: best[n][op][0])
    while pos > 0 and last is not None:
        _, (prev_pos, prev_last), is_known = best[pos][last]
        segs.append((last, is_known))
        pos, last = prev_pos, prev_last
    segs.reverse()
    return _merge_unknown(segs)


def _merge_unknown(segs: list[tuple[str, bool]]) -> tuple[str, ...]:
    """Join runs of adjacent unknown words into one op; drop all-digit words."""
    ops: list[str] = []
    run: list[str] = []
    for text, is_known in segs:
        if is_known:
            if run:
                ops.append("_".join(run))
                run = []
            ops.append(text)
        elif not text.isdigit():
            run.append(text)
    if run:
        ops.append("_".join(run))
    return tuple(op for op in ops if op.strip("_"))


def fused_kernel_ops(name: str) -> FusedName | None:
    """Decode an Inductor kernel name, or None when ``name`` is not one.

    Works on GPU kernel names and on the CPU-side launch ops that carry the same name. Never
    raises, whatever the string.
    """
    if not isinstance(name, str):
        return None
    return _decoded(name)


@lru_cache(maxsize=8192)
def _decoded(name: str) -> FusedName | None:
    """:func:`fused_kernel_ops` of a string, decoded once per name (a comparison asks for the
    same few hundred names thousands of times; the result is immutable)."""
    name = name.strip()
    if _MANGLED_TRITON.fullmatch(name):
        return FusedName("triton", None, (), None, None, descriptive=False)
    m = _INDUCTOR_NAME.fullmatch(name)
    if m is None:
        return None
    rest = m.group("rest") or ""
    index: int | None = None
    head, sep, tail = rest.rpartition("_")
    if tail.isdigit() and tail.isascii():
        index, rest = int(tail), head if sep else ""
    sub = m.group("sub")
    graph = m.group("graph")
    return FusedName(
        prefix=m.group("prefix"),
        subkind=_SUBKINDS[sub] if sub else None,
        ops=segment_ops(rest),
        index=index,
        graph=int(graph) if graph and graph.isascii() else None,
    )


def eager_op_base(name: str, *, strip_inplace: bool = False) -> str:
    """The base name of a trace op: ``"aten::native_layer_norm"`` → ``"native_layer_norm"``.

    Drops the namespace (up to the last ``::``) and an overload (``aten::add.Tensor`` →
    ``add``). With ``strip_inplace``, an in-place ``add_`` becomes ``add`` (dunders such as
    ``__and__`` are kept). Names without a namespace (``ProfilerStep#1``, Inductor kernels) are
    returned unchanged.
    """
    if "::" not in name:
        return name
    base = name.rsplit("::", 1)[1].split(".", 1)[0].strip()
    if strip_inplace and _INPLACE.search(base) and not base.startswith("__"):
        base = base[:-1]
    return base
