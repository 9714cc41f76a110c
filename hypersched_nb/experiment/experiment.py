"""The user's object: one deadline-aware search that runs in the background of a kernel.

``Experiment`` builds a policy, a configuration source (an Optuna sampler by ask-and-tell)
and a session (a Dask cluster, or the trace simulator through :meth:`Experiment.replay`),
then runs the one driver loop on a thread of its own, so that a notebook stays free for the
dashboard, the deadline slider and the magic. Everything a view shows comes from
:meth:`Experiment.statistics`, a frozen :class:`ExperimentSnapshot`.

Threads: observers read the driver's records only between its turns (see ``_observed``).
A new deadline is written where the driver reads it on every turn; on a wall clock the
driver waits in slices of ``poll`` seconds, so that a deadline moved closer (or a stop)
takes effect within one slice. Where the search runs, its thread and its status are the
session's (see ``_session``).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from datetime import datetime

from hypersched_nb.core.policies import EARLY_SIGNALS, REGISTRY, Policy, check_budget, create
from hypersched_nb.core.scaling import LINEAR, ScalingCurve
from hypersched_nb.core.trial import Trial, TrialEnding
from hypersched_nb.errors import ConfigError, HyperschedError
from hypersched_nb.experiment._budget_check import below_one_epoch
from hypersched_nb.experiment._fail_fast import FailFast, SearchFailed
from hypersched_nb.experiment._inputs import Inputs
from hypersched_nb.experiment._observed import Observed
from hypersched_nb.experiment._rows import Rows
from hypersched_nb.experiment._session import Launch, Session
from hypersched_nb.experiment.deadline import format_duration, parse_deadline, resolve_deadline
from hypersched_nb.experiment.driver import Driver, Outcome
from hypersched_nb.experiment.journal import JournalWriter, check_unused, journal_url
from hypersched_nb.experiment.snapshot import Best, ExperimentSnapshot
from hypersched_nb.experiment.space import config_source, space_record
from hypersched_nb.runtime.checkpoint import BestCheckpoint

__all__ = ["Experiment"]


class Experiment:
    """A deadline-aware hyperparameter search (see the README's quick start).

    ``trainable`` is a :class:`~hypersched_nb.Trainable` subclass; ``space`` maps parameter
    names to Optuna distributions (a list means a categorical choice, any other plain value
    is fixed) or is a list of configurations offered in order (None: the trainable's
    ``space()``). Every other setting is a keyword: ``deadline`` is a budget (``"20m"``), a
    wall-clock time (``"17:00"``) or seconds; ``policy`` a registered name or a ready-made
    :class:`~hypersched_nb.core.policies.Policy`, and ``policy_params`` a named policy's
    own settings (``{"pause": False}``); ``early_signal`` what you know of your curves'
    first epochs: ``"trust"`` them (a trial that starts badly stays bad: judged from epoch
    1, as ASHA), ``"doubt"`` them (judged only once epoch 1 has shown it predicts later
    epochs) or ``"auto"`` (judged from epoch 1 for now while one trial in η tests it, as
    long as the test could still act; a policy that never judges by first epochs ignores
    it); ``cluster`` a number of local workers, a scheduler address or a
    ``distributed.Client`` (None: one worker per GPU, or CPU slots); ``sampler`` ``"tpe"``,
    ``"random"``, ``"qmc"`` or an Optuna sampler; ``configs`` bounds
    how many configurations are offered. ``fail_fast``: when the first this-many trials to
    end all failed with one error, the search stops and :meth:`wait` raises it (None: never).
    An elastic policy (``"seer"``) sizes the cluster itself, from ``cluster`` up to
    ``max_workers``, and spends at most ``cost_budget`` worker-seconds (plus one epoch of one
    worker), billed for the workers the cluster has, from when they arrive to when they are
    retired.
    """

    # (runtime, clock) of a search that runs on them instead of a Dask cluster: set by _on()
    _given: tuple | None = None
    _forecast = None  # the last forecast asked (a ForecastMade): see last_forecast

    def __init__(
        self,
        trainable,
        space=None,
        *,
        metric: str = "val_acc",
        mode: str = "max",
        deadline="20m",
        max_epochs: int = 100,
        min_epochs: int = 1,
        eta: float = 4,
        policy: str | Policy = "hypersched",
        policy_params: Mapping | None = None,
        early_signal: str = "auto",
        cluster=None,
        sampler="tpe",
        seed: int = 0,
        checkpoint_dir=None,
        scaling=None,
        configs: int | None = None,
        target: float | None = None,
        poll: float = 0.25,
        fail_fast: int | None = 3,
        max_workers: int | None = None,
        cost_budget: float | None = None,
    ):
        live = self._given is None
        _check(trainable, live, metric=metric, mode=mode, max_epochs=max_epochs,
               min_epochs=min_epochs, eta=eta, seed=seed, poll=poll, configs=configs,
               target=target, checkpoint_dir=checkpoint_dir, fail_fast=fail_fast,
               max_workers=max_workers, cost_budget=cost_budget,
               early_signal=early_signal)  # fmt: skip
        check_budget(max_epochs, min_epochs, eta)
        _check_cluster(cluster)
        if space is None:
            space = getattr(trainable, "space", lambda: None)()
            if space is None:
                raise ConfigError(
                    "`space` is None and the trainable has no space(); give a dict of Optuna distributions"
                )
        _check_space(space)
        self._deadline_spec = parse_deadline(deadline)
        if self._deadline_spec.kind == "shift" and not self._deadline_spec.seconds > 0:
            raise ConfigError(
                f"`deadline` is {deadline!r}, which is before the search starts; give a budget "
                "such as '20m'"
            )
        if live and self._deadline_spec.kind == "at":  # a time already past: said now
            resolve_deadline(self._deadline_spec, elapsed=0.0, current=None, started=datetime.now())
        self._asked = {"space": space, "policy": policy, "policy_params": policy_params,
                       "sampler": sampler, "configs": configs, "scaling": scaling}  # fmt: skip
        self.trainable, self.metric, self.mode = trainable, metric, mode
        self.max_epochs, self.min_epochs, self.eta, self.seed = max_epochs, min_epochs, eta, seed
        self.cluster, self.checkpoint_dir, self.target = cluster, checkpoint_dir, target
        self.scaling = None if scaling is None else ScalingCurve.parse(scaling)
        self.early_signal = early_signal
        self.policy = self._policy(policy, policy_params)
        _check_elastic(self.policy, cluster, max_workers=max_workers, cost_budget=cost_budget)
        self.max_workers, self.cost_budget = max_workers, cost_budget
        self.source = config_source(
            space, sampler=sampler, seed=seed, mode=mode, max_configs=configs
        )
        self._session = Session(poll=poll) if live else Session(*self._given)
        self._driver: Driver | None = None
        self._rows = Rows()  # the snapshot's rows, each rebuilt only when its trial changes
        self._observed: Observed | None = None
        self._journal: JournalWriter | None = None
        self._resumed: tuple | None = None  # (journal, new deadline): set by resume()
        self._fail_fast = FailFast(fail_fast)
        self._failure: HyperschedError | None = None  # what stopped the search, raised by wait()
        self._user_events: list[dict] = []

    @classmethod
    def _on(cls, runtime, clock, space, **settings) -> Experiment:
        """A search that runs on ``runtime`` and ``clock`` instead of a Dask cluster: a
        replayed trace, or a test's own runtime. ``settings`` are the constructor's."""
        exp = cls.__new__(cls)
        exp._given = (runtime, clock)
        exp.__init__(None, space, **settings)
        return exp

    def _policy(self, policy, params: Mapping | None) -> Policy:
        if isinstance(policy, Policy):
            if params is not None:
                raise ConfigError(
                    "`policy_params` is given with a ready-made policy; pass its settings to its constructor"
                )
            if self.early_signal != "auto":
                raise ConfigError(
                    f"`early_signal` is {self.early_signal!r} with a ready-made policy; pass it "
                    "to its constructor"
                )
            return policy
        if policy not in REGISTRY:
            raise ConfigError(f"`policy` is {policy!r}, but must be one of {', '.join(REGISTRY)}")
        if params is not None and not isinstance(params, Mapping):
            raise ConfigError(
                f"`policy_params` is {params!r}, but must be a dict of the policy's own settings"
            )
        try:
            return create(
                policy,
                max_epochs=self.max_epochs,
                min_epochs=self.min_epochs,
                eta=self.eta,
                seed=self.seed,
                early_signal=self.early_signal,
                **(params or {}),
            )
        except HyperschedError:
            raise
        except (TypeError, ValueError) as exc:  # a setting of the wrong type, found inside
            if not params:
                raise
            why = " ".join(str(exc).split())
            raise ConfigError(
                f"`policy_params` is {params!r}, but policy {policy!r} cannot take it ({why})"
            ) from None

    # ------------------------------------------------------------------ simulated searches

    @classmethod
    def replay(
        cls,
        trace,
        *,
        policy: str | Policy = "hypersched",
        policy_params: Mapping | None = None,
        early_signal: str = "auto",
        deadline: float,
        workers: int = 8,
        configs: int = 100,
        seed: int = 0,
        max_epochs: int | None = None,
        min_epochs: int = 1,
        eta: float = 4,
        scaling=None,
        startup: float | None = None,
        target: float | None = None,
    ) -> Experiment:
        """A search replayed on a learning-curve trace (a name, a path or a loaded trace)
        on a virtual clock: the same offers, policy and driver as ``bench``, in seconds of
        trace time, with the snapshots, results and events of a live search."""
        from hypersched_nb.experiment.simulate import SimSettings, replayed
        from hypersched_nb.sim.trace import Trace, load_trace

        _check(None, False, workers=workers, configs=configs, seed=seed, min_epochs=min_epochs,
               startup=startup)  # fmt: skip
        if max_epochs is not None:  # None: the trace's longest curve
            _check(None, False, max_epochs=max_epochs)
            check_budget(max_epochs, min_epochs)
        trace = trace if isinstance(trace, Trace) else load_trace(trace)
        settings = SimSettings(
            workers=workers, configs=configs, max_epochs=max_epochs, min_epochs=min_epochs,
            eta=eta, scaling=None if scaling is None else ScalingCurve.parse(scaling),
            startup=startup, target=target,
        )  # fmt: skip
        sim = replayed(trace, seed, settings)
        return cls._on(
            sim.runtime, sim.clock, sim.offered, metric=trace.metric_name, mode=trace.mode,
            deadline=deadline, max_epochs=sim.max_epochs, min_epochs=min_epochs, eta=eta,
            policy=policy, policy_params=policy_params, seed=seed, scaling=sim.scaling,
            target=target, early_signal=early_signal,
        )  # fmt: skip

    # ------------------------------------------------------------------ a journal

    @classmethod
    def open(cls, path, *, trainable=None, policy: str | Policy | None = None) -> Experiment:
        """The search whose journal is at ``path`` (its checkpoint folder, or the journal
        file), as it stood when it ended or when its kernel died (status "interrupted").
        Nothing runs: ``results()``, ``best``, ``events``, ``statistics()``,
        ``best_checkpoint()`` and ``load_best()`` read it. ``trainable`` is the class where
        the one the journal names cannot be imported here; ``policy`` the policy where the
        search was given a ready-made one."""
        from hypersched_nb.experiment.journal import (
            AfterReplay,
            Dry,
            EndOfJournal,
            Replay,
            read_journal,
        )  # fmt: skip

        journal = read_journal(path)
        s = journal.settings
        policy = policy or s["policy"]
        if isinstance(policy, str) and ":" in policy:
            raise ConfigError(
                f"the search at {journal.url} used its own policy ({policy}); pass "
                "policy= an instance of it to open it"
            )
        start = next((r for r in journal.records if r["k"] == "start"), {"workers": 0})
        dry = Dry(start["workers"], checkpoint_dir=s["checkpoint_dir"], metric=s["metric"],
                  mode=s["mode"], seed=s["seed"])  # fmt: skip
        replay = Replay(journal)
        exp = cls._on(
            dry, replay, iter(()), metric=s["metric"], mode=s["mode"], deadline=s["deadline"],
            max_epochs=s["max_epochs"], min_epochs=s["min_epochs"], eta=s["eta"], policy=policy,
            policy_params=None if isinstance(policy, Policy) else s["policy_params"],
            early_signal=_early_signal(policy, s), seed=s["seed"], scaling=s["scaling"],
            target=s["target"],
            max_workers=s.get("max_workers"), cost_budget=s.get("cost_budget"),
        )  # fmt: skip
        exp.trainable = trainable or _imported(s["trainable"])
        exp.checkpoint_dir = s["checkpoint_dir"]
        exp._observed = Observed(AfterReplay(dry, replay), replay, exp._session.gate, None)
        replay.noted = exp._observed.note
        exp._driver = Driver(
            exp.policy, exp._observed, replay, iter(()), deadline=s["deadline"],
            max_epochs=exp.max_epochs, mode=exp.mode, scaling=exp.scaling or LINEAR,
            target=exp.target, journal=True, inputs=replay, max_workers=exp.max_workers,
            cost_budget=exp.cost_budget,
        )  # fmt: skip
        try:
            exp._driver.run()
            status = "finished"
        except EndOfJournal:
            status = "interrupted"
        if journal.ended is not None:
            status = journal.ended["status"]
        exp._user_events = [
            {k: v for k, v in r.items() if k != "k"} for r in journal.records if r["k"] == "user"
        ]
        exp._session.opened(status, journal.started)
        return exp

    @classmethod
    def resume(
        cls, path, *, cluster=None, deadline=None, trainable=None, policy=None
    ) -> Experiment:
        """Go on with the search whose journal is at ``path`` (its checkpoint folder), cut
        short when its kernel died: its policy and trials are rebuilt from the journal,
        each trial that was running or paused resumes from its last checkpoint, and the
        search runs to its deadline, the one it had (seconds since it first started)
        unless ``deadline`` gives another (a budget counts from now). Started, like
        :meth:`start`; ``cluster`` as in the constructor (default: the journal's)."""
        from hypersched_nb.experiment.journal import read_journal
        from hypersched_nb.experiment.space import space_from_record

        journal = read_journal(path)
        s = journal.settings
        if journal.ended is not None:
            raise ConfigError(
                f"the search at {journal.url} is {journal.ended['status']}; "
                "Experiment.open() reads it, a new Experiment searches again"
            )
        trainable = trainable or _imported(s["trainable"])
        if trainable is None:
            raise ConfigError(
                f"the trainable {s['trainable']} cannot be imported here: import or define "
                "it, or pass trainable=<the class>"
            )
        if s["space"] is None:
            raise ConfigError(
                f"the search at {journal.url} offered from an iterator, which a journal cannot hold"
            )
        exp = cls(
            trainable, space_from_record(s["space"]), metric=s["metric"], mode=s["mode"],
            deadline=s["deadline"], max_epochs=s["max_epochs"], min_epochs=s["min_epochs"],
            eta=s["eta"], policy=policy or s["policy"],
            policy_params=None if isinstance(policy, Policy) else s["policy_params"],
            early_signal=_early_signal(policy, s),
            cluster=s["cluster"] if cluster is None else cluster, sampler=s["sampler"] or "tpe",
            seed=s["seed"], checkpoint_dir=s["checkpoint_dir"], scaling=s["scaling"],
            configs=s["configs"], target=s["target"], fail_fast=s.get("fail_fast", 3),
            max_workers=s.get("max_workers"), cost_budget=s.get("cost_budget"),
        )  # fmt: skip
        exp._resumed = (journal, None if deadline is None else parse_deadline(deadline))
        return exp.start()

    # ------------------------------------------------------------------ control

    def start(self) -> Experiment:
        """Start the search on a background thread and return at once (on a cluster, the
        deadline counts from here, the cluster's start included)."""
        session = self._session
        journal = self._resumed[0] if self._resumed else None
        if session.live and journal is None and self.checkpoint_dir is not None:
            check_unused(self.checkpoint_dir)  # before anything starts
        clock = session.open(started=journal.started if journal else None)
        deadline = resolve_deadline(
            self._deadline_spec, elapsed=clock.now(), current=None, started=session.started
        )
        if session.live and self.checkpoint_dir is None:  # a fresh folder per search
            self.checkpoint_dir = session.run_folder()
        launch = Launch(
            self.trainable,
            self.cluster,
            self.checkpoint_dir,
            self.metric,
            self.mode,
            self.seed,
            self.max_epochs,
        )
        runtime = session.connect(launch)
        try:
            scaling = self.scaling or getattr(runtime, "scaling", None) or LINEAR
            if journal is not None:
                self._journal = JournalWriter.after(journal)  # appended to, once live again
            elif session.live:
                self._journal = JournalWriter.begin(
                    journal_url(self.checkpoint_dir), started=session.started,
                    settings=self._settings(deadline),
                )  # fmt: skip
            record = None if self._journal is None else self._journal.write
            self._observed = Observed(runtime, clock, session.gate, session.poll, record=record)
            inputs = Inputs(clock, self._observed, self.source, record=record)
            if journal is not None:
                inputs = self._replay(journal, inputs, runtime)
            self._rows = Rows()
            self._driver = Driver(
                self.policy, self._observed, clock, self.source, deadline=deadline,
                max_epochs=self.max_epochs, mode=self.mode, scaling=scaling, target=self.target,
                journal=True, on_trial_over=self._tell, inputs=inputs,
                max_workers=self.max_workers, cost_budget=self.cost_budget,
            )  # fmt: skip
        except BaseException:
            session.close()
            raise
        session.run(self._drive, on_end=self._ended)
        return self

    def _drive(self) -> None:
        """The search's thread: the driver loop, then the failure that stopped it, if one
        did."""
        out = self._driver.run()
        self._failure = self._failure or below_one_epoch(
            self.cost_budget, self._driver.trials.values(), out.worker_seconds_billed
        )
        if self._failure is not None:
            raise self._failure

    def _replay(self, journal, live: Inputs, runtime) -> Inputs:
        """The inputs of a resumed search: its journal's, then ``live``. Where they go live,
        the runtime takes on the trials from their checkpoints, and a new deadline holds."""
        from hypersched_nb.experiment.journal import AfterReplay, Replay

        def go_live() -> None:
            d = self._driver
            trials = {t.trial_id: t.epochs for t in d.trials.values() if t.is_live}
            adopted = runtime.adopt(trials, running=tuple(d.running))
            now = self._session.clock.now()
            self._journal.write({"k": "resumed", "t": now, "from": adopted})
            new = self._resumed[1]
            if new is not None:  # a budget counts from now
                d.deadline = (
                    now + new.seconds
                    if new.kind == "budget"
                    else resolve_deadline(
                        new, elapsed=now, current=d.deadline, started=self._session.started
                    )
                )

        replay = Replay(journal, live=live, writer=self._journal, on_live=go_live,
                        noted=self._observed.note, on_offer=self.source.replayed)  # fmt: skip
        self._observed.clock = replay  # allocations are stamped with the replayed times
        self._observed.inner = AfterReplay(runtime, replay)
        return replay

    def _settings(self, deadline: float) -> dict:
        """What the journal says this search is: enough to open it, or resume it."""
        asked, policy = self._asked, self._asked["policy"]
        return {
            "trainable": _import_path(self.trainable), "space": space_record(asked["space"]),
            "metric": self.metric, "mode": self.mode, "deadline": deadline,
            "max_epochs": self.max_epochs, "min_epochs": self.min_epochs, "eta": self.eta,
            "policy": policy if isinstance(policy, str) else _import_path(type(policy)),
            "policy_params": asked["policy_params"], "seed": self.seed,
            "sampler": asked["sampler"] if isinstance(asked["sampler"], str) else None,
            "configs": asked["configs"], "checkpoint_dir": os.fspath(self.checkpoint_dir),
            "scaling": asked["scaling"] if isinstance(asked["scaling"], str) else None,
            "target": self.target, "fail_fast": self._fail_fast.threshold,
            "cluster": self.cluster if isinstance(self.cluster, (int, str)) else None,
            "max_workers": self.max_workers, "cost_budget": self.cost_budget,
            "early_signal": self.early_signal,
        }  # fmt: skip

    def _ended(self, status: str) -> None:
        """The journal's last line: how the search ended."""
        if self._journal is None:
            return
        error = None if self._session.error is None else repr(self._session.error)
        end = self._driver.outcome.ended_at if self._driver is not None else 0.0
        try:
            self._journal.write({"k": "end", "t": end, "status": status, "error": error})
            self._journal.close()
        except OSError:  # a full disk: the journal stays as it was, cut short
            pass

    def _tell(self, trial: Trial, ending: TrialEnding) -> None:
        self.source.tell(trial, complete=ending is TrialEnding.COMPLETED)
        why = self._fail_fast.heard(trial, ending)
        if why is not None:
            self._failure = SearchFailed(why)
            self._session.failing(self._failure)  # said at once, not when the trials have ended
            self._driver.request_stop(why)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the search is over (or ``timeout`` seconds); True when it is over.
        Raises what the search raised, if it failed. In a notebook, the dashboard's slider
        and stop button keep acting meanwhile."""
        return self._session.wait(timeout)

    def run(self) -> Best | None:
        """Start, wait for the end and return the best result."""
        self.start()
        self.wait()
        return self.best

    def stop(self, wait: bool = True) -> None:
        """End the search gracefully: running trials stop at once, the best so far stays."""
        if self._driver is None:
            raise HyperschedError("the search has not started; nothing to stop")
        self._session.stop(self._driver.request_stop)
        if wait:
            self.wait()

    @property
    def done(self) -> bool:
        return self._session.done

    # ------------------------------------------------------------------ the deadline

    @property
    def deadline(self) -> float:
        """Seconds since the start at which everything stops. Set it while the search runs
        to a budget ("30m"), a time ("17:00") or a shift ("+10m", "-5m"); a deadline already
        past ends the search now."""
        if self._driver is not None:
            return self._driver.deadline
        return resolve_deadline(
            self._deadline_spec, elapsed=0.0, current=None, started=datetime.now()
        )

    @deadline.setter
    def deadline(self, spec) -> None:
        if self._driver is None:
            d = parse_deadline(spec)
            if d.kind == "shift":  # moves the deadline set so far
                d = parse_deadline(self.deadline + d.seconds)
            self._deadline_spec = d
            return
        session = self._session
        if session.status != "running":
            raise HyperschedError(
                f"the search is {session.status}; its deadline can no longer move"
            )
        now = session.clock.now()
        new = resolve_deadline(
            spec, elapsed=now, current=self._driver.deadline, started=session.started
        )
        new = max(new, now)  # a deadline already past means now: nothing is undone
        self._driver.deadline = new
        when = "now" if new <= now else f"in {format_duration(new - now)}"
        event = {
            "time": now,
            "trial": None,
            "action": "DeadlineChanged",
            "reason": f"deadline moved to {new:.0f}s ({when}) by the user",
        }
        self._user_events.append(event)
        if self._journal is not None:
            self._journal.write({"k": "user", **event})
        self._observed.version += 1

    # ------------------------------------------------------------------ what it found

    @property
    def best(self) -> Best | None:
        """The best result reported so far: trial, configuration, metric, epoch."""
        if self._driver is None:
            return None
        with self._session.gate.reading():
            return self._best()

    def _best(self) -> Best | None:
        out: Outcome = self._driver.outcome
        if out.best_trial is None:
            return None
        trial = self._driver.trials[out.best_trial]
        epoch = trial.scores.index(trial.best_score) + 1
        return Best(trial.trial_id, dict(trial.config), trial.metrics[epoch - 1], epoch)

    def best_checkpoint(self) -> BestCheckpoint | None:
        """Where the weights of :attr:`best` are (``url``, ``sha256``, ``epoch``,
        ``trial_id``, ``metric``): its worker wrote them when that epoch became the search's
        best, so their ``trial_id``, ``epoch`` and ``metric`` are :attr:`best`'s. None before
        the first result, and for a runtime that keeps no weights (a replay of a trace)."""
        best = self.best
        runtime = self._observed.inner if self._observed is not None else None
        find = getattr(runtime, "best_checkpoint", None)
        if best is None or find is None:
            return None
        return find(at_most=best.metric)

    def load_best(self):
        """The trainable of :attr:`best_checkpoint` (normally :attr:`best`'s), set up in this
        process on the CPU and loaded with those weights (checksum checked): ready to
        evaluate or save."""
        info = self.best_checkpoint()
        if info is None:
            raise HyperschedError(
                "no weights to load: load_best() needs a live search that has reported a "
                "result (start() it, or wait() until best is set)"
            )
        if self.trainable is None:
            raise HyperschedError(
                "the trainable of this search cannot be imported here: import or define it, "
                "then open the search with trainable=<the class>"
            )
        from hypersched_nb.runtime import TrainContext, load_checkpoint

        tid = info.trial_id
        trainable = self.trainable()
        ctx = TrainContext(trial_id=tid, seed=self._observed.inner.trial_seed(tid))
        trainable.setup(dict(self._driver.trials[tid].config), ctx)
        trainable.load_state_dict(load_checkpoint(info.url, info.sha256))
        return trainable

    @property
    def events(self) -> list[dict]:
        """Every decision with its reason (time, trial, action, reason), oldest first."""
        if self._driver is None:
            return []
        with self._session.gate.reading():
            journal = list(self._driver.outcome.journal)
        return sorted(journal + list(self._user_events), key=lambda e: e["time"])

    def results(self):
        """One row per trial: state, epochs, best and last metric, workers, start and stop
        times, the reason for its state and its configuration (``config_<name>`` columns)."""
        return self.statistics().frame()

    def statistics(self) -> ExperimentSnapshot:
        """A frozen snapshot of the search now (what the dashboard and the magic show)."""
        policy = getattr(self.policy, "name", type(self.policy).__name__)
        if self._driver is None:
            return ExperimentSnapshot(
                time=0.0, deadline=self.deadline, status=self._session.status,
                metric=self.metric, mode=self.mode, policy=policy, describe="", workers=0,
                forecast=self._forecast,
            )  # fmt: skip
        with self._session.gate.reading():
            return self._snapshot(policy)

    def _snapshot(self, policy: str) -> ExperimentSnapshot:
        d, obs, session = self._driver, self._observed, self._session
        now = d.outcome.ended_at if session.status == "finished" else session.clock.now()
        rows = self._rows.of(d.trials.values(), obs.peak)
        # the policy's line read at this snapshot's moment: one reading of the clock for
        # every "left" it shows, and the deadline in force now (moved since its last turn)
        describe = self.policy.describe(d.context()._replace(now=now, deadline=d.deadline))
        error = None
        if session.error is not None:
            error = f"{type(session.error).__name__}: {session.error}"
        return ExperimentSnapshot(
            time=now, deadline=d.deadline, status=session.status, metric=self.metric,
            mode=self.mode, policy=policy, describe=describe, workers=d.capacity, trials=rows,
            allocation=tuple(obs.allocation), capacity=tuple(obs.capacity), best=self._best(),
            events=tuple(sorted(list(d.outcome.journal) + list(self._user_events), key=lambda e: e["time"])),
            started=session.started, error=error, version=obs.version, forecast=self._forecast,
            stopped_at=session.stopped_at, resumed_at=session.resumed_at,
        )  # fmt: skip

    def forecast(
        self, deadlines=None, workers=None, *, runs=32, margin=0.0, prior=None, seed=0,
        early_signal=None, executor=None,
    ):  # fmt: skip
        """What the search would reach by each deadline (the forms of :attr:`deadline`;
        None: the current one) on each cluster size (None: the cluster's now): a DataFrame
        of expected best, p10, p90 and p_beat (P(beats the best so far by ``margin``)), from
        ``runs`` simulations of the rest of the search. Before the first result it needs a
        ``prior`` trace of a similar model. ``early_signal`` ("trust" or "doubt") asks what
        the search would reach if its ``hypersched`` policy were told so now: one forecast
        per answer weighs trusting epoch 1 now against testing it first. ``executor`` (a
        ``concurrent.futures`` executor) is where the runs are simulated, the search being
        read here: a process pool keeps this interpreter free (None: on the calling thread).
        The search remembers the last one asked (here, by the magic or by the dashboard):
        :attr:`last_forecast`, and the report shows it. See
        :mod:`hypersched_nb.experiment.forecast`."""
        from hypersched_nb.experiment import forecast as fc

        trace = fc.prior_trace(prior, metric=self.metric, mode=self.mode)
        if self._driver is None:
            size = self._given[0].workers() if self._given else self.cluster
            standing = fc.fresh(
                self.policy,
                deadline=self.deadline,
                workers=size if isinstance(size, int) else 0,
                mode=self.mode,
                max_epochs=self.max_epochs,
                scaling=self.scaling or getattr(trace, "scaling", LINEAR),
                startup=getattr(trace, "startup_seconds", 0.0),
                offers_left=fc.offers_left(self.source),
            )
        else:
            session = self._session
            with session.gate.reading():
                over = session.status in ("finished", "failed")
                now = self._driver.outcome.ended_at if over else session.clock.now()
                left = fc.offers_left(self.source)
                standing = fc.detach(self._driver, now=now, offers_left=left)
        made = datetime.now()
        asked = dict(deadlines=deadlines, workers=workers, runs=runs, margin=margin, seed=seed,
                     prior=trace, started=self._session.started,
                     early_signal=early_signal)  # fmt: skip
        if executor is None:
            found = fc.forecast(standing, **asked)
        else:
            found = executor.submit(fc.forecast, standing, **asked).result()
        self._forecast = fc.ForecastMade(found, made=made, deadline=standing.deadline)
        return found.frame()

    @property
    def last_forecast(self):
        """The last :meth:`forecast` asked of this search (:class:`~hypersched_nb.experiment.
        forecast.ForecastMade`: what it said, when, for which deadline), or None."""
        return self._forecast

    def __repr__(self) -> str:
        snap = self.statistics()
        return f"<Experiment {snap.policy} {snap.status}: {snap.progress_line()}>"


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _path(value) -> bool:
    return isinstance(value, os.PathLike) or (isinstance(value, str) and bool(value.strip()))


# The settings whose value can be checked alone (the constructor's, and replay()'s): what
# each must be, and the test
_RULES = {
    "metric": ("the name of a metric that step() returns", lambda v: isinstance(v, str) and v),
    "mode": ("'max' or 'min'", lambda v: v in ("max", "min")),
    "max_epochs": ("an integer", _whole),
    "min_epochs": ("an integer", _whole),
    "eta": ("a finite number > 1", lambda v: v is None or _finite(v)),
    "seed": ("an integer from 0 to 2**32 - 1", lambda v: _whole(v) and 0 <= v < 2**32),
    "poll": ("a finite number of seconds > 0", lambda v: _finite(v) and v > 0),
    "configs": ("a number of configurations >= 1, or None", lambda v: v is None or (_whole(v) and v >= 1)),
    "target": ("a finite number (the metric to reach), or None", lambda v: v is None or _finite(v)),
    "checkpoint_dir": ("a folder path or an fsspec URL, or None", lambda v: v is None or _path(v)),
    "fail_fast": ("a number of trials >= 1, or None", lambda v: v is None or (_whole(v) and v >= 1)),
    "workers": ("a number of workers >= 1", lambda v: _whole(v) and v >= 1),
    "startup": ("a number of seconds >= 0, or None", lambda v: v is None or (_finite(v) and v >= 0)),
    "max_workers": ("a number of workers >= 1, or None", lambda v: v is None or (_whole(v) and v >= 1)),
    "cost_budget": ("a finite number of worker-seconds > 0, or None", lambda v: v is None or (_finite(v) and v > 0)),
    "early_signal": ("one of " + ", ".join(map(repr, EARLY_SIGNALS)), lambda v: isinstance(v, str) and v in EARLY_SIGNALS),
}  # fmt: skip


def _check(trainable, live: bool, **settings) -> None:
    """The constructor's checks, before anything starts: one-line errors naming the
    parameter, its value and what it must be."""
    if live and not (isinstance(trainable, type) and callable(getattr(trainable, "step", None))):
        raise ConfigError(
            f"`trainable` is {trainable!r}, but must be a Trainable subclass (the class itself)"
        )
    for name, value in settings.items():
        rule, ok = _RULES[name]
        if not ok(value):
            raise ConfigError(f"`{name}` is {value!r}, but must be {rule}")


def _early_signal(policy, settings: Mapping) -> str:
    """A journal's ``early_signal`` ("auto" in one written before it existed, or for a
    ready-made policy, which was given its own)."""
    return "auto" if isinstance(policy, Policy) else settings.get("early_signal", "auto")


def _check_elastic(policy: Policy, cluster, *, max_workers, cost_budget) -> None:
    """``max_workers`` and ``cost_budget`` are for a policy that sizes the cluster, and
    ``max_workers`` is not below the workers it starts with."""
    for name, value in (("max_workers", max_workers), ("cost_budget", cost_budget)):
        if value is not None and not type(policy).elastic:
            raise ConfigError(
                f"`{name}` is {value!r}, but policy {type(policy).__name__} does not size the "
                "cluster: use policy='seer', or leave it out"
            )
    if max_workers is not None and _whole(cluster) and cluster > max_workers:
        raise ConfigError(
            f"`max_workers` is {max_workers}, below the {cluster} workers `cluster` starts "
            f"with: give max_workers >= {cluster}"
        )


def _check_cluster(cluster) -> None:
    if cluster is None:
        return
    if isinstance(cluster, str):  # an address: its syntax now, whether one answers at start()
        from hypersched_nb.runtime.cluster import check_address

        if cluster.strip().isdigit():
            raise ConfigError(
                f"`cluster` is {cluster!r}, a string, but a number of workers must be an int "
                f"({int(cluster)}), and an address looks like 'tcp://host:8786'"
            )
        check_address(cluster, "cluster")
    elif not _cluster_ok(cluster):
        raise ConfigError(
            f"`cluster` is {cluster!r}, but must be a number of workers >= 1, an address or a Client"
        )


def _check_space(space) -> None:
    """A list of configurations holds dicts (a dict space is checked where it is read)."""
    if isinstance(space, (list, tuple)):
        for i, config in enumerate(space):
            if not isinstance(config, Mapping):
                raise ConfigError(
                    f"`space[{i}]` is {config!r}, but each configuration of a list must be a dict"
                )


def _cluster_ok(cluster) -> bool:
    if isinstance(cluster, bool):
        return False
    if isinstance(cluster, int):
        return cluster >= 1
    return hasattr(cluster, "submit")


def _import_path(obj) -> str | None:
    """``"module:qualname"`` of a class, as a journal names it (None for anything else)."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}:{name}" if module and name else None


def _imported(path: str | None):
    """The class a journal names (``"module:qualname"``), or None where it cannot be
    imported here."""
    import importlib

    if not path:
        return None
    module, _, name = path.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj
