"""``Trace``: one profiler trace as typed tables plus metadata, and its cache (NumPy ``.npz``).

``traceviz.load(path)`` is the way in: it reads a Chrome/Kineto JSON trace (``.json``,
``.json.gz``, or the oldest bare-array form) or a cache directory written by
:meth:`Trace.save`. Table columns are declared in :mod:`traceviz.schema`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from traceviz import schema, table_store
from traceviz.errors import TraceFormatError
from traceviz.schema import DeviceKind

CACHE_MARKER = "traceviz-trace.json"
# 2: kernels.excl_dur_us; 3: categories Parquet cannot keep; 4: NumPy .npz tables, no Parquet
CACHE_FORMAT_VERSION = 4


@dataclass(frozen=True)
class TraceMeta:
    """Facts about a trace that are not rows of a table."""

    source: str  # the file it was parsed from
    device_kind: DeviceKind
    devices: list[dict[str, Any]] = field(default_factory=list)  # deviceProperties as given
    schema_version: int | None = None
    legacy_schema: bool = False  # oldest Kineto categories (Operator/Runtime/Kernel/...)
    versions: dict[str, Any] = field(default_factory=dict)  # cuda/hip/cupti/roctracer versions
    base_time_ns: int | None = None  # baseTimeNanoseconds: ts_us are relative to it when set
    display_time_unit: str | None = None
    time_origin_us: float | None = None  # earliest event start
    time_end_us: float | None = None  # latest event end
    distributed: dict[str, Any] = field(default_factory=dict)  # rank, world_size, backend, ...
    profiler_flags: dict[str, Any] = field(default_factory=dict)  # record_shapes, with_stack, ...
    trace_name: str | None = None
    process_names: dict[str, str] = field(default_factory=dict)  # pid -> name (from "M" events)
    thread_names: dict[str, str] = field(default_factory=dict)  # "pid/tid" -> name

    @property
    def span_us(self) -> float:
        """Wall time covered by the trace, µs (0 for an empty trace)."""
        if self.time_origin_us is None or self.time_end_us is None:
            return 0.0
        return self.time_end_us - self.time_origin_us

    @property
    def device_names(self) -> list[str]:
        return [str(d.get("name")) for d in self.devices if d.get("name")]

    @property
    def framework(self) -> str:
        """Who wrote the trace: ``"onnxruntime"`` for an ONNX Runtime profile (its reader sets
        ``profiler_flags["format"]``), else ``"pytorch"`` (Chrome/Kineto)."""
        return "onnxruntime" if self.profiler_flags.get("format") == "onnxruntime" else "pytorch"

    @property
    def is_onnxruntime(self) -> bool:
        """An ONNX Runtime profile: nodes, not kernels; torch advice does not apply."""
        return self.framework == "onnxruntime"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["device_kind"] = self.device_kind.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TraceMeta:
        data = dict(data)
        data["device_kind"] = DeviceKind(data["device_kind"])
        return cls(**data)


@dataclass(frozen=True)
class ParseStats:
    """Where every input event went: conservation is ``events_in == accounted``.

    ``rows`` counts the input events that became rows of each table (derived rows, such as CPU
    kernels or regions, are not counted again); ``ignored`` counts the events that carry no
    row, by reason (flow arrows, metadata, instants, ...).
    """

    events_in: int
    rows: dict[str, int]
    ignored: dict[str, int]

    @property
    def events_ignored(self) -> int:
        return sum(self.ignored.values())

    @property
    def accounted(self) -> int:
        return sum(self.rows.values()) + self.events_ignored

    def to_json(self) -> dict[str, Any]:
        return {"events_in": self.events_in, "rows": self.rows, "ignored": self.ignored}


@dataclass(frozen=True)
class Trace:
    """A parsed trace: typed tables (see :mod:`traceviz.schema` for columns and units)."""

    kernels: pd.DataFrame
    ops: pd.DataFrame
    launches: pd.DataFrame
    regions: pd.DataFrame
    memory: pd.DataFrame
    spans: pd.DataFrame
    steps: pd.DataFrame
    meta: TraceMeta
    stats: ParseStats

    @property
    def device_kind(self) -> DeviceKind:
        return self.meta.device_kind

    @property
    def path(self) -> str:
        return self.meta.source

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name, in schema order."""
        return {name: getattr(self, name) for name in schema.TABLE_DTYPES}

    def save(self, directory: str | Path) -> Path:
        """Write the tables, one uncompressed NumPy ``.npz`` each (:mod:`traceviz.table_store`),
        plus a JSON header (meta, parse stats, each table's column list);
        ``traceviz.load(directory)`` reads it back exactly. NumPy and pandas only (no pyarrow).

        Raises ``ValueError`` naming the table and column for a dtype the store cannot keep
        (the schema's dtypes all can)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        tables = {
            name: table_store.write_table(out / _table_file(name), table, name=name)
            for name, table in self.tables().items()
        }
        header = {
            "format_version": CACHE_FORMAT_VERSION,
            "meta": self.meta.to_json(),
            "stats": self.stats.to_json(),
            "tables": tables,
        }
        (out / CACHE_MARKER).write_text(json.dumps(header, indent=1, default=str))
        return out

    def __repr__(self) -> str:
        return (
            f"Trace({self.meta.source!r}, device={self.device_kind.value}, "
            f"kernels={len(self.kernels)}, ops={len(self.ops)}, launches={len(self.launches)}, "
            f"regions={len(self.regions)})"
        )


def is_cache_dir(path: Path) -> bool:
    return path.is_dir() and (path / CACHE_MARKER).is_file()


def load_cache(directory: Path) -> Trace:
    """Read a directory written by :meth:`Trace.save`.

    Raises :class:`~traceviz.errors.TraceFormatError` naming ``directory`` when the header is
    unreadable or of another format version, or a table file is missing, damaged, truncated
    or lacks a column the header names."""
    try:
        header = json.loads((directory / CACHE_MARKER).read_text())
    except (OSError, ValueError) as err:
        raise TraceFormatError(directory, f"unreadable trace cache header: {err}") from err
    version = header.get("format_version") if isinstance(header, dict) else None
    if version != CACHE_FORMAT_VERSION:
        raise TraceFormatError(
            directory,
            f"trace cache format {version!r} is not "
            f"{CACHE_FORMAT_VERSION}; delete the directory and load the JSON trace again",
        )
    try:
        specs = header["tables"]
        tables = {
            name: _read_table(directory, name, specs[name], dtypes)
            for name, dtypes in schema.TABLE_DTYPES.items()
        }
        meta = TraceMeta.from_json(header["meta"])
        stats = ParseStats(**header["stats"])
    except TraceFormatError:
        raise
    except (KeyError, TypeError, ValueError) as err:
        reason = f"{err.args[0]!r} is missing" if isinstance(err, KeyError) else str(err)
        raise TraceFormatError(directory, f"trace cache header: {reason}") from err
    return Trace(meta=meta, stats=stats, **tables)


def _table_file(name: str) -> str:
    return f"{name}.npz"


def _read_table(
    directory: Path, name: str, spec: dict[str, Any], dtypes: dict[str, str]
) -> pd.DataFrame:
    """Table ``name`` as saved, held to the schema's columns and dtypes."""
    try:
        table = table_store.read_table(directory / _table_file(name), spec)
    except TraceFormatError as err:
        raise TraceFormatError(directory, f"cache table {name}: {err.reason}") from err
    try:
        return schema.conform(table, dtypes)
    except KeyError as err:  # a table saved without a column the schema declares
        raise TraceFormatError(directory, f"cache table {name}: {err.args[0]}") from err
