"""A frozen picture of a search (trio's ``statistics()``): what every view draws from.

The dashboard, the magic, the demo's progress line and the HTML report all read
:class:`ExperimentSnapshot` values and nothing else, so none of them can disturb the search.
Times are seconds on the search's clock (0 = start); ``started`` gives the wall time of 0
for a live search.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from hypersched_nb.experiment.columns import TrialColumns
from hypersched_nb.experiment.deadline import format_duration

if TYPE_CHECKING:
    from hypersched_nb.experiment.forecast import ForecastMade

__all__ = ["ExperimentSnapshot", "TrialRow", "Allocation", "Best"]


_COLUMNS = (
    "trial", "state", "epochs", "best", "last", "workers", "peak_workers", "started_at", "stopped_at", "reason",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TrialRow:
    """One trial as it stands. ``best`` and ``last`` are raw metric values (NaN: none yet)."""

    trial_id: int
    config: Mapping
    state: str  # PENDING, RUNNING, PAUSED, TERMINATED or ERRORED
    epochs: int
    best: float
    last: float
    workers: int  # held now
    peak_workers: int  # most ever held at once
    started_at: float | None
    stopped_at: float | None
    reason: str  # why it is where it is ("paused at rung 4: ...")
    metrics: tuple[float, ...] = ()  # per epoch, raw
    starts: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Allocation:
    """From ``time`` on, ``trial`` holds ``workers`` workers (0: none)."""

    time: float
    trial: int
    workers: int


@dataclass(frozen=True, slots=True)
class Best:
    """The best result so far: the trial, its configuration, the metric and its epoch."""

    trial_id: int
    config: Mapping
    metric: float
    epoch: int


@dataclass(frozen=True)
class ExperimentSnapshot:
    """The state of one search at one moment; cheap to keep, never changes."""

    time: float
    deadline: float
    status: str  # created, running, stopping, failing, finished, failed (or interrupted)
    metric: str
    mode: str
    policy: str  # the registry name
    describe: str  # the policy's own line on what it believes now
    workers: int  # workers in the cluster now
    trials: tuple[TrialRow, ...] = ()
    allocation: tuple[Allocation, ...] = ()  # every change of a trial's workers, in time order
    capacity: tuple[tuple[float, int], ...] = ()  # (time, workers in the cluster), in time order
    best: Best | None = None
    events: tuple[dict, ...] = ()  # the journal: time, trial, action, reason
    started: datetime | None = None  # wall time at clock 0 (None on a virtual clock)
    error: str | None = None
    version: int = 0  # grows with every change the search makes
    stopped_at: float | None = None  # when the user asked it to stop (clock time)
    resumed_at: float | None = None  # when it went on after its kernel died (clock time)
    prior: str | None = None  # the past search it was given (its label), if any
    # the workers Dask has paused now (memory past its pause threshold): they run nothing
    # and get no new trial until resumed; none once the search is over
    paused_workers: tuple[str, ...] = ()
    # the last forecast asked of the search (not its state: two snapshots of one moment
    # are equal whatever was forecast between them)
    forecast: ForecastMade | None = field(default=None, compare=False)
    # the trials column by column (:mod:`.columns`): given by a live search, which keeps
    # them as it goes; read from ``trials`` when not given, or given for other rows
    columns: TrialColumns | None = field(default=None, compare=False, repr=False)
    # trials per state, read from the columns (never given: a snapshot replaced with other
    # trials counts them anew)
    counts: Mapping[str, int] = field(init=False, compare=False, default_factory=dict)

    def __post_init__(self):
        if self.columns is None or self.columns.rows is not self.trials:
            object.__setattr__(self, "columns", TrialColumns.of(self.trials))
        n = {s: 0 for s in ("PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERRORED")}
        n.update(Counter(self.columns.state.tolist()))
        object.__setattr__(self, "counts", n)

    # ------------------------------------------------------------------ derived

    @property
    def time_left(self) -> float:
        return max(0.0, self.deadline - self.time)

    def row(self, trial_id: int) -> TrialRow | None:
        """The row of the trial ``trial_id`` (None: no such trial)."""
        i = self.columns.position(trial_id)
        return None if i is None else self.trials[i]

    @property
    def running(self) -> tuple[TrialRow, ...]:
        return tuple(r for r in self.trials if r.state == "RUNNING")

    @property
    def stopped(self) -> int:
        """Trials that are over (terminated or errored)."""
        return self.counts.get("TERMINATED", 0) + self.counts.get("ERRORED", 0)

    @property
    def done(self) -> bool:
        return self.status in ("finished", "failed")

    @property
    def going(self) -> bool:
        """Not over, and neither stopped nor failing: what a stop button, a policy line or a
        time left may be shown for (a search not started yet goes, from its start)."""
        return self.status in ("created", "running")

    @property
    def policy_holds(self) -> bool:
        """The policy's own line is true of this moment: the search runs, or it ran to its
        deadline (a line read when it was stopped, failed or ran out of trials would speak
        of time left that it will not use)."""
        if not self.describe:
            return False
        reached = self.status == "finished" and self.stopped_at is None
        return self.going or (reached and self.time >= self.deadline)

    def status_text(self) -> str:
        """What happened, in the words every view uses (the dashboard's header, the magic's
        ``status``, the report): "running", "finished" (the deadline was reached, or nothing
        was left to run), "stopped by you at 14:02", "failed: <the one line>", each after
        "interrupted, resumed at 14:05; " for a search that went on after its kernel died."""
        if self.status in ("failing", "failed"):
            line = (self.error or "").strip().splitlines()
            text = f"failed: {_one_line(line[-1])}" if line else "failed"
        elif self.stopped_at is not None and self.status in ("stopping", "finished"):
            text = f"stopped by you at {self._at(self.stopped_at)}"
        else:
            text = {"created": "not started"}.get(self.status, self.status)
        if self.resumed_at is not None:
            text = f"interrupted, resumed at {self._at(self.resumed_at)}; {text}"
        return text

    def _at(self, t: float) -> str:
        """Clock time ``t`` as a person reads it: ``14:02`` live, ``42s`` on a virtual clock."""
        at = self.wall(t)
        return f"{t:.0f}s" if at is None else at.strftime("%H:%M")

    def wall(self, t: float) -> datetime | None:
        """The wall time of clock time ``t`` (None on a virtual clock)."""
        return None if self.started is None else self.started + timedelta(seconds=t)

    def clock(self, t: float) -> str:
        """Clock time ``t`` to the second: ``17:00:00`` live, ``900s`` on a virtual clock."""
        at = self.wall(t)
        return f"{t:.0f}s" if at is None else at.strftime("%H:%M:%S")

    def deadline_text(self) -> str:
        """The deadline: ``"17:00:00"`` live, ``"at 900s"`` on a virtual clock."""
        where = self.clock(self.deadline)
        return where if self.started is not None else f"at {where}"

    def left_text(self) -> str:
        """The time left, dated: ``"12m 05s left at 16:47:55"`` ("" once the search is not
        going). A notebook keeps what a cell printed: undated, "12m 05s left" would read
        as true tomorrow."""
        if not self.going:
            return ""
        return f"{format_duration(self.time_left)} left at {self.clock(self.time)}"

    def standing_text(self) -> str:
        """Where the search stands, in words that stay true when read later (the report, the
        dashboard's line once its page has lost the kernel): "finished · deadline 17:00:00",
        and for a search not over, dated: "as it stood at 16:47:55: running, 12m 05s before
        its deadline 17:00:00"."""
        deadline = self.clock(self.deadline)
        if self.done:
            return f"{self.status_text()} · deadline {deadline}"
        now = f"as it stood at {self.clock(self.time)}: {self.status_text()}"
        if not self.going:
            return f"{now} · deadline {deadline}"
        return f"{now}, {format_duration(self.time_left)} before its deadline {deadline}"

    def cluster_text(self) -> str:
        """The cluster now: ``"2 workers"``, ``"2 workers, 1 paused by Dask (memory)"``."""
        text = f"{self.workers} workers"
        if self.paused_workers:
            text += f", {len(self.paused_workers)} paused by Dask (memory)"
        return text

    def workers_text(self) -> str:
        """Workers per running trial, most first: ``"#3:2 #5:1"``."""
        rows = sorted(self.running, key=lambda r: (-r.workers, r.trial_id))
        return " ".join(f"#{r.trial_id}:{r.workers}" for r in rows) or "-"

    def best_text(self, digits: int = 4) -> str:
        if self.best is None:
            return f"best {self.metric} -"
        return f"best {self.metric} {_fmt(self.best.metric, digits)} (#{self.best.trial_id}, epoch {self.best.epoch})"

    def progress_line(self) -> str:
        """One line for a terminal or a status bar; the time left is dated ("1m 13s left at
        16:25:05"), for a notebook keeps the line that a cell printed."""
        c = self.counts
        head = "done" if self.done else self.left_text() or "ending"
        return (
            f"{head} | running {c.get('RUNNING', 0)} paused {c.get('PAUSED', 0)} "
            f"stopped {self.stopped} | workers {self.workers_text()} | {self.best_text()}"
        )

    def __str__(self) -> str:
        lines = [
            f"{self.policy} search, {self.status_text()} · deadline {self.deadline_text()}, "
            f"{self.cluster_text()}",
            self.progress_line(),
        ]
        if self.policy_holds and self.describe != self.policy:
            # its words ("12 min left: exploring") are of this moment while the search runs
            said = f"policy at {self.clock(self.time)}" if self.going else "policy"
            lines.append(f"{said}: {self.describe}")
        return "\n".join(lines)

    def frame(self):
        """The trials as a pandas DataFrame, one row per trial (index ``trial``): state,
        epochs, best and last metric, workers now and at most, start and stop times, the
        reason for its state, and the configuration as ``config_<name>`` columns."""
        import pandas as pd

        if not self.trials:
            return pd.DataFrame(columns=list(_COLUMNS)).set_index("trial")
        # from the columns: nothing built per trial (see :mod:`._rows`); text and the
        # configuration go as lists, so that pandas gives them the types it always has
        c = self.columns
        columns = {name: getattr(c, "trial_id" if name == "trial" else name) for name in _COLUMNS}
        for name in ("state", "reason"):
            columns[name] = columns[name].tolist()
        for k, values in c.config.items():
            columns[f"config_{k}"] = values.tolist()
        return pd.DataFrame(columns).set_index("trial")

    def allocation_series(self) -> tuple[list[float], dict[int, list[int]]]:
        """A common time grid and each trial's workers on it (for stacked step plots).

        The grid holds every time an allocation changed, plus the snapshot's time; a
        trial's value at grid time ``t`` holds until the next grid time. Each record fills
        only the stretch up to its trial's next record, so the cost is the size of the
        answer (trials × grid times), not records × grid times.
        """
        times = sorted({a.time for a in self.allocation} | {min(self.time, self.deadline)} | {0.0})
        index = {t: i for i, t in enumerate(times)}
        series: dict[int, list[int]] = {}
        since: dict[int, tuple[int, int]] = {}  # trial -> (grid index, workers) of its last record
        for a in self.allocation:
            row = series.setdefault(a.trial, [0] * len(times))
            i = index[a.time]
            if a.trial in since:
                start, workers = since[a.trial]
                row[start:i] = [workers] * (i - start)
            since[a.trial] = (i, a.workers)
        for trial, (start, workers) in since.items():
            series[trial][start:] = [workers] * (len(times) - start)
        return times, series


def _one_line(error: str) -> str:
    """An error's line as said to the user: a search that failed on purpose says why, with
    no class name before it."""
    return error.removeprefix("SearchFailed: ")


def _fmt(value: float, digits: int) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}g}"
