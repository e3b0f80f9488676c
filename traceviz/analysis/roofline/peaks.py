"""Device peaks: the memory bandwidth and dense compute a device can reach at most, per datasheet.

The roofline (:mod:`traceviz.analysis.roofline.per_kernel`) needs two roofs per device: DRAM/HBM
bandwidth (TB/s = 10¹² bytes/s) and dense arithmetic throughput (TFLOP/s = 10¹² FLOP/s) for the
precision a kernel computes in. :data:`PEAK_TABLE` holds them for the GPUs seen in real traces, each
row with the datasheet it comes from. Figures are the vendor's **dense** peaks: NVIDIA quotes its
Tensor Core figures "with sparsity" (2:4 structured), so the dense figure is half the one printed;
AMD quotes dense figures. A precision the device does not support is ``None``.

Columns of a row (:class:`DevicePeaks`):

- ``hbm_tbps``: memory bandwidth, TB/s;
- ``fp32_tflops``: float32 without Tensor/Matrix cores on NVIDIA (CUDA cores); on AMD the
  Matrix-core FP32 figure (what a float32 GEMM can reach), TFLOP/s;
- ``tf32_tflops``, ``bf16_tflops``, ``fp16_tflops``, ``fp8_tflops``: dense Tensor/Matrix-core
  figures, TFLOP/s (``None``: not supported).

:func:`device_peaks` looks a trace's device up by its ``deviceProperties`` name (and, where names
are ambiguous or blank, its memory size and SM/CU count). An unknown device, a CPU-only trace or
a device traceviz does not model gets basis ``no-peak`` and no figures: a roofline is never drawn
from a guessed number. A CPU trace of a run directory whose run.json holds the CPU's peaks,
measured by the runner (:class:`~traceviz.runs.runinfo.HostPeaks`, :func:`host_device_peaks`),
gets those (basis ``measured``). :func:`read_peaks_file` reads a user's own figures
(``--peaks FILE``, JSON or TOML), which replace the table and the measured figures for every
trace (basis ``file``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from enum import Enum
from pathlib import Path
from typing import Any

from traceviz.errors import UsageError
from traceviz.runs.runinfo import HostPeaks
from traceviz.schema import DeviceKind
from traceviz.trace import Trace

__all__ = [
    "PEAK_TABLE",
    "PRECISIONS",
    "DevicePeaks",
    "PeakBasis",
    "PeakLookup",
    "device_peaks",
    "host_device_peaks",
    "match_device",
    "read_peaks_file",
]

#: The precisions a row gives a compute peak for, in the order of its fields.
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")
_GIB = 2**30


class PeakBasis(str, Enum):
    """Where a trace's peaks come from."""

    TABLE = "table"  # PEAK_TABLE, by the trace's device name/properties
    FILE = "file"  # the user's --peaks file
    MEASURED = "measured"  # a CPU run's peaks, measured by the runner (run.json host_peaks)
    NO_PEAK = "no-peak"  # unknown device: no roofline


@dataclass(frozen=True)
class DevicePeaks:
    """One device's peaks (units in the names; ``None``: the precision is not supported)."""

    name: str  # the device (and variant) the figures are for
    hbm_tbps: float  # DRAM/HBM bandwidth, TB/s
    fp32_tflops: float | None
    tf32_tflops: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    source: str  # the datasheet (or file) the figures come from

    def tflops(self, precision: str) -> float | None:
        """The dense peak for ``precision`` (one of :data:`PRECISIONS`), TFLOP/s, or None."""
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        value = getattr(self, f"{precision}_tflops")
        return None if value is None else float(value)

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_NV_SPARSE = "Tensor Core figures printed with sparsity, halved for dense"


def _row(
    name: str,
    hbm: float,
    fp32: float | None,
    tf32: float | None,
    bf16: float | None,
    fp16: float | None,
    fp8: float | None,
    source: str,
) -> DevicePeaks:
    return DevicePeaks(name, hbm, fp32, tf32, bf16, fp16, fp8, source)


