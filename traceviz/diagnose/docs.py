"""Links to the PyTorch documentation that findings point to (each page checked to exist)."""

from __future__ import annotations

TORCH_COMPILE = "https://pytorch.org/docs/stable/generated/torch.compile.html"
TROUBLESHOOTING = "https://pytorch.org/docs/stable/torch.compiler_troubleshooting.html"
GRAPH_BREAKS = (
    "https://docs.pytorch.org/docs/stable/compile/programming_model.graph_breaks_index.html"
)
RECOMPILATION = "https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html"
CUDAGRAPH_TREES = "https://pytorch.org/docs/stable/torch.compiler_cudagraph_trees.html"
PROFILER = "https://pytorch.org/docs/stable/profiler.html"
SYNC_DEBUG = "https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html"
PINNED_MEMORY = "https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html"
CUDA_MEMORY = "https://pytorch.org/docs/stable/torch_cuda_memory.html"
ADDMM = "https://pytorch.org/docs/stable/generated/torch.addmm.html"
