"""SEER: sequential halving on an elastic cluster, under a deadline and a cost budget.

Dunlap et al., "Elastic Hyperparameter Tuning on the Cloud" (SoCC 2021). Only the abstract is
public: maximise accuracy under a deadline and a money budget on an elastic cluster, test
many configurations early, keep the promising ones at varying degrees of parallelism so
they finish by the deadline, and avoid the waste of sublinear scaling. This module is our
reading of it.

Symbols: E = ``max_epochs``, r = ``min_epochs``, η = ``eta``; R = ⌊log_η(E/r)⌋ halvings;
n₀ configurations are tested (at most ``max_configs``); round i = 0 … R keeps
⌈n₀/η^i⌉ survivors and trains them to eᵢ = max(r, ⌈E·η^(i−R)⌉) epochs (e_R = E); kᵢ is
the workers each survivor of round i trains on; W = ``ctx.max_workers``; s(k) the scaling
curve; c the mean observed start-up; the budget is ``ctx.cost_budget`` worker-seconds,
billed as ∫ cluster size dt.

Rule (a plan, remade at every round and at every offer of round 0):
1. Estimate each round's work: a trial's next epochs take its own mean one-worker epoch
   time (the mean over all trials' first / later epochs when it has none).
2. Start every round at kᵢ = 1. A round of n trials, each of m epochs and dⱼ one-worker
   seconds, on k workers each runs L = ⌊W/k⌋ at a time. A trial starts on one worker and
   is resized at its first epoch's end, so it takes c' + dⱼ·f(k) with f(1) = 1,
   f(k) = 1/m + (1 − 1/m)/s(k) and c' = c, or 2c when k > 1. The round takes
   Tᵢ(k) = c' + max dⱼ·f(k) when n ≤ L, else Graham's list-scheduling bound
   (n·c' + Σdⱼ·f(k))/L + (1 − 1/L)·(c' + max dⱼ·f(k)); it costs Cᵢ(k) = k·(n·c' + Σdⱼ·f(k))
   (the workers a trial will grow to are held from its start). A later round's dⱼ are
   those of the members that would survive if the round ended now (the mean epoch time
   for configurations not yet tested).
3. While ΣTᵢ exceeds the time left, raise the kᵢ (to any larger k ≤ W) that saves the most
   time per extra worker-second, ΔT/ΔC, while ΣCᵢ stays within the budget left.
4. n₀ is the largest count whose plan fits both the time left and the budget left; while
   it would exceed the cost budget SEER tests fewer configurations (and also, our addition,
   when no parallelism meets the deadline — otherwise the last round would never run).
A round's survivors are its top ⌈n₀/η^(i+1)⌉ by their last reported metric; the rest are
retired. The cluster is sized to what the round still needs, kᵢ·min(trials left, ⌊W/kᵢ⌋),
so idle workers are not billed; running trials grow to kᵢ but never shrink (a resize
restarts them). A trial whose next epoch (as long as the longest seen), at the current
cluster size, would overrun the budget is stopped, and none is started or grown then. Within rounds after the first the kᵢ are re-planned at every epoch, so
that a straggler holding up its round gets more workers.

Defaults and why: ``max_configs = 100``, the benchmark's ``--configs``; the plan has no
other constant (start-ups and epoch times are observed, W and the budget come from the
context). Deviations: SEER's own predictor of per-epoch time and accuracy is not public;
ours is the measured mean, and ranking is plain successive halving.

Example:
    >>> from hypersched_nb.core.trial import Trial
    >>> from hypersched_nb.core.context import PolicyContext
    >>> seer = SEER(max_epochs=52, min_epochs=1, eta=4, max_configs=100)
    >>> seer.epochs  # round i trains its survivors to E·η^(i−R) epochs
    [4, 13, 52]
    >>> ctx = PolicyContext.for_test(workers=8)
    >>> trials = [Trial(i, {}) for i in range(10)]
    >>> for t in trials: seer.on_trial_add(t, ctx)
    >>> seer.choose_trial_to_run(PolicyContext.for_test(workers=8, trials=dict(enumerate(trials))))
    Trial(0, PENDING, epochs=0, workers=0, best=-inf)
    >>> seer.cluster_size(ctx)  # nothing measured yet: 100 configurations, one worker each
    8
"""

from __future__ import annotations

import math