#: The peak table: one row per device variant, each with its source.
PEAK_TABLE: tuple[DevicePeaks, ...] = (
    _row("NVIDIA A100 SXM4 80GB", 2.039, 19.5, 156.0, 312.0, 312.0, None,
         "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: 2,039 GB/s; dense figures)"),
    _row("NVIDIA A100 PCIe 80GB", 1.935, 19.5, 156.0, 312.0, 312.0, None,
         "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe: 1,935 GB/s; dense figures)"),
    _row("NVIDIA A100 40GB", 1.555, 19.5, 156.0, 312.0, 312.0, None,
         "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB PCIe/SXM: 1,555 GB/s; dense figures)"),
    _row("NVIDIA H100 SXM5", 3.35, 67.0, 494.5, 989.5, 989.5, 1979.0,
         f"NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: 3.35 TB/s; {_NV_SPARSE})"),
    _row("NVIDIA H100 PCIe", 2.0, 51.0, 378.0, 756.5, 756.5, 1513.0,
         f"NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe: 2 TB/s; {_NV_SPARSE})"),
    _row("NVIDIA H200 SXM", 4.8, 67.0, 494.5, 989.5, 989.5, 1979.0,
         f"NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: 4.8 TB/s; {_NV_SPARSE})"),
    _row("NVIDIA H200 NVL", 4.8, 60.0, 417.5, 835.5, 835.5, 1670.5,
         f"NVIDIA H200 Tensor Core GPU datasheet (H200 NVL: 4.8 TB/s; {_NV_SPARSE})"),
    _row("NVIDIA B200", 8.0, 75.0, 1125.0, 2250.0, 2250.0, 4500.0,
         "NVIDIA HGX B200 datasheet (8 GPUs: 64 TB/s, FP32 600 TFLOPS, TF32 18, FP16/BF16 36, "
         f"FP8 72 PFLOPS; divided by 8; {_NV_SPARSE})"),
    _row("NVIDIA L4", 0.3, 30.3, 60.0, 121.0, 121.0, 242.5,
         f"NVIDIA L4 Tensor Core GPU datasheet (300 GB/s; {_NV_SPARSE})"),
    _row("NVIDIA V100 SXM2", 0.9, 15.7, None, None, 125.0, None,
         "NVIDIA Tesla V100 GPU datasheet (V100 SXM2: 900 GB/s, FP32 15.7, Tensor 125 TFLOPS; "
         "the DGX Station's V100-DGXS are SXM2 boards)"),
    _row("NVIDIA V100 PCIe", 0.9, 14.0, None, None, 112.0, None,
         "NVIDIA Tesla V100 GPU datasheet (V100 PCIe: 900 GB/s, FP32 14, Tensor 112 TFLOPS)"),
    _row("NVIDIA V100S PCIe", 1.134, 16.4, None, None, 130.0, None,
         "NVIDIA V100S datasheet (1,134 GB/s, FP32 16.4, Tensor 130 TFLOPS)"),
    _row("AMD Instinct MI210 (or one MI250 GCD)", 1.6384, 45.3, None, 181.0, 181.0, None,
         "AMD Instinct MI210 datasheet (1.6 TB/s, FP32 matrix 45.3, FP16/BF16 181.0 TFLOPS); "
         "one GCD of an MI250 (AMD Instinct MI250 datasheet: 3.2 TB/s, FP32 matrix 90.5, "
         "FP16/BF16 362.1 for two GCDs) has the same figures"),
    _row("AMD Instinct MI300X", 5.3, 163.4, 653.7, 1307.4, 1307.4, 2614.9,
         "AMD Instinct MI300X datasheet (5.3 TB/s; dense figures)"),
    _row("AMD Instinct MI325X", 6.0, 163.4, 653.7, 1307.4, 1307.4, 2614.9,
         "AMD Instinct MI325X datasheet (6 TB/s; dense figures)"),
)  # fmt: skip


def _by_name(name: str) -> DevicePeaks:
    for row in PEAK_TABLE:
        if row.name == name:
            return row
    raise KeyError(name)


def _has(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern, re.IGNORECASE)
    return lambda text: compiled.search(text) is not None


_PCIE = _has(r"pcie")
_NVL = _has(r"\bnvl\b")


