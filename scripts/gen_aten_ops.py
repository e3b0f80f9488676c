"""Write ``traceviz/data/aten_ops.txt``: the base names of every ``aten::`` operator.

traceviz decodes Inductor kernel names (``triton_poi_fused__unsafe_view_add_3``) by segmenting
them against this set, without importing torch at run time. Run once per torch upgrade and
commit the result::

    .venv/bin/python scripts/gen_aten_ops.py

Kept: the base name of each ``aten::`` op (overload dropped: ``aten::add.Tensor`` → ``add``).
Dropped: names ending in ``_`` (in-place variants such as ``add_`` and dunders such as
``__and__``; Inductor names its kernels after functional ops, and keeping them would make
``relu__softmax`` ambiguous), and every other namespace (``prims``, ``quantized``, …).
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "traceviz" / "data" / "aten_ops.txt"


def aten_base_names(all_op_names: list[str]) -> list[str]:
    """Sorted functional base names of the ``aten::`` ops among ``all_op_names``."""
    bases = {
        name.split("::", 1)[1].split(".", 1)[0]
        for name in all_op_names
        if name.startswith("aten::")
    }
    return sorted(b for b in bases if b and not b.endswith("_"))


def main() -> int:
    """Generate the file from the installed torch; return an exit code."""
    import torch

    names = aten_base_names(list(torch._C._dispatch_get_all_op_names()))
    header = f"# aten op base names from torch {torch.__version__}; scripts/gen_aten_ops.py\n"
    OUT.write_text(header + "\n".join(names) + "\n", encoding="utf-8")
    print(f"wrote {len(names)} names to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
