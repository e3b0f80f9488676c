"""Where a run happens: device resolution, device name, software versions."""

from __future__ import annotations

import importlib.metadata
import platform
import socket
from pathlib import Path

import torch

from traceviz.errors import UsageError
from traceviz.runs.runinfo import Environment


def resolve_device(requested: str) -> torch.device:
    """``"auto"`` → cuda:0 when CUDA is available, else cpu; ``"cuda"`` without CUDA raises."""
    if requested == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if requested == "cuda":
        if not torch.cuda.is_available():
            build = (
                f"torch {torch.__version__} built for CUDA {torch.version.cuda}, but no GPU "
                "is visible"
                if torch.version.cuda
                else f"torch {torch.__version__} is a CPU-only build"
            )
            raise UsageError(f"--device cuda asked for, but CUDA is not available ({build})")
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(requested)


def describe(device: torch.device) -> Environment:
    """Versions and the device's name for run.json."""
    is_cuda = device.type == "cuda"
    return Environment(
        device=str(device),
        device_name=torch.cuda.get_device_name(device) if is_cuda else cpu_name(),
        device_count=torch.cuda.device_count() if torch.cuda.is_available() else 0,
        cpu_threads=torch.get_num_threads(),
        torch=str(torch.__version__),
        triton=_package_version("triton") or _package_version("pytorch-triton"),
        cuda=str(torch.version.cuda) if torch.version.cuda else None,
        python=platform.python_version(),
        platform=platform.platform(),
        hostname=socket.gethostname(),
    )


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
