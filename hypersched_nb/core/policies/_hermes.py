"""Hermes: preemptive GPU time-sharing that runs the fastest-converging trials first.

Only the abstract of Hermes is public: containers time-share GPUs, a scheduler ranks jobs by
convergence speed and suspends or resumes them keeping their progress, and faster-converging
configurations get priority; it reports up to 4.04× shorter tuning than FIFO, round-robin and
SLAQ, most when few configurations are good. This module is our reading of it.

Symbols: G = ``ctx.workers`` (run at most G trials at once, one worker each); the slice is
``slice_epochs`` epochs (a trial can only be preempted at an epoch boundary); y₁ is a
trial's first reported metric and y* its best one so far, as scores (higher is better, so
a loss enters as −loss); g is the worker-seconds it has trained (start-ups not counted).

Rule: the convergence speed of a trial is

    v = (y* − y₁) / max(|y₁|, ``norm_floor``) / g

its improvement since its first report, normalised by that first value, per GPU-second.
The first report is the baseline, so a new trial trains its first epoch and then one slice
before it is ranked (1 + ``slice_epochs`` epochs; until then it cannot be preempted). At
the end of each slice a ranked trial is paused when it is no longer among the top G of all
live trials and a better-ranked one waits; unranked trials rank above every ranked one,
oldest first, and configurations still to be offered count as unranked ones waiting. A
free worker goes to the oldest unranked trial, else the best-ranked paused one.

Defaults and why: ``slice_epochs = 1``, the finest preemption the driver allows (Hermes
preempts at iteration granularity; our iteration is an epoch); ``norm_floor = 1e-9``, only
there to keep a first value of exactly 0 from dividing by zero. Deviations: the abstract
does not say how a new job is ranked; we give it one slice, as the brief reads it, and
rank the ones waiting above the ranked ones (so all offered configurations are probed
before the best are resumed); the best value so far, not the last, measures improvement,
so that noise on one epoch does not reorder trials.

Example:
    >>> from hypersched_nb.core.trial import Trial, TrialState
    >>> from hypersched_nb.core.events import Result
    >>> from hypersched_nb.core.context import PolicyContext
    >>> hermes = Hermes()
    >>> fast, slow = Trial(0, {}), Trial(1, {})
    >>> for t, curve in ((fast, [0.2, 0.6]), (slow, [0.4, 0.42])):
    ...     t.state, t.metrics, t.scores = TrialState.RUNNING, curve, curve
    ...     t.results_since_start, t.epochs = 2, 2
    >>> ctx = PolicyContext.for_test(trials={0: fast, 1: slow}, workers=2, offers_left=False)
    >>> [hermes.on_trial_result(t, Result(t.trial_id, 2, t.metrics[-1], 20.0, 20.0, 1), ctx)
    ...  for t in (fast, slow)] == [CONTINUE, CONTINUE]
    True
    >>> round(hermes.speed(fast.trial_id), 4), round(hermes.speed(slow.trial_id), 4)
    (0.1, 0.0025)
"""

from __future__ import annotations

import bisect

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy
from hypersched_nb.core.policies._describe import epochs, trial_ids
from hypersched_nb.core.trial import Trial
from hypersched_nb.errors import ConfigError

__all__ = ["Hermes", "convergence_speed"]


def convergence_speed(first: float, best: float, gpu_seconds: float, norm_floor: float) -> float:
    """(best − first) / max(|first|, floor) per GPU-second, scores higher-is-better.

    >>> convergence_speed(0.25, 0.75, 20.0, 1e-9)  # tripled its first value in 20 s
    0.1
    """
    return (best - first) / max(abs(first), norm_floor) / max(gpu_seconds, norm_floor)