def match_device(props: Mapping[str, Any]) -> DevicePeaks | None:
    """The :data:`PEAK_TABLE` row of one ``deviceProperties`` entry, or None when unknown.

    The name decides (``NVIDIA H200``, ``AMD Instinct MI300X``); where it leaves the variant
    open, ``totalGlobalMem`` (bytes) and ``numSms`` (SMs / CUs) do: an A100 of more than 60 GiB
    is an 80GB board; an AMD device with a blank or generic name and 304 CUs (gfx942) is an
    MI300X (≤ 200 GiB) or an MI325X (more); one with 104 CUs and 64 GiB (gfx90a) is an MI210 or
    one GCD of an MI250, whose figures are the same.
    """
    name = str(props.get("name") or "")
    memory = _number(props.get("totalGlobalMem"))
    units = _number(props.get("numSms"))
    for test, pick in _RULES:
        row = pick(name, memory, units) if test(name) else None
        if row is not None:
            return row
    return _amd_by_shape(name, memory, units, props)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _a100(name: str, memory: float | None, units: float | None) -> DevicePeaks | None:
    if memory is None:
        return None
    if memory <= 60 * _GIB:
        return _by_name("NVIDIA A100 40GB")
    return _by_name("NVIDIA A100 PCIe 80GB" if _PCIE(name) else "NVIDIA A100 SXM4 80GB")


def _h100(name: str, memory: float | None, units: float | None) -> DevicePeaks | None:
    if _NVL(name):
        return None  # H100 NVL: not in the table
    return _by_name("NVIDIA H100 PCIe" if _PCIE(name) else "NVIDIA H100 SXM5")


def _h200(name: str, memory: float | None, units: float | None) -> DevicePeaks | None:
    return _by_name("NVIDIA H200 NVL" if _NVL(name) else "NVIDIA H200 SXM")


def _v100(name: str, memory: float | None, units: float | None) -> DevicePeaks | None:
    if re.search(r"v100s", name, re.IGNORECASE):
        return _by_name("NVIDIA V100S PCIe")
    return _by_name("NVIDIA V100 PCIe" if _PCIE(name) else "NVIDIA V100 SXM2")


def _fixed(row: str) -> Callable[[str, float | None, float | None], DevicePeaks | None]:
    return lambda name, memory, units: _by_name(row)


def _mi300(name: str, memory: float | None, units: float | None) -> DevicePeaks | None:
    return _by_name("AMD Instinct MI325X" if "325" in name else "AMD Instinct MI300X")


_RULES: tuple[tuple[Callable[[str], bool], Callable[..., DevicePeaks | None]], ...] = (
    (_has(r"\bA100\b"), _a100),
    (_has(r"\bH100\b"), _h100),
    (_has(r"\bH200\b"), _h200),
    (_has(r"\bB200\b"), _fixed("NVIDIA B200")),
    (_has(r"\bL4\b"), _fixed("NVIDIA L4")),
    (_has(r"\bV100S?\b"), _v100),
    (_has(r"\bMI(210|250)\b"), _fixed("AMD Instinct MI210 (or one MI250 GCD)")),
    (_has(r"\bMI3(00|25)X\b"), _mi300),
)


def _amd_by_shape(
    name: str, memory: float | None, units: float | None, props: Mapping[str, Any]
) -> DevicePeaks | None:
    """AMD devices whose name is blank or generic (``AMD Radeon Graphics``), by gfx and CUs."""
    if name and not re.search(r"^(AMD )?Radeon Graphics$", name.strip(), re.IGNORECASE):
        return None
    if memory is None or units is None:
        return None
    major, minor = props.get("computeMajor"), props.get("computeMinor")
    if major == 9 and minor == 4 and units == 304:  # gfx942
        return _by_name("AMD Instinct MI325X" if memory > 200 * _GIB else "AMD Instinct MI300X")
    if major == 9 and units == 104 and abs(memory - 64 * _GIB) < 1 * _GIB:  # gfx90a
        return _by_name("AMD Instinct MI210 (or one MI250 GCD)")
    return None


@dataclass(frozen=True)
class PeakLookup:
    """A trace's peaks: ``peaks`` (None with basis ``no-peak``), where they come from, and the
    device name the trace gives (``device_name``; None without deviceProperties)."""

    peaks: DevicePeaks | None
    basis: PeakBasis
    device_name: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "basis": self.basis.value,
            "device_name": self.device_name,
            "peaks": self.peaks.to_json() if self.peaks is not None else None,
        }


