"""A past search of the same model, given to a new one (``prior=``).

Model development is a series of searches of one model on one dataset; a past one already
answers what the default policy otherwise spends its first wave finding out (whether epoch 1
ranks like the later epochs; how long an epoch and a start-up take). :func:`resolve_prior`
reads a past search from what the user has: a search's folder (its journal), an
``Experiment``, or a recorded trace (a CSV with its sidecar, a trace's name, a loaded
:class:`~hypersched_nb.sim.trace.Trace`), and checks it against the new search: a different
metric or mode, or a space that shares no parameter, is refused in one line; a space that
differs in part is used for what it shares, and the label says so.

A :class:`Prior` holds the past search's curves as a trace (its parameters restricted to the
ones shared), for the forecast, and :meth:`Prior.evidence` turns them into what the policy
reads (:class:`~hypersched_nb.core.policies.PriorEvidence`: only numbers from the curves and
timings, never a name). A journal keeps the label and that evidence (:meth:`Prior.to_record`),
so a resumed or reopened search knows what its policy was told.

Example:
    >>> from hypersched_nb.sim.trace import load_trace, split_halves
    >>> past, new = split_halves(load_trace("digits-cnn"), seed=0)
    >>> prior = resolve_prior(past, space=[new.config(i) for i in new.ids], metric="val_acc",
    ...                       mode="max")
    >>> prior.label, prior.evidence(min_epochs=1, eta=4, max_epochs=30).verdict(z=1.645, floor=0.5)
    ("trace 'digits-cnn[past 0]'", PriorWord.TRUST)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from hypersched_nb.core.policies import PriorEvidence
from hypersched_nb.core.policies._rungs import milestones
from hypersched_nb.core.policies._trust import keep_agreement
from hypersched_nb.errors import ConfigError
from hypersched_nb.sim.trace import TRACE_KEY, Trace

__all__ = ["Prior", "newest_search", "resolve_prior"]


@dataclass(frozen=True, slots=True)
class Prior:
    """A past search, as a new one uses it: its curves (``trace``, parameters restricted to
    ``shared``; None when read back from a journal, which keeps only what the policy
    learnt), a ``label`` for display, the parameters it shares with this search's space and
    those it does not, where it was read from (``source``: a folder, a file or a trace
    name, when one) and, read back from a journal, the evidence the policy was given."""

    trace: Trace | None
    label: str
    shared: tuple[str, ...] = ()
    unshared: tuple[str, ...] = ()
    source: str | None = None
    learnt: PriorEvidence | None = None

    def evidence(self, *, min_epochs: int, eta: float, max_epochs: int) -> PriorEvidence:
        """What the policy reads: the agreement of the search's two lowest rungs over the
        past curves, with its uncertainty, and the past timings."""
        if self.trace is None:
            if self.learnt is None:
                raise ConfigError(f"the prior {self.label} has neither curves nor evidence")
            return self.learnt
        rungs = milestones(max_epochs, min_epochs, eta)
        return _evidence(self.trace, self._display(), rungs, eta, max_epochs)

    def _display(self) -> str:
        """The label, with the parameters it does not share where the spaces differ."""
        if not self.unshared:
            return self.label
        return f"{self.label} (sharing {', '.join(self.shared)}; not {', '.join(self.unshared)})"

    def to_record(self, evidence: PriorEvidence) -> dict:
        """As a journal's first line keeps it: the label, the parameters, the source and
        what the policy was told (``evidence``)."""
        return {"label": self.label, "shared": list(self.shared),
                "unshared": list(self.unshared), "source": self.source,
                "evidence": evidence.to_record()}  # fmt: skip

    @classmethod
    def from_record(cls, record: Mapping) -> Prior:
        """The prior a journal's first line kept (no curves: the evidence the policy read)."""
        return cls(
            None, record["label"], tuple(record["shared"]), tuple(record["unshared"]),
            record.get("source"), PriorEvidence.from_record(record["evidence"]),
        )  # fmt: skip


def resolve_prior(value, *, space, metric: str, mode: str) -> Prior | None:
    """The :class:`Prior` ``value`` names (see the module docstring), checked against this
    search's ``space``, ``metric`` and ``mode``; None for None; a Prior as it is."""
    if value is None or isinstance(value, Prior):
        return value
    trace, label, source, (p_metric, p_mode) = _read(value)
    if p_mode != mode or (p_metric not in (None, "metric") and p_metric != metric):
        raise ConfigError(
            f"`prior` is {label}, a search that {_goal(p_metric, p_mode)}, but this one "
            f"{_goal(metric, mode)}: give a past search of the same metric and mode"
        )
    theirs = sorted({k for c in trace.params.values() for k in c if k != TRACE_KEY})
    ours = _names(space)
    shared = theirs if ours is None else [k for k in theirs if k in ours]
    if not shared:
        raise ConfigError(
            f"`prior` is {label}, whose space ({', '.join(theirs) or 'no parameter'}) shares "
            f"no parameter with this search's ({', '.join(sorted(ours or ()))}): give a past "
            "search of the same model"
        )
    unshared = tuple(k for k in theirs if k not in shared)
    keep = set(shared)
    params = {i: {k: v for k, v in c.items() if k in keep} for i, c in trace.params.items()}
    return Prior(replace(trace, params=params), label, tuple(shared), unshared, source)


def _goal(metric, mode) -> str:
    verb = "maximises" if mode == "max" else "minimises"
    return f"{verb} {metric}" if metric not in (None, "metric") else f"{verb} its metric"


def _names(space) -> set[str] | None:
    """The parameter names of a search's space (None: an iterator, not known ahead)."""
    if isinstance(space, Mapping):
        return set(space)
    if isinstance(space, (list, tuple)):
        return {k for c in space if isinstance(c, Mapping) for k in c if k != TRACE_KEY}
    return None


