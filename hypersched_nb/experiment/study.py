"""A search as an Optuna study (``exp.study``): Optuna's plots, importances and dashboard
work on it unchanged.

The study is built from one :class:`~hypersched_nb.experiment.snapshot.ExperimentSnapshot`,
so a live search's study is the search at one moment, never a trial half written. It lives
in Optuna's in-memory storage (or the storage given) and is made anew on every call: a
picture of the search, not a second record of it. Each trial of the search is the Optuna
trial of the same number, with its parameters and their distributions (see
:mod:`._study_space`) and its per-epoch metrics as intermediate values (step k: the k-th
result it reported). Its state says how it stands:

==================================  ===============================================
the search's trial                  the study's trial
==================================  ===============================================
trained to the end (``Complete``)   COMPLETE, valued at its best epoch's metric
stopped early (policy, deadline)    PRUNED, valued at its last metric (as Optuna's
                                    own ``tell(state=PRUNED)`` does)
paused                              PRUNED likewise: stopped by the policy for now
failed, or diverged (a metric NaN)  FAIL, as the search's own sampler is told
running                             RUNNING
offered, never started              WAITING
==================================  ===============================================

Each trial's ``user_attrs`` keep what Optuna has no field for: its state and reason here,
epochs, workers, starts, error and clock times; the study's keep the metric, the policy,
the deadline, the status and the settings every trial shared (``fixed``). Times are the
search's wall times; a replay's clock is trace seconds, counted from 1970-01-01 00:00.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import datetime, timedelta

from hypersched_nb.experiment._study_space import Space, inferred, of_space, param_value
from hypersched_nb.experiment.snapshot import ExperimentSnapshot, TrialRow

__all__ = ["OPTUNA_STATE", "VIRTUAL_ORIGIN", "build_study", "optuna_state", "space_of", "study_of"]

#: the Optuna state of a trial in each of the search's states (a TERMINATED trial that
#: completed is COMPLETE instead, one that diverged FAIL: see :func:`optuna_state`)
OPTUNA_STATE = {
    "PENDING": "WAITING",
    "RUNNING": "RUNNING",
    "PAUSED": "PRUNED",
    "TERMINATED": "PRUNED",
    "ERRORED": "FAIL",
}
VIRTUAL_ORIGIN = datetime(1970, 1, 1)  # clock 0 of a search with no wall time (a replay)
_OVER = ("Complete", "Stop", "Pause", "TrialFailed", "WorkerLost", "Halted")


def study_of(exp, space=None, *, storage=None):
    """The search ``exp`` (an Experiment: live, finished, opened or replayed) as an
    ``optuna.Study``; ``space`` is what it was asked to search, where known (see
    :func:`space_of`)."""
    snap = exp.statistics()
    return build_study(snap, space_of(exp, snap, space), name=_name(exp, snap), storage=storage)


def space_of(exp, snap: ExperimentSnapshot, space=None) -> Space:
    """Where the study's distributions come from, first found first: the distributions the
    search samples from (``exp.source``), the space it was asked (``space``), the space its
    journal records (an opened search), or else the configurations its trials were offered."""
    source = getattr(exp, "source", None)
    if isinstance(getattr(source, "distributions", None), Mapping):
        return Space(dict(source.distributions), dict(source.fixed))
    found = of_space(space)
    if found is None and exp.checkpoint_dir is not None:
        found = of_space(_journal_space(exp.checkpoint_dir))
    return found if found is not None else inferred(r.config for r in snap.trials)


def build_study(snap: ExperimentSnapshot, space: Space, *, name: str = "hypersched", storage=None):
    """The study of the snapshot ``snap``, its parameters' distributions from ``space``,
    in ``storage`` (None: a new in-memory storage)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # as the search's own sampler
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        direction="maximize" if snap.mode == "max" else "minimize",
        sampler=optuna.samplers.RandomSampler(seed=0),  # a study to read, not to sample from
    )
    for key, value in _study_attrs(snap, space).items():
        study.set_user_attr(key, value)
    completed = {e["trial"] for e in snap.events if e["action"] == "Complete"}
    ends = _ends(snap)
    origin = snap.started or VIRTUAL_ORIGIN
    study.add_trials(
        _trial(row, space, completed, ends.get(row.trial_id, snap.time), origin)
        for row in sorted(snap.trials, key=lambda r: r.trial_id)
    )
    return study


