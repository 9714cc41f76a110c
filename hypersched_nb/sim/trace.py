"""Learning-curve traces (a contract: docs/design.md): loading, validation and lookup by name."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.errors import ConfigError, TraceFormatError

__all__ = ["Trace", "load_trace", "find_trace", "trace_dirs", "split_halves", "TRACE_KEY"]

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

    def subset(self, ids, *, name: str) -> Trace:
        """The trace of configurations ``ids`` alone: their curves, parameters and timings,
        and everything else of this one (metric, mode, scaling, start-up)."""
        ids = tuple(ids)
        unknown = sorted(set(ids) - set(self.ids))
        if unknown:
            raise ConfigError(
                f"trace {self.name!r} has no configuration {unknown[0]}: pick ids from its .ids"
            )
        return replace(
            self, name=name, ids=ids, metrics={i: self.metrics[i] for i in ids},
            seconds={i: self.seconds[i] for i in ids}, params={i: self.params[i] for i in ids},
        )  # fmt: skip


def split_halves(trace: Trace, *, seed: int) -> tuple[Trace, Trace]:
    """``trace``'s configurations in two halves drawn at random under ``seed``: a past search
    (the first) and a new one (the second), as a benchmark of priors uses them."""
    ids = list(np.random.default_rng(seed).permutation(trace.ids))
    half = len(ids) // 2
    if half == 0:
        raise ConfigError(
            f"trace {trace.name!r} has {len(ids)} configuration: a split needs 2 or more"
        )
    past, new = sorted(int(i) for i in ids[:half]), sorted(int(i) for i in ids[half:])
    return (
        trace.subset(past, name=f"{trace.name}[past {seed}]"),
        trace.subset(new, name=f"{trace.name}[new {seed}]"),
    )


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
    path = find_trace(name_or_path)
    metrics, seconds, params = _curves(path, _rows(path))
    sidecar = path.with_suffix(".json")
    meta = _sidecar(sidecar)
    return Trace(
        name=path.stem,
        ids=tuple(sorted(metrics)),
        metrics=metrics,
        seconds=seconds,
        params=params,
        metric_name=meta.get("metric", "metric"),
        mode=_mode(sidecar, meta),
        scaling=_scaling(sidecar, meta),
        startup_seconds=_startup_seconds(sidecar, meta),
        meta=meta,
    )


def _rows(path: Path):
    """The rows of the trace CSV at ``path``, checked and sorted by trial and epoch."""
    import pandas as pd

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
    for column in _REQUIRED:  # in this order: a cell is named by the columns checked before it
        df[column] = _numbers(path, df, column)
    if (df["seconds"] < 0).any() or df["seconds"].isna().any():
        raise TraceFormatError(f"trace {path}: `seconds` must be >= 0 on every row")
    df = df.sort_values(["trial", "epoch"], kind="stable")
    _check_no_repeated_epoch(path, df)
    return df


def _numbers(path: Path, df, column: str):
    """``column`` as numbers: trial ids and epochs whole numbers in every row; metrics and
    seconds numbers where a cell is not empty (an empty metric is a diverged epoch)."""
    import pandas as pd

    values = pd.to_numeric(df[column], errors="coerce")
    whole = column in ("trial", "epoch")
    if whole:
        bad = values.isna() | (values % 1 != 0)
    else:
        bad = values.isna() & df[column].notna()
    if bad.any():
        label = bad.idxmax()  # the first offending row
        cell = df.at[label, column]
        shown = "nothing" if pd.isna(cell) else repr(_plain(cell))
        raise TraceFormatError(
            f"trace {path}: column {column!r} holds {shown} ({_where(df, label, column)}), "
            f"but must hold {'whole numbers' if whole else 'numbers'}"
        )
    return values


def _where(df, label, column: str) -> str:
    """The row ``label`` of a trace just read, named by the columns checked before
    ``column``: its trial and epoch once they are known to be numbers."""
    row = f"row {label + 1} below the header"
    if column == "trial":
        return row
    if column == "epoch":
        return f"trial {int(df.at[label, 'trial'])}, {row}"
    return f"trial {int(df.at[label, 'trial'])}, epoch {int(df.at[label, 'epoch'])}"


def _check_no_repeated_epoch(path: Path, df) -> None:
    """One row per trial and epoch (a repeated one is named, not taken for a gap)."""
    repeated = df.duplicated(["trial", "epoch"], keep=False)
    if repeated.any():
        trial, epoch = df.loc[repeated.idxmax(), ["trial", "epoch"]]
        rows = int(((df["trial"] == trial) & (df["epoch"] == epoch)).sum())
        raise TraceFormatError(
            f"trace {path}: trial {int(trial)} has epoch {int(epoch)} "
            f"{'twice' if rows == 2 else f'in {rows} rows'}; keep one row per trial and epoch"
        )


def _curves(path: Path, df) -> tuple[dict, dict, dict]:
    """Metrics, seconds and parameters of each trial, from its checked rows."""
    pcols = [c for c in df.columns if c.startswith("param_")]
    metrics, seconds, params = {}, {}, {}
    for tid, g in df.groupby("trial", sort=True):
        tid = int(tid)
        epochs = g["epoch"].to_numpy()
        if epochs[0] != 1 or (np.diff(epochs) != 1).any():
            raise TraceFormatError(
                f"trace {path}: trial {tid} epochs must run 1, 2, 3, ... without gaps"
            )
        metrics[tid] = g["metric"].to_numpy(dtype=float)
        seconds[tid] = g["seconds"].to_numpy(dtype=float)
        first = g.iloc[0]
        params[tid] = {c.removeprefix("param_"): _plain(first[c]) for c in pcols}
    return metrics, seconds, params


_JSON_KINDS = {list: "an array", str: "a string", bool: "true or false", int: "a number",
               float: "a number", type(None): "null"}  # fmt: skip


def _sidecar(sidecar: Path) -> dict:
    """The sidecar's keys ({} without one)."""
    if not sidecar.exists():
        return {}
    try:
        meta = json.loads(sidecar.read_text())
    except ValueError as exc:  # not JSON, or not UTF-8 text
        raise TraceFormatError(f"sidecar {sidecar}: invalid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise TraceFormatError(
            f"sidecar {sidecar}: holds {_JSON_KINDS[type(meta)]}, but must be a JSON object "
            'such as {"mode": "max", "startup_seconds": 0}'
        )
    return meta


def _mode(sidecar: Path, meta: dict) -> str:
    mode = meta.get("mode", "max")
    if mode not in ("max", "min"):
        raise TraceFormatError(f"sidecar {sidecar}: `mode` is {mode!r}, but must be 'max' or 'min'")
    return mode


def _scaling(sidecar: Path, meta: dict) -> ScalingCurve:
    try:
        return ScalingCurve.parse(meta.get("scaling"))
    except ConfigError as exc:
        raise TraceFormatError(f"sidecar {sidecar}: {exc}") from None


def _startup_seconds(sidecar: Path, meta: dict) -> float:
    value = meta.get("startup_seconds", 0.0)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (number and math.isfinite(value) and value >= 0):
        raise TraceFormatError(
            f"sidecar {sidecar}: `startup_seconds` is {json.dumps(value)}, but must be a "
            "number of seconds >= 0"
        )
    return float(value)


def _plain(value):
    return value.item() if hasattr(value, "item") else value
