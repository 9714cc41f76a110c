"""The user's object: one deadline-aware search that runs in the background of a kernel.

``Experiment`` is a facade: it holds a search's checked :class:`~hypersched_nb.experiment.
settings.Settings`, has it put together by :mod:`hypersched_nb.experiment._assembly` (new,
resumed, reopened or replayed: one builder each), and offers control (start, stop, wait),
the deadline, and reads. The driver loop runs on a thread of its own, so that a notebook
stays free for the dashboard, the deadline slider and the magic. Everything a view shows
comes from :meth:`Experiment.statistics`, a frozen :class:`ExperimentSnapshot`.

Threads: observers read the driver's records only between its turns (see ``_observed``).
A new deadline is written where the driver reads it on every turn; on a wall clock the
driver waits in slices of ``poll`` seconds, so that a deadline moved closer (or a stop)
takes effect within one slice. Where the search runs, its thread and its status are the
session's (see ``_session``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from hypersched_nb.core.policies import Policy
from hypersched_nb.core.scaling import LINEAR
from hypersched_nb.errors import ConfigError, HyperschedError
from hypersched_nb.experiment import _assembly
from hypersched_nb.experiment._records import RecordKind
from hypersched_nb.experiment._rows import Rows
from hypersched_nb.experiment._search import Search
from hypersched_nb.experiment._session import Session
from hypersched_nb.experiment.deadline import parse_deadline, resolve_deadline
from hypersched_nb.experiment.settings import Settings, imported
from hypersched_nb.experiment.snapshot import Best, ExperimentSnapshot
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
    ``"random"``, ``"qmc"`` or an Optuna sampler, which learns from every trial as it
    pauses or ends; ``configs`` bounds
    how many configurations are offered. ``fail_fast``: when the first this-many trials to
    end all failed with one error, the search stops and :meth:`wait` raises it (so does a
    search that ends with fewer, each failed with one error; None: never).
    An elastic policy (``"seer"``) sizes the cluster itself, from ``cluster`` up to
    ``max_workers``, and spends at most ``cost_budget`` worker-seconds (plus one epoch of one
    worker), billed for the workers the cluster has, from when they arrive to when they are
    retired. ``step_timeout``: seconds an epoch may run before its worker is restarted and
    the trial goes back to its checkpoint (``"auto"``: 10 × the trial's median epoch, at
    least 60 s; None: no bound). ``prior``: a past search of the same model (its folder,
    an ``Experiment``, a trace), read as :mod:`hypersched_nb.experiment.prior` says, for
    the policy and the forecast. ``points_to_evaluate``: configurations tried first
    (default: the trainable's own ``defaults``; ``[]``: none; :mod:`.first_points`).
    """

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
        step_timeout="auto",
        prior=None,
        points_to_evaluate="defaults",
    ):
        if space is None and isinstance(trainable, type):
            space = getattr(trainable, "space", lambda: None)()
            if space is None:
                raise ConfigError(
                    "`space` is None and the trainable has no space(); give a dict of Optuna distributions"
                )
        settings = Settings(
            trainable=trainable, space=space, metric=metric, mode=mode, deadline=deadline,
            max_epochs=max_epochs, min_epochs=min_epochs, eta=eta, policy=policy,
            policy_params=policy_params, early_signal=early_signal, cluster=cluster,
            sampler=sampler, seed=seed, checkpoint_dir=checkpoint_dir, scaling=scaling,
            configs=configs, target=target, poll=poll, fail_fast=fail_fast,
            max_workers=max_workers, cost_budget=cost_budget, step_timeout=step_timeout,
            prior=prior, points_to_evaluate=points_to_evaluate,
        )  # fmt: skip
        self._made(_assembly.configure(settings), Session(poll=poll))

    def _made(self, parts: _assembly.Parts, session: Session, *, search=None) -> None:
        """Every way of putting a search together ends here."""
        self._parts, self._settings, self._session = parts, parts.settings, session
        self._search: Search | None = search  # built by start(), or by open()
        self._resume: tuple | None = None  # (journal, new deadline): a resumed search's
        self._rows = Rows()  # the snapshot's rows, each rebuilt only when its trial changes
        self._forecast = None  # the last forecast asked (a ForecastMade): see last_forecast

    @classmethod
    def _assembled(cls, settings: Settings, session: Session) -> Experiment:
        exp = cls.__new__(cls)
        exp._made(_assembly.configure(settings), session)
        return exp

    @classmethod
    def _on(cls, runtime, clock, space, **settings) -> Experiment:
        """A search that runs on ``runtime`` and ``clock`` instead of a Dask cluster: a
        replayed trace, or a test's own runtime. ``settings`` are the constructor's."""
        poll = settings.pop("poll", 0.25)
        settings = Settings(trainable=None, space=space, live=False, poll=poll, **settings)
        return cls._assembled(settings, Session(runtime, clock))

    # the settings, as the user gave them
    policy = property(lambda self: self._parts.policy)
    source = property(lambda self: self._parts.source)
    trainable = property(lambda self: self._settings.trainable)
    metric = property(lambda self: self._settings.metric)
    mode = property(lambda self: self._settings.mode)
    max_epochs = property(lambda self: self._settings.max_epochs)
    min_epochs = property(lambda self: self._settings.min_epochs)
    eta = property(lambda self: self._settings.eta)
    seed = property(lambda self: self._settings.seed)
    cluster = property(lambda self: self._settings.cluster)
    checkpoint_dir = property(lambda self: self._settings.checkpoint_dir)
    target = property(lambda self: self._settings.target)
    early_signal = property(lambda self: self._settings.early_signal)
    max_workers = property(lambda self: self._settings.max_workers)
    cost_budget = property(lambda self: self._settings.cost_budget)
    scaling = property(lambda self: self._settings.scaling_curve)
    prior = property(lambda self: self._settings.prior)  # a Prior, or None

    @property
    def _driver(self):
        return None if self._search is None else self._search.driver

    # ------------------------------------------------------------------ simulated searches

    @classmethod
    def replay(
        cls, trace, *, policy: str | Policy = "hypersched", policy_params: Mapping | None = None,
        early_signal: str = "auto", deadline: float, workers: int = 8, configs: int = 100,
        seed: int = 0, max_epochs: int | None = None, min_epochs: int = 1, eta: float = 4,
        scaling=None, startup: float | None = None, target: float | None = None, prior=None,
    ) -> Experiment:  # fmt: skip
        """A search replayed on a learning-curve trace (a name, a path or a loaded trace)
        on a virtual clock: the same offers, policy and driver as ``bench``, in seconds of
        trace time, with the snapshots, results and events of a live search; ``prior`` as
        in the constructor."""
        from hypersched_nb.experiment.simulate import replay_of

        sim, trace = replay_of(
            trace, workers=workers, configs=configs, seed=seed, max_epochs=max_epochs,
            min_epochs=min_epochs, eta=eta, scaling=scaling, startup=startup, target=target,
        )  # fmt: skip
        return cls._on(
            sim.runtime, sim.clock, sim.offered, metric=trace.metric_name, mode=trace.mode,
            deadline=deadline, max_epochs=sim.max_epochs, min_epochs=min_epochs, eta=eta,
            policy=policy, policy_params=policy_params, seed=seed, scaling=sim.scaling,
            target=target, early_signal=early_signal, prior=prior,
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
        from hypersched_nb.experiment.journal import read_journal

        journal = read_journal(path)
        settings = _assembly.settings_of(journal, live=False, policy=policy, space=iter(()),
                                 trainable=trainable or imported(journal.settings["trainable"]))  # fmt: skip
        parts = _assembly.configure(settings)
        search, session, _status = _assembly.reopened(parts, journal)
        exp = cls.__new__(cls)
        exp._made(parts, session, search=search)
        search.user_events.extend(
            {k: v for k, v in r.items() if k != "k"} for r in journal.of(RecordKind.USER)
        )
        return exp

    @classmethod
    def resume(
        cls, path, *, cluster=None, deadline=None, trainable=None, policy=None
    ) -> Experiment:
        """Go on with the search whose journal is at ``path`` (its checkpoint folder), cut
        short when its kernel died: its policy, trials and sampler are rebuilt from the
        journal (no configuration is offered twice, trial ids go on), each trial that was
        running or paused goes on from its last checkpoint, and the search runs to its
        deadline, the one it had (seconds since it first started) unless ``deadline`` gives
        another (a budget counts from now). Started, like :meth:`start`; ``cluster`` as in
        the constructor (default: the journal's)."""
        from hypersched_nb.experiment.journal import read_journal
        from hypersched_nb.experiment.space import space_from_record

        journal = read_journal(path)
        trainable = _assembly.resumable(journal, trainable)
        changes = {} if cluster is None else {"cluster": cluster}
        settings = _assembly.settings_of(journal, live=True, policy=policy, trainable=trainable,
                                 space=space_from_record(journal.settings["space"]), **changes)  # fmt: skip
        exp = cls._assembled(settings, Session(poll=settings.poll))
        exp._resume = (journal, None if deadline is None else parse_deadline(deadline))
        return exp.start()

    # ------------------------------------------------------------------ control

    def start(self) -> Experiment:
        """Start the search on a background thread and return at once (on a cluster, the
        deadline counts from here, the cluster's start included)."""
        if self._resume is not None:
            journal, new_deadline = self._resume
            self._search = _assembly.resumed(self._parts, self._session, journal, new_deadline)
        else:
            self._search, self._settings = _assembly.fresh(self._parts, self._session)
        self._rows = Rows()
        self._session.run(self._search.run, on_end=self._ended)
        return self

    def _ended(self, status: str) -> None:
        self._search.ended(status, self._session.error)

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

    def on_status(self, callback) -> None:
        """Call ``callback()`` whenever the search's status changes (running, stopping,
        failing, over), from the thread that changed it: a view redraws at once."""
        self._session.on_status(callback)

    # ------------------------------------------------------------------ the deadline

    @property
    def deadline(self) -> float:
        """Seconds since the start at which everything stops. Set it while the search runs
        to a budget ("30m"), a time ("17:00") or a shift ("+10m", "-5m"); a deadline already
        past ends the search now."""
        if self._driver is not None:
            return self._driver.deadline
        return resolve_deadline(
            self._settings.deadline_spec, elapsed=0.0, current=None, started=datetime.now()
        )

    @deadline.setter
    def deadline(self, spec) -> None:
        if self._driver is None:
            d = parse_deadline(spec)
            if d.kind == "shift":  # moves the deadline set so far
                spec = self.deadline + d.seconds
            self._settings = self._settings.replace(deadline=spec)
            self._parts = _assembly.Parts(self._settings, self.policy, self.source)
            return
        session = self._session
        if session.status != "running":
            raise HyperschedError(
                f"the search is {session.status}; its deadline can no longer move"
            )
        with session.gate.reading():
            self._search.move_deadline(spec, session)

    # ------------------------------------------------------------------ what it found

    @property
    def best(self) -> Best | None:
        """The best result reported so far: trial, configuration, metric, epoch."""
        return self._read(lambda search: search.best())

    def best_checkpoint(self) -> BestCheckpoint | None:
        """Where the weights of :attr:`best` are (``url``, ``sha256``, ``epoch``,
        ``trial_id``, ``metric``): its worker wrote them when that epoch became the search's
        best, so their ``trial_id``, ``epoch`` and ``metric`` are :attr:`best`'s. None before
        the first result, and for a runtime that keeps no weights (a replay of a trace)."""
        return self._read(lambda search: search.best_checkpoint(search.best()))

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
        return self._read(lambda search: search.load(self.trainable, info))

    @property
    def events(self) -> list[dict]:
        """Every decision with its reason (time, trial, action, reason), oldest first."""
        return self._read(lambda search: search.events(), [])

    @property
    def study(self):
        """The search now as an ``optuna.Study`` in memory, for Optuna's plots and tools
        (see :mod:`hypersched_nb.experiment.study`): made anew from one snapshot each time."""
        from hypersched_nb.experiment.study import study_of

        return study_of(self, self._settings.space)

    def results(self):
        """One row per trial: state, epochs, best and last metric, workers, start and stop
        times, the reason for its state and its configuration (``config_<name>`` columns)."""
        return self.statistics().frame()

    def statistics(self) -> ExperimentSnapshot:
        """A frozen snapshot of the search now (what the dashboard and the magic show)."""
        if self._search is None:
            return ExperimentSnapshot(
                time=0.0, deadline=self.deadline, status=self._session.status,
                metric=self.metric, mode=self.mode, describe="", workers=0,
                policy=getattr(self.policy, "name", type(self.policy).__name__),
                forecast=self._forecast,
            )  # fmt: skip
        return self._read(
            lambda search: search.snapshot(
                self._session,
                self._rows,
                policy=self.policy,
                metric=self.metric,
                mode=self.mode,
                forecast=self._forecast,
                prior=getattr(self.prior, "label", None),
            )  # fmt: skip
        )

    def _read(self, read, empty=None):
        """``read(search)`` between two of the driver's turns (``empty`` before a start)."""
        if self._search is None:
            return empty
        with self._session.gate.reading():
            return read(self._search)

    def forecast(
        self, deadlines=None, workers=None, *, runs=32, margin=0.0, prior=None, seed=0,
        early_signal=None, executor=None,
    ):  # fmt: skip
        """What the search would reach by each deadline (the forms of :attr:`deadline`;
        None: the current one) on each cluster size (None: the cluster's now): a DataFrame
        of expected best, p10, p90 and p_beat (P(beats the best so far by ``margin``)), from
        ``runs`` simulations of the rest of the search. Before the first result it needs a
        ``prior`` trace of a similar model (None: the search's own ``prior``, where it has
        one with curves). ``early_signal`` ("trust" or "doubt") asks what
        the search would reach if its ``hypersched`` policy were told so now: one forecast
        per answer weighs trusting epoch 1 now against testing it first. ``executor`` (a
        ``concurrent.futures`` executor) is where the runs are simulated, the search being
        read here: a process pool keeps this interpreter free (None: on the calling thread).
        The search remembers the last one asked (here, by the magic or by the dashboard):
        :attr:`last_forecast`, and the report shows it. See
        :mod:`hypersched_nb.experiment.forecast`."""
        from hypersched_nb.experiment import forecast as fc

        own = None if self.prior is None else self.prior.trace  # the search's prior's curves
        trace = fc.prior_trace(own if prior is None else prior, metric=self.metric, mode=self.mode)
        if self._driver is None:
            session = self._session
            size = self.cluster if session.live else session.runtime.workers()
            standing = fc.fresh(
                self.policy, deadline=self.deadline, mode=self.mode,
                workers=size if isinstance(size, int) else 0, max_epochs=self.max_epochs,
                scaling=self.scaling or getattr(trace, "scaling", LINEAR),
                startup=getattr(trace, "startup_seconds", 0.0), offers_left=fc.offers_left(self.source),
            )  # fmt: skip
        else:
            standing = self._read(lambda search: search.standing(self._session, self.source))
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
