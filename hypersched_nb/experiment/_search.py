"""A search once built: what it runs on, what it hears of its trials, and what it reads.

:class:`Search` is what every builder of :mod:`hypersched_nb.experiment._assembly` makes:
the observed runtime, the driver, the journal's writer, and :class:`Heard` (the sampler
and fail-fast, told of each trial as it pauses or ends). Its reads are made under the
session's gate by :class:`~hypersched_nb.experiment.experiment.Experiment`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypersched_nb.core.trial import Trial, TrialEnding
from hypersched_nb.errors import HyperschedError
from hypersched_nb.experiment._budget_check import below_one_epoch
from hypersched_nb.experiment._fail_fast import FailFast, SearchFailed
from hypersched_nb.experiment._observed import Observed
from hypersched_nb.experiment._records import RecordKind
from hypersched_nb.experiment._timeline import Timeline
from hypersched_nb.experiment.deadline import format_duration, resolve_deadline
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.journal import JournalWriter
from hypersched_nb.experiment.snapshot import Best, ExperimentSnapshot
from hypersched_nb.runtime.checkpoint import BestCheckpoint

__all__ = ["Heard", "Search"]


class Heard:
    """What the search hears of its trials as they pause or end: the sampler learns from
    each (:meth:`OptunaSource.tell`), and fail-fast watches the endings. Its answer to an
    ending is the reason to stop the search (None: go on); ``failing`` hears the failure
    the moment it is known (the session's status says it at once)."""

    def __init__(self, source, fail_fast: int | None, *, failing):
        self.source, self._fail_fast, self._failing = source, FailFast(fail_fast), failing
        self.failure: HyperschedError | None = None  # what stopped the search

    def over(self, trial: Trial, ending: TrialEnding) -> str | None:
        self.source.tell(trial, complete=ending is TrialEnding.COMPLETED)
        why = self._fail_fast.heard(trial, ending)
        if why is not None:
            self.failure = SearchFailed(why)
            self._failing(self.failure)  # said at once, not when the trials have ended
        return why

    def at_end(self) -> SearchFailed | None:
        """The search is over: whether it failed, every trial it ran having failed alike
        (:meth:`FailFast.at_end`)."""
        why = self._fail_fast.at_end()
        return None if why is None else SearchFailed(why)

    def paused(self, trial: Trial) -> None:
        self.source.tell(trial, complete=False)

    def search_over(self, never_started) -> None:
        """The search is over: the configurations it was offered but never started are
        told as failed, so that the sampler holds no trial still asked (it has no evidence
        of them, and a sampler ignores a failed trial)."""
        for trial in never_started:
            self.source.tell(trial, complete=False)


@dataclass(frozen=True, slots=True)
class Search:
    """What a search runs on, once built: the observed runtime, the driver, the journal's
    writer (None: not journaled) and what it hears of its trials."""

    observed: Observed
    driver: Driver
    writer: JournalWriter | None
    heard: Heard
    cost_budget: float | None
    user_events: list = field(default_factory=list)  # what the user did (deadline moves)
    timeline: Timeline = field(default_factory=Timeline)  # both, in order as they came

    def run(self) -> None:
        """The search's thread: the driver loop, then the failure that stopped it, if one
        did."""
        out = self.driver.run()
        heard = self.heard
        heard.search_over(list(self.driver.pending.values()))
        heard.failure = (
            heard.failure
            or heard.at_end()
            or below_one_epoch(
                self.cost_budget, self.driver.trials.values(), out.worker_seconds_billed
            )
        )
        if heard.failure is not None:
            raise heard.failure

    def ended(self, status: str, error: BaseException | None) -> None:
        """The journal's last line: how the search ended (then the journal is closed)."""
        if self.writer is None:
            return
        self.writer.end({
            "k": RecordKind.END, "t": self.driver.outcome.ended_at, "status": status,
            "error": None if error is None else repr(error),
        })  # fmt: skip

    def move_deadline(self, spec, session) -> None:
        """The user moves the deadline to ``spec`` (under the gate): a deadline already
        past means now, and nothing is undone; the move is an event of its own, journaled."""
        now, driver = session.clock.now(), self.driver
        new = resolve_deadline(spec, elapsed=now, current=driver.deadline, started=session.started)
        new = driver.deadline = max(new, now)
        when = "now" if new <= now else f"in {format_duration(new - now)}"
        event = {"time": now, "trial": None, "action": "DeadlineChanged",
                 "reason": f"deadline moved to {new:.0f}s ({when}) by the user"}  # fmt: skip
        self.user_events.append(event)
        if self.writer is not None:
            self.writer.write({"k": RecordKind.USER, **event})
        self.observed.version += 1

    # ------------------------------------------------------------------ reads (under the gate)

    def best(self) -> Best | None:
        out = self.driver.outcome
        if out.best_trial is None:
            return None
        trial = self.driver.trials[out.best_trial]
        epoch = trial.scores.index(trial.best_score) + 1
        return Best(trial.trial_id, dict(trial.config), trial.metrics[epoch - 1], epoch)

    def best_checkpoint(self, best: Best | None) -> BestCheckpoint | None:
        """Where the weights of ``best`` are, or None (a runtime that keeps none)."""
        find = getattr(self.observed.inner, "best_checkpoint", None)
        return None if best is None or find is None else find(at_most=best.metric)

    def load(self, trainable: type, info: BestCheckpoint):
        """``trainable`` set up as trial ``info.trial_id`` on the CPU, with its weights."""
        from hypersched_nb.runtime import TrainContext, load_checkpoint

        tid = info.trial_id
        model = trainable()
        ctx = TrainContext(trial_id=tid, seed=self.observed.inner.trial_seed(tid))
        model.setup(dict(self.driver.trials[tid].config), ctx)
        model.load_state_dict(load_checkpoint(info.url, info.sha256))
        return model

    def events(self) -> list[dict]:
        """Every decision and every act of the user, oldest first."""
        return list(self._ordered())

    def _ordered(self) -> list[dict]:
        return self.timeline.read(self.driver.outcome.journal, self.user_events)

    def snapshot(self, session, rows, *, policy, metric: str, mode: str, forecast, prior=None):
        """The frozen :class:`ExperimentSnapshot` of this search now (``prior``: the label
        of the past search it was given)."""
        d, obs = self.driver, self.observed
        now = d.outcome.ended_at if session.status == "finished" else session.clock.now()
        error = None
        if session.error is not None:
            error = f"{type(session.error).__name__}: {session.error}"
        # the policy's line read at this snapshot's moment: one reading of the clock for
        # every "left" it shows, and the deadline in force now (moved since its last turn)
        ctx = d.context()._replace(now=now, deadline=d.deadline)
        over = session.status in ("finished", "failed")
        trials, columns = rows.of(d.trials.values(), obs.peak)
        return ExperimentSnapshot(
            time=now, deadline=d.deadline, status=session.status, metric=metric, mode=mode,
            policy=getattr(policy, "name", type(policy).__name__),
            describe=policy.describe(ctx), workers=d.capacity,
            trials=trials, columns=columns, allocation=tuple(obs.allocation),
            capacity=tuple(obs.capacity), best=self.best(), events=tuple(self._ordered()),
            started=session.started, error=error, version=obs.version, forecast=forecast,
            stopped_at=session.stopped_at, resumed_at=session.resumed_at, prior=prior,
            paused_workers=() if over else obs.paused_workers,
        )  # fmt: skip

    def standing(self, session, source):
        """The search as it stands now, detached from its runtime (what a forecast
        simulates on from)."""
        from hypersched_nb.experiment import forecast as fc

        over = session.status in ("finished", "failed")
        now = self.driver.outcome.ended_at if over else session.clock.now()
        return fc.detach(self.driver, now=now, offers_left=fc.offers_left(source))