def _read(value) -> tuple[Trace, str, str | None, tuple[str | None, str]]:
    """(the past curves, a label, the source, (metric, mode)) of what ``value`` names."""
    from hypersched_nb.sim.trace import load_trace

    if isinstance(value, Trace):
        return value, f"trace {value.name!r}", None, (value.metric_name, value.mode)
    if hasattr(value, "statistics") and hasattr(value, "policy"):  # an Experiment
        folder = value.checkpoint_dir
        label = f"search {os.fspath(folder)!r}" if folder else "the search given"
        return (
            _search_trace(value, label),
            label,
            folder and os.fspath(folder),
            (value.metric, value.mode),
        )
    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        if path.is_dir() or path.name.endswith(".jsonl"):
            from hypersched_nb.experiment.experiment import Experiment

            exp = Experiment.open(path)
            label = f"search {os.fspath(value)!r}"
            return _search_trace(exp, label), label, os.fspath(value), (exp.metric, exp.mode)
        trace = load_trace(value)
        return trace, f"trace {trace.name!r}", os.fspath(value), (trace.metric_name, trace.mode)
    raise ConfigError(
        f"`prior` is {value!r}, but must be a search's folder, an Experiment, a trace (its "
        "CSV, its name or a loaded Trace), or None"
    )


def _search_trace(exp, label: str) -> Trace:
    """A search's curves as a trace: each trial's metrics, its epochs timed at its mean
    (training seconds over epochs), its configuration; start-ups at their median."""
    driver = exp._driver
    trials = [] if driver is None else [t for t in driver.trials.values() if t.metrics]
    if not trials:
        raise ConfigError(f"`prior` is {label}, which has no results yet: give one that ran")
    metrics = {t.trial_id: np.asarray(t.metrics, dtype=float) for t in trials}
    seconds = {t.trial_id: np.full(len(t.metrics), t.train_seconds / len(t.metrics)) for t in trials}  # fmt: skip
    startups = list(driver.startups)
    return Trace(
        name=label, ids=tuple(sorted(metrics)), metrics=metrics, seconds=seconds,
        params={t.trial_id: dict(t.config) for t in trials}, metric_name=exp.metric,
        mode=exp.mode, startup_seconds=float(np.median(startups)) if startups else 0.0,
    )  # fmt: skip


def _evidence(
    trace: Trace, label: str, rungs: list[float], eta: float, max_epochs: int
) -> PriorEvidence:
    """The agreement of the two lowest rungs over ``trace``'s curves (and among the
    configurations the lowest keeps), and its median first and later epoch seconds."""
    firsts = [float(s[0]) for s in trace.seconds.values() if len(s)]
    later = [float(x) for s in trace.seconds.values() for x in s[1:]]
    timings = {
        "first_seconds": float(np.median(firsts)) if firsts else None,
        "epoch_seconds": float(np.median(later)) if later else None,
        "startup_seconds": float(trace.startup_seconds),
    }
    if len(rungs) < 2:
        return PriorEvidence(label=label, low=rungs[0], high=rungs[0], **timings)
    low, high = _pairs(trace, rungs[0], rungs[1])
    auc, kept, paused = keep_agreement(low, high, eta)
    final = {}
    for epoch in (max_epochs, *reversed(rungs[2:])):  # R (or the curves' last), rungs down
        end = min(math.ceil(epoch), trace.longest)
        a, b = _pairs(trace, rungs[0], end) if end > rungs[1] else ([], [])
        if len(a) >= _FINAL_PAIRS:
            f_auc, f_kept, f_paused = keep_agreement(a, b, eta)
            final = dict(
                final=float(end), final_auc=f_auc, final_kept=f_kept, final_paused=f_paused
            )
            break
    cut = sorted(low)[-max(1, len(low) // math.ceil(eta)) :] if low else []
    top = [(a, b) for a, b in zip(low, high, strict=True) if cut and a >= cut[0]]
    s_auc, s_kept, s_paused = keep_agreement([a for a, _ in top], [b for _, b in top], eta)
    return PriorEvidence(
        label=label, low=rungs[0], high=rungs[1], auc=auc, kept=kept, paused=paused,
        survivor_auc=s_auc if s_kept and s_paused else None, survivor_kept=s_kept,
        survivor_paused=s_paused, **final, **timings,
    )  # fmt: skip


#: the curves that must reach an epoch for it to tell whether epoch r's verdicts held there
_FINAL_PAIRS = 8


def _pairs(trace: Trace, low: float, high: float) -> tuple[list[float], list[float]]:
    """The values (higher better) at epochs ``low`` and ``high`` of the curves with both."""
    sign = 1.0 if trace.mode == "max" else -1.0
    a, b = [], []
    for curve in trace.metrics.values():
        x, y = _at(curve, low), _at(curve, high)
        if math.isfinite(x) and math.isfinite(y):
            a.append(sign * x)
            b.append(sign * y)
    return a, b


def _at(curve, milestone: float) -> float:
    """A curve's value at ``milestone`` (its report there), NaN where it ended before."""
    i = math.ceil(milestone) - 1
    return float(curve[i]) if i < len(curve) else math.nan


def newest_search(folder, *, trainable: str | None) -> Path | None:
    """The newest search (by its journal's start) under ``folder`` that trained
    ``trainable`` (its import path; None: any), or None."""
    from hypersched_nb.experiment.journal import JournalError, read_journal

    found = []
    for journal in Path(folder).glob("*/journal.jsonl"):
        try:
            j = read_journal(journal)
        except JournalError:
            continue
        if trainable is None or j.settings.get("trainable") == trainable:
            found.append((j.started, journal.parent))
    return max(found)[1] if found else None