def device_peaks(
    trace: Trace, *, override: DevicePeaks | None = None, host: HostPeaks | None = None
) -> PeakLookup:
    """The peaks of the trace's device: ``override`` (a :func:`read_peaks_file` result) when
    given; for a CPU-only trace, ``host`` (the CPU peaks its run measured, run.json's
    ``host_peaks``) when given; else the first ``deviceProperties`` entry the table knows.
    A CPU-only trace without ``host`` or a device traceviz does not model
    (``DeviceKind.OTHER``) has no peak unless overridden."""
    devices = [d for d in trace.meta.devices if isinstance(d, Mapping)]
    name = next((str(d["name"]) for d in devices if d.get("name")), None)
    if override is not None:
        return PeakLookup(override, PeakBasis.FILE, name)
    if host is not None and trace.device_kind is DeviceKind.CPU:
        return PeakLookup(host_device_peaks(host), PeakBasis.MEASURED, name)
    if trace.device_kind not in (DeviceKind.CUDA, DeviceKind.ROCM):
        return PeakLookup(None, PeakBasis.NO_PEAK, name)
    for props in devices:
        row = match_device(props)
        if row is not None:
            return PeakLookup(row, PeakBasis.TABLE, name)
    return PeakLookup(None, PeakBasis.NO_PEAK, name)


def host_device_peaks(host: HostPeaks) -> DevicePeaks:
    """A CPU's measured peaks (run.json ``host_peaks``) as a peak row: the copy bandwidth as
    the memory roof, the float32 (and, where measured, bfloat16) GEMM rates as the compute
    roofs; the CPU has no TF32, FP16 or FP8 figure."""
    return DevicePeaks(
        name=f"{host.cpu} ({host.threads} threads)",
        hbm_tbps=host.memory_tbps,
        fp32_tflops=host.fp32_tflops,
        tf32_tflops=None,
        bf16_tflops=host.bf16_tflops,
        fp16_tflops=None,
        fp8_tflops=None,
        source=f"run.json host_peaks, {host.method}",
    )


# --- the --peaks file --------------------------------------------------------------------

_FILE_KEYS = ("name", "hbm_tbps", *(f"{p}_tflops" for p in PRECISIONS), "source")


def read_peaks_file(path: str | Path) -> DevicePeaks:
    """A user's peaks from a JSON or TOML file (``.toml``: TOML, anything else JSON).

    Keys: ``hbm_tbps`` (required, TB/s), ``fp32_tflops`` … ``fp8_tflops`` (TFLOP/s, optional:
    a missing one is "not supported"), ``name`` and ``source`` (optional text; ``source``
    defaults to the file's path). Raises :class:`~traceviz.errors.UsageError` naming the file
    and the problem: unreadable, not an object, an unknown key, a figure that is not a
    positive number.
    """
    where = str(path)
    data = _load(Path(path), where)
    if not isinstance(data, dict):
        raise UsageError(f"{where}: a peaks file holds one object (hbm_tbps, fp32_tflops, ...)")
    unknown = sorted(set(data) - set(_FILE_KEYS))
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {_FILE_KEYS}")
    if "hbm_tbps" not in data:
        raise UsageError(f"{where}: hbm_tbps (memory bandwidth, TB/s) is required")
    figures = {key: _positive(data.get(key), key, where) for key in _FILE_KEYS[1:-1]}
    hbm = figures.pop("hbm_tbps")
    assert hbm is not None  # required above; _positive keeps it
    return DevicePeaks(
        name=str(data.get("name") or "peaks file"),
        hbm_tbps=hbm,
        source=str(data.get("source") or where),
        **figures,
    )


def _load(path: Path, where: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{where}: cannot read the peaks file ({err})") from None
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            raise UsageError(f"{where}: TOML needs Python 3.11 or later; give JSON") from None
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise UsageError(f"{where}: not valid TOML ({err})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{where}: not valid JSON ({err})") from None


def _positive(value: Any, key: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UsageError(f"{where}: {key} must be a positive number, not {value!r}")
    if value != value or value == float("inf"):
        raise UsageError(f"{where}: {key} must be a finite number, not {value!r}")
    return float(value)