from hypersched_nb.core.context import PolicyContext
from hypersched_nb.core.decisions import CONTINUE, Verdict
from hypersched_nb.core.events import Result
from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.core.policies._describe import count, duration, epochs, time_left, top_share
from hypersched_nb.core.policies._sample import Sample
from hypersched_nb.core.policies._seer_plan import Round, plan_rounds, round_epochs
from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError

__all__ = ["SEER"]

_OUTSIDER = Verdict.stop("not in SEER's current round")
_NOT_KEPT = Verdict.stop("not among the round's survivors")
_OVER_BUDGET = Verdict.stop("its next epoch would overrun the cost budget")


class SEER(Policy):
    name = "seer"
    elastic = True

    def __init__(
        self,
        *,
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        max_configs: int = 100,
    ):
        check_budget(max_epochs, min_epochs, eta)
        if max_configs < 1:
            raise ConfigError(f"`max_configs` is {max_configs}, but must be >= 1")
        self.max_epochs, self.min_epochs, self.eta = max_epochs, min_epochs, eta
        self.max_configs = max_configs
        self.epochs = round_epochs(max_epochs, min_epochs, eta)
        self.round = 0
        self.n0 = max_configs
        self.ks = [1] * len(self.epochs)
        self.finished = False
        self._members: list[int] = []  # this round's trials, best first after round 0
        self._done: set[int] = set()  # members that reached this round's epochs or ended
        self._spare: list[int] = []  # offered configurations round 0 did not want
        self._retire: set[int] = set()
        self._first = Sample()  # one-worker seconds of first epochs
        self._later = Sample()  # one-worker seconds of later epochs
        self._own: dict[int, Sample] = {}  # trial -> its later epochs' one-worker seconds
        self._startup = Sample()  # observed start-up seconds
        # what a retired trial is journaled with: the latest verdict's reason, which may be
        # another trial's, as the journals have always had it
        self._last_reason = ""

    # ------------------------------------------------------------------ trial hooks

    def on_trial_add(self, trial: Trial, ctx: PolicyContext) -> None:
        if self.round == 0 and not self.finished:
            self._replan(ctx, extra=1)
            if len(self._members) < self.n0:
                self._members.append(trial.trial_id)
                return
        self._spare.append(trial.trial_id)

    def on_trial_result(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        verdict = self._judge(trial, result, ctx)
        self._last_reason = verdict.reason
        return verdict

    def _judge(self, trial: Trial, result: Result, ctx: PolicyContext) -> Verdict:
        tid = trial.trial_id
        self._observe(result, ctx)
        if tid not in self._members or self.finished:
            return _OUTSIDER
        if result.epoch >= self.epochs[self.round]:
            self._done.add(tid)
            before = self.round
            self._maybe_advance(ctx, running=tid)
            if self.round == before:
                return Verdict.pause(
                    f"reached round {self.round}'s {self.epochs[self.round]} epochs"
                )
            if tid not in self._members:
                return _NOT_KEPT
            # a survivor goes straight on into the next round, budget permitting
        if ctx.billed + ctx.workers * self._worst_next(trial, ctx) > self._budget(ctx):
            self._done.add(tid)
            self.finished = len(self._done) >= len(self._members)
            return _OVER_BUDGET
        if self.round > 0:  # few trials: re-plan the parallelism at every epoch, for stragglers
            self._replan(ctx, keep_n0=True)
        return CONTINUE

    def on_trial_remove(self, trial: Trial, ctx: PolicyContext) -> None:
        self._ended(trial.trial_id, ctx)

    # ------------------------------------------------------------------ scheduling hooks

    def choose_trial_to_run(self, ctx: PolicyContext) -> Trial | None:
        self._maybe_advance(ctx)
        if self.finished:
            return None
        running = sum(1 for tid in self._members if tid in ctx.running)
        if running >= self._lanes(ctx):
            return None
        for tid in self._members:
            trial = ctx.pending.get(tid) or ctx.paused.get(tid)
            if trial is not None and tid not in self._done:
                if ctx.billed + ctx.workers * self._worst_next(trial, ctx) > self._budget(ctx):
                    return None
                return trial
        return None  # round 0 still short of n₀: the driver offers the next configuration

    def retire(self, ctx: PolicyContext) -> dict[int, str]:
        self._maybe_advance(ctx)
        waiting = sorted(tid for tid in self._retire if tid in ctx.paused or tid in ctx.pending)
        return dict.fromkeys(waiting, self._last_reason)

    def allocate(self, ctx: PolicyContext) -> dict[int, int] | None:
        self._maybe_advance(ctx)
        if self.finished:
            return None
        k, running = self.ks[self.round], ctx.running
        # grow to the plan, never shrink a running trial: a resize restarts it, and a target
        # set before a round ends applies at the epoch that starts the next round
        return {
            tid: max(k, running[tid].workers) for tid in self._members if tid in running
        } or None

    def cluster_size(self, ctx: PolicyContext) -> int:
        self._maybe_advance(ctx)
        if self.finished:
            return 0
        k = self.ks[self.round]
        left = len(self._members) - len(self._done)
        if self.round == 0 and (ctx.offers_left or self._spare):
            left += max(0, self.n0 - len(self._members))
        want = k * min(left, self._lanes(ctx))
        if ctx.cost_budget is not None:  # never grow past what the running epochs may bill
            worst = max(
                (self._worst_next(ctx.trials[t], ctx) for t in self._members if t in ctx.running),
                default=0.0,
            )
            if worst > 0:
                want = min(want, max(ctx.workers, int(ctx.budget_left // worst)))
        return want

    def describe(self, ctx: PolicyContext) -> str:
        """The round in progress and its plan: "round 2 of 3: training the best 4 to epoch
        13 on 2 workers each · 1 of 4 done · 12 min left"."""
        if self.finished:
            return "every round done: nothing more to train"
        i, rounds, members = self.round, len(self.epochs), len(self._members)
        target, k = self.epochs[i], self.ks[i]
        each = f" on {count(k, 'worker')} each" if k > 1 else ""
        if i == 0:
            n = f"up to {self.n0}" if ctx.offers_left or self._spare else str(self.n0)
            what = f"testing {n} configurations for {epochs(target)}{each}"
            what += f", the {top_share(self.eta)} go on" if rounds > 1 else ""
        else:
            what = f"training the best {members} to epoch {target}{each}"
        line = f"round {i + 1} of {rounds}: {what}"
        if members:
            line += f" · {len(self._done)} of {members} done"
        if ctx.cost_budget is not None:
            line += f" · {duration(ctx.budget_left)} of worker time left"
        return f"{line} · {time_left(ctx)}"

    # ------------------------------------------------------------------ rounds

    def _ended(self, tid: int, ctx: PolicyContext) -> None:
        if tid in self._members and not self.finished:
            self._done.add(tid)
            self._maybe_advance(ctx)

    def _maybe_advance(self, ctx: PolicyContext, running: int | None = None) -> None:
        """End the round once every member is done and round 0 expects no more offers.
        Called from every hook, so that the end of the offers (seen only in ``ctx``) ends
        round 0 at the next decision; it changes nothing when called again."""
        if self.finished or len(self._done) < len(self._members):
            return
        if self.round == 0 and len(self._members) < self.n0 and (ctx.offers_left or self._spare):
            return  # round 0 still takes configurations
        if self.round == 0:
            self.n0 = len(self._members)  # n₀ is what was tested
        self._advance(ctx, running)

    def _advance(self, ctx: PolicyContext, running: int | None = None) -> None:
        """Every member reached the round's epochs: keep the top ⌈n₀/η^(i+1)⌉ (n₀ re-planned)."""
        live = [
            t for t in self._members if t == running or ctx.trials[t].state is TrialState.PAUSED
        ]
        live.sort(key=lambda t: (-ctx.trials[t].last_score, t))
        self.round += 1
        if self.round >= len(self.epochs) or not live:
            self.finished = True
            self._retire.update(live)
            self._members = []
            return
        self._members, self._done = live[: self._keep(self.n0)], set()
        self._replan(ctx)
        self._retire.update(live[len(self._members) :])

    def _replan(self, ctx: PolicyContext, extra: int = 0, keep_n0: bool = False) -> None:
        """Choose n₀ and every remaining round's kᵢ for the time and the budget left: in
        round 0 n₀ only counts configurations to test; later it sets how many survive.
        With ``keep_n0`` only the kᵢ are remade (a straggler may get more workers)."""
        if not self._first.n:
            return  # nothing observed yet: n₀ = max_configs, one worker each
        workers, budget = ctx.max_workers or ctx.workers, self._budget(ctx) - ctx.billed
        startup = self._startup.mean()

        e, trials = self.epochs[self.round], ctx.trials
        todo = [  # per member: (one-worker seconds, epochs) to this round's end, or None
            None
            if t in self._done
            else (self._secs_to(t, trials[t].epochs, e), e - trials[t].epochs)
            for t in self._members
        ]
        leaders = sorted(self._members, key=lambda t: (-trials[t].last_score, t))
        lead = [self._secs(t, 2) for t in leaders]

        def plan(n0: int) -> tuple[list[int], bool]:
            rounds = self._rounds(n0, todo, lead)
            ks, t, c = plan_rounds(
                rounds,
                time_left=ctx.time_left,
                workers=workers,
                scaling=ctx.scaling,
                startup=startup,
                budget=budget,
            )
            return ks, t <= ctx.time_left and c <= budget

        if keep_n0:
            self.ks[self.round :] = plan(self.n0)[0]
            return
        if self.round == 0:
            lo = max(1, len(self._members))
            hi = max(lo, self.max_configs if ctx.offers_left else len(self._members) + extra)
        else:
            lo, hi = 1, self.n0
        if not plan(lo)[1]:
            hi = lo
        while lo < hi:  # the largest n₀ whose plan fits
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if plan(mid)[1] else (lo, mid - 1)
        self.n0 = lo
        if self.round == 0:
            while self._spare and len(self._members) < self.n0:  # offered earlier, wanted now
                self._members.append(self._spare.pop(0))
        else:
            del self._members[self._keep(self.n0) :]
        self.ks[self.round :] = plan(self.n0)[0]

    def _rounds(self, n0: int, todo: list, lead: list[float]) -> list[Round]:
        """The current round (``todo``: each member's work left, in member order) and every
        later one, estimated from ``lead``: the epoch seconds of the members that would
        survive if the round ended now (best first), then the mean."""
        e, i = self.epochs, self.round
        work = [w for w in (todo if i == 0 else todo[: self._keep(n0)]) if w is not None]
        cur = [secs for secs, _ in work]
        if i == 0:
            cur += [self._secs_to(None, 0, e[0])] * max(0, n0 - len(self._members))
        left = max((epochs for _, epochs in work), default=1)
        rounds = [(len(cur), sum(cur), max(cur, default=0.0), left)]
        later = self._later.mean(self._first.mean())
        for j in range(i + 1, len(e)):
            n, m = self._keep(n0, j), e[j] - e[j - 1]
            secs = lead[:n] + [later] * max(0, n - len(lead))
            rounds.append((n, m * sum(secs), m * max(secs), m))
        return rounds

    def _keep(self, n0: int, i: int | None = None) -> int:
        return math.ceil(n0 / self.eta ** (self.round if i is None else i))

    # ------------------------------------------------------------------ estimates

    def _observe(self, result: Result, ctx: PolicyContext) -> None:
        secs = result.seconds * ctx.scaling(result.workers)
        if result.epoch == 1:
            self._first.add(secs)
        else:
            self._later.add(secs)
            self._own.setdefault(result.trial_id, Sample()).add(secs)
        if result.startup > 0:
            self._startup.add(result.startup)

    def _secs(self, tid: int | None, epoch: int) -> float:
        """Estimated one-worker seconds of ``tid``'s epoch ``epoch`` (means: they add up)."""
        if epoch == 1:
            return self._first.mean()
        own = self._own.get(tid)
        return own.mean() if own is not None else self._later.mean(self._first.mean())

    def _secs_to(self, tid: int | None, trained: int, target: int) -> float:
        if trained >= target:
            return 0.0
        first = self._secs(tid, 1) if trained == 0 else 0.0
        return first + (target - max(trained, 1)) * self._secs(tid, 2)

    def _worst_next(self, trial: Trial, ctx: PolicyContext) -> float:
        """The longest the trial's next epoch may take by what was seen (start-up included
        when it starts or is resized): what the budget guard bills it for."""
        if trial.epochs == 0:
            secs = self._first.largest
        else:
            own = self._own.get(trial.trial_id)
            secs = own.largest if own is not None else max(self._later.largest, self._first.largest)
        k = self.ks[self.round]
        running = trial.state is TrialState.RUNNING
        restart = not running or trial.workers != k
        workers = k if running and restart else (trial.workers if running else 1)
        return (self._startup.largest if restart else 0.0) + secs / ctx.scaling(workers)

    def _lanes(self, ctx: PolicyContext) -> int:
        return max(1, (ctx.max_workers or ctx.workers) // self.ks[self.round])

    @staticmethod
    def _budget(ctx: PolicyContext) -> float:
        return math.inf if ctx.cost_budget is None else ctx.cost_budget
