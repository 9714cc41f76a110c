"""Learning-curve traces (a contract: docs/design.md): loading, validation and lookup by name."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.errors import TraceFormatError

__all__ = ["Trace", "load_trace", "find_trace", "trace_dirs", "TRACE_KEY"]

#: the key of an offered configuration that names its curve in the trace
TRACE_KEY = "trace_trial"
_REQUIRED = ("trial", "epoch", "metric", "seconds")


@dataclass(frozen=True)
class Trace:
    """A trace in memory: one curve (metrics, seconds per epoch) per configuration."""

    name: str
    ids: tuple[int, ...]
    metrics: dict[int, np.ndarray]
    seconds: dict[int, np.ndarray]
    params: dict[int, dict]
    metric_name: str = "metric"
    mode: str = "max"
    scaling: ScalingCurve = field(default_factory=ScalingCurve)
    startup_seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def longest(self) -> int:
        return max(len(m) for m in self.metrics.values())

    def config(self, trial: int) -> dict:
        return {TRACE_KEY: trial, **self.params[trial]}

    def median_full_time(self, max_epochs: int | None = None) -> float:
        """Median seconds to train one configuration fully on one worker."""
        R = max_epochs or self.longest
        return float(np.median([s[:R].sum() for s in self.seconds.values()]))

    def final_metrics(self, max_epochs: int | None = None) -> np.ndarray:
        R = max_epochs or self.longest
        return np.array([m[:R][-1] for m in self.metrics.values()])


def trace_dirs() -> list[Path]:
    """Where trace names are looked up, in order: $HYPERSCHED_TRACES, the traces shipped in
    the package, then ``../shared/traces`` beside a source checkout."""
    dirs = [Path(p) for p in os.environ.get("HYPERSCHED_TRACES", "").split(os.pathsep) if p]
    here = Path(__file__).resolve().parent.parent
    dirs.append(here / "traces")
    dirs.append(here.parent.parent / "shared" / "traces")
    return dirs


def find_trace(name_or_path: str | os.PathLike) -> Path:
    path = Path(name_or_path)
    if path.suffix == ".csv" and path.exists():
        return path
    for d in trace_dirs():
        candidate = d / f"{path.name.removesuffix('.csv')}.csv"
        if candidate.exists():
            return candidate
    known = sorted({p.stem for d in trace_dirs() if d.is_dir() for p in d.glob("*.csv")})
    raise TraceFormatError(
        f"trace {str(name_or_path)!r} is neither a CSV file nor a known name; known: {', '.join(known) or 'none'}"
    )


def load_trace(name_or_path: str | os.PathLike) -> Trace:
    """Read a trace CSV and its optional JSON sidecar; raise one-line errors on bad input."""
    import pandas as pd

    path = find_trace(name_or_path)
    try:
        df = pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - pandas raises many types for malformed files
        raise TraceFormatError(f"trace {path}: cannot be read as CSV ({exc})") from None
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise TraceFormatError(
            f"trace {path}: missing column(s) {', '.join(missing)}; need {', '.join(_REQUIRED)}"
        )
    if df.empty:
        raise TraceFormatError(f"trace {path}: has no rows")
    if (df["seconds"] < 0).any() or df["seconds"].isna().any():
        raise TraceFormatError(f"trace {path}: `seconds` must be >= 0 on every row")
    df = df.sort_values(["trial", "epoch"], kind="stable")
    pcols = [c for c in df.columns if c.startswith("param_")]
    metrics, seconds, params = {}, {}, {}
    for tid, g in df.groupby("trial", sort=True):
        epochs = g["epoch"].to_numpy()
        if epochs[0] != 1 or (np.diff(epochs) != 1).any():
            raise TraceFormatError(
                f"trace {path}: trial {tid} epochs must run 1, 2, 3, ... without gaps"
            )
        tid = int(tid)
        metrics[tid] = g["metric"].to_numpy(dtype=float)
        seconds[tid] = g["seconds"].to_numpy(dtype=float)
        first = g.iloc[0]
        params[tid] = {c.removeprefix("param_"): _plain(first[c]) for c in pcols}
    meta = {}
    sidecar = path.with_suffix(".json")
    if sidecar.exists():
        try:
            meta = json.loads(sidecar.read_text())
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"sidecar {sidecar}: invalid JSON ({exc})") from None
    mode = meta.get("mode", "max")
    if mode not in ("max", "min"):
        raise TraceFormatError(f"sidecar {sidecar}: `mode` is {mode!r}, but must be 'max' or 'min'")
    return Trace(
        name=path.stem,
        ids=tuple(sorted(metrics)),
        metrics=metrics,
        seconds=seconds,
        params=params,
        metric_name=meta.get("metric", "metric"),
        mode=mode,
        scaling=ScalingCurve.parse(meta.get("scaling")),
        startup_seconds=float(meta.get("startup_seconds", 0.0)),
        meta=meta,
    )


def _plain(value):
    return value.item() if hasattr(value, "item") else value