class Hermes(Policy):
    name = "hermes"

    def __init__(self, *, slice_epochs: int = 1, norm_floor: float = 1e-9):
        if slice_epochs < 1:
            raise ConfigError(f"`slice_epochs` is {slice_epochs}, but must be >= 1")
        if not norm_floor > 0:
            raise ConfigError(f"`norm_floor` is {norm_floor}, but must be > 0")
        self.slice_epochs = slice_epochs
        self.norm_floor = norm_floor
        self._gpu: dict[int, float] = {}  # trial -> worker-seconds trained
        self._speed: dict[int, float] = {}  # ranked trial -> convergence speed
        self._order: list[tuple[float, int]] = []  # (speed, -id) of every ranked live trial, sorted
        self._probing: set[int] = set()  # trials that reported but are not ranked yet

    def speed(self, trial_id: int) -> float | None:
        """The trial's convergence speed, or None while it is unranked."""
        return self._speed.get(trial_id)

    # ------------------------------------------------------------------ hooks

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid = trial.trial_id
        self._gpu[tid] = self._gpu.get(tid, 0.0) + result.seconds * result.workers
        scores = trial.scores
        if len(scores) < 1 + self.slice_epochs:
            self._probing.add(tid)
            return CONTINUE  # still on its first slice: not ranked yet
        speed = convergence_speed(scores[0], max(scores), self._gpu[tid], self.norm_floor)
        self._rank(tid, speed)
        if trial.results_since_start % self.slice_epochs and len(scores) > 1 + self.slice_epochs:
            return CONTINUE  # mid-slice (the first ranking ends the probe slice)
        if self._outranked(tid, (speed, -tid), ctx):
            return Verdict.pause(f"speed {speed:.3g}/s no longer in the top {ctx.workers}")
        return CONTINUE

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._forget(trial.trial_id)

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        for trial in ctx.pending.values():
            return trial
        lost = sorted(tid for tid in self._probing if tid in ctx.paused)
        if lost:
            return ctx.paused[lost[0]]  # unranked: its worker was lost during its first slice
        if ctx.offers_left:
            return None  # the driver offers the next configuration
        for _, neg in reversed(self._order):  # best first; at most G of them are running
            trial = ctx.paused.get(-neg)
            if trial is not None:
                return trial
        return None

    def describe(self, ctx: PolicyContext) -> str:
        """Who is ahead in the queue: "workers go to the trials improving fastest, now #9,
        #1, #6 … · each new one first trains 2 epochs to show its pace"."""
        fastest = [-neg for _, neg in reversed(self._order[-4:])]  # "…" past three
        now = f", now {trial_ids(fastest)}" if fastest else ""
        return (
            f"workers go to the trials improving fastest{now} · "
            f"each new one first trains {epochs(1 + self.slice_epochs)} to show its pace"
        )

    # ------------------------------------------------------------------ helpers

    def _outranked(self, tid: int, key: tuple[float, int], ctx: PolicyContext) -> bool:
        """At least G live trials rank above ``tid`` and one of them waits. Unranked trials
        rank above ranked ones; configurations still to be offered count as G of them."""
        ranked_above = len(self._order) - bisect.bisect_right(self._order, key)
        running_above = unranked_running = 0
        for other in ctx.running:
            if other != tid:
                speed = self._speed.get(other)
                if speed is None:
                    unranked_running += 1
                elif (speed, -other) > key:
                    running_above += 1
        new_waiting = len(ctx.pending) + sum(1 for t in self._probing if t in ctx.paused)
        waits = ctx.offers_left or new_waiting > 0 or ranked_above > running_above
        ahead = (
            ranked_above + unranked_running + new_waiting + (ctx.workers if ctx.offers_left else 0)
        )
        return waits and ahead >= ctx.workers

    def _rank(self, tid: int, speed: float) -> None:
        self._unrank(tid)
        self._speed[tid] = speed
        bisect.insort(self._order, (speed, -tid))

    def _unrank(self, tid: int) -> None:
        self._probing.discard(tid)
        old = self._speed.pop(tid, None)
        if old is not None:
            del self._order[bisect.bisect_left(self._order, (old, -tid))]

    def _forget(self, tid: int) -> None:
        self._gpu.pop(tid, None)
        self._unrank(tid)