def optuna_state(row: TrialRow, completed: set[int]):
    """The Optuna state of ``row`` (see the module's table); ``completed`` holds the
    trials that trained to the end."""
    from optuna.trial import TrialState

    if row.state == "TERMINATED":
        if not all(math.isfinite(m) for m in row.metrics):  # stopped as it diverged
            return TrialState.FAIL
        if row.trial_id in completed:
            return TrialState.COMPLETE
    return TrialState[OPTUNA_STATE[row.state]]


# ---------------------------------------------------------------------------- one trial


def _trial(row: TrialRow, space: Space, completed: set[int], end: float, origin: datetime):
    from optuna.trial import TrialState, create_trial

    state = optuna_state(row, completed)
    steps = {k: m for k, m in enumerate(row.metrics, 1) if math.isfinite(m)}
    value = None
    if state is TrialState.COMPLETE:
        value = row.best
    elif state is TrialState.PRUNED and row.metrics and math.isfinite(row.metrics[-1]):
        value = row.metrics[-1]
    params, dists = {}, {}
    for name, dist in space.distributions.items():
        if name in row.config:
            params[name] = _param(dist, row.config[name])
            dists[name] = dist
    trial = create_trial(
        state=state, value=value, params=params, distributions=dists,
        intermediate_values=steps, user_attrs=_trial_attrs(row),
    )  # fmt: skip
    if state is not TrialState.WAITING:
        start = row.started_at if row.started_at is not None else end
        trial.datetime_start = origin + timedelta(seconds=start)
        if state.is_finished():
            trial.datetime_complete = origin + timedelta(seconds=max(start, end))
    return trial


def _param(dist, value):
    """``value`` as the parameter of a trial with distribution ``dist``."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    if isinstance(dist, FloatDistribution):
        return float(value)
    if isinstance(dist, CategoricalDistribution) and value in dist.choices:
        return value  # a choice as the space gave it
    return param_value(value)


def _trial_attrs(row: TrialRow) -> dict:
    attrs = {
        "hypersched_trial": row.trial_id, "state": row.state, "reason": row.reason,
        "epochs": row.epochs, "peak_workers": row.peak_workers, "starts": row.starts,
        "started_at": row.started_at, "stopped_at": row.stopped_at,
    }  # fmt: skip
    if row.error:
        attrs["error"] = row.error
    return attrs


def _ends(snap: ExperimentSnapshot) -> dict[int, float]:
    """When each trial last stopped running (stopped, completed, paused, failed, lost)."""
    ends: dict[int, float] = {}
    for e in snap.events:
        if e["trial"] is not None and e["action"] in _OVER:
            ends[e["trial"]] = e["time"]
    for row in snap.trials:
        if row.stopped_at is not None:
            ends[row.trial_id] = row.stopped_at
    return ends


def _study_attrs(snap: ExperimentSnapshot, space: Space) -> dict:
    return {
        "metric": snap.metric, "mode": snap.mode, "policy": snap.policy,
        "status": snap.status, "deadline": snap.deadline, "time": snap.time,
        "workers": max([snap.workers, *(n for _, n in snap.capacity)]),
        "started": None if snap.started is None else snap.started.isoformat(),
        "fixed": {k: param_value(v) for k, v in space.fixed.items()},
    }  # fmt: skip


def _name(exp, snap: ExperimentSnapshot) -> str:
    folder = exp.checkpoint_dir
    where = os.path.basename(os.fspath(folder).rstrip("/")) if folder is not None else "replay"
    return f"{snap.policy} {where}"


def _journal_space(folder):
    """The space the journal in ``folder`` records (None: no journal, or none recorded)."""
    from hypersched_nb.experiment.journal import JournalError, read_journal
    from hypersched_nb.experiment.space import space_from_record

    try:
        record = read_journal(folder).settings.get("space")
    except JournalError:
        return None
    return None if record is None else space_from_record(record)
