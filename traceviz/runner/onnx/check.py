"""Output checks of an ONNX Runtime level against eager, and the reference evaluator's check.

The comparison is the runner's own (:func:`traceviz.runner.compare.compare_outputs`: allclose,
each output with its own dtype's tolerances, max abs / rel difference), on
the eager outputs' tensors in order against the graph's outputs in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils import _pytree as pytree

from traceviz.runner.compare import compare_outputs
from traceviz.runner.models import one_line
from traceviz.runner.onnx_reference import reference_outputs
from traceviz.runs.runinfo_backends import LevelCheck, ReferenceCheck


def eager_tensors(outputs: Any) -> list[torch.Tensor]:
    """The eager outputs' tensors, in the order an exporter flattens them."""
    return [t for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]


def level_check(eager: list[torch.Tensor], outputs: Sequence[np.ndarray]) -> LevelCheck:
    """``outputs`` (a session's, in graph order) against ``eager``."""
    found = compare_outputs(list(eager), [torch.from_numpy(np.asarray(o)) for o in outputs])
    return LevelCheck(
        passed=found.passed,
        max_abs_diff=found.max_abs_error,
        max_rel_diff=found.max_rel_error,
        atol=found.atol,
        rtol=found.rtol,
    )


def reference_check(
    graph: Path, feeds: dict[str, np.ndarray], eager: list[torch.Tensor]
) -> ReferenceCheck:
    """Evaluate ``graph`` with onnx.reference and traceviz's ORT contrib ops
    (:func:`traceviz.runner.onnx_reference.reference_outputs`), independently of ORT, and check
    it against ``eager``; an op it cannot evaluate, or any other failure, is the ``error``."""
    import onnx

    try:
        outputs = reference_outputs(onnx.load(str(graph)), feeds)
    except Exception as err:
        return ReferenceCheck(error=one_line(err))
    found = level_check(eager, outputs)
    return ReferenceCheck(passed=found.passed, max_abs_diff=found.max_abs_diff)
