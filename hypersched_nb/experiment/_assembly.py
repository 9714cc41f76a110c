"""How a search is put together: one builder per way, each building its parts in their
final form (Ray's ``TunerInternal``, Optuna's ``_optimize`` apart from ``Study``).

A search has two stages. :func:`configure` turns checked :class:`Settings` into what the
search is before it runs: its policy and the source of its configurations. A builder then
makes what it runs on, a :class:`Search` (the observed runtime, the driver, the journal's
writer), in one of four ways:

- :func:`fresh`: a new search (on a Dask cluster, or on a runtime it was given: a replayed
  trace, a test's fake), journaled when it has a checkpoint folder;
- :func:`resumed`: a search whose kernel died, fed its journal again, then live on a new
  cluster from its checkpoints;
- :func:`reopened`: a search read from its journal; nothing runs.

A trace replay (``Experiment.replay``) is a fresh search on the simulator's runtime.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypersched_nb.core.policies import REGISTRY, Policy, create
from hypersched_nb.core.scaling import LINEAR
from hypersched_nb.errors import ConfigError, HyperschedError
from hypersched_nb.experiment._inputs import Inputs
from hypersched_nb.experiment._observed import Observed
from hypersched_nb.experiment._records import RecordKind
from hypersched_nb.experiment._search import Heard, Search
from hypersched_nb.experiment._session import Launch, Session
from hypersched_nb.experiment.deadline import resolve_deadline
from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.journal import (
    AfterReplay,
    Dry,
    EndOfJournal,
    Journal,
    JournalWriter,
    Replay,
    Tape,
    check_unused,
    journal_url,
)
from hypersched_nb.experiment.settings import Settings, imported
from hypersched_nb.experiment.space import config_source, space_record

__all__ = ["Parts", "configure", "fresh", "reopened", "resumed", "settings_of"]


@dataclass(frozen=True, slots=True)
class Parts:
    """What a search is before it runs: its settings, its policy, where its configurations
    come from."""

    settings: Settings
    policy: Policy
    source: object  # an OptunaSource or a ListSource (see space)


def configure(settings: Settings) -> Parts:
    """A search's policy and configuration source, from its settings."""
    s = settings
    policy = _policy(s)
    for name, value in (("max_workers", s.max_workers), ("cost_budget", s.cost_budget)):
        if value is not None and not type(policy).elastic:
            raise ConfigError(
                f"`{name}` is {value!r}, but policy {type(policy).__name__} does not size the "
                "cluster: use policy='seer', or leave it out"
            )
    source = config_source(
        s.space, sampler=s.sampler, seed=s.seed, mode=s.mode, max_configs=s.configs,
        points=s.points_to_evaluate,
    )  # fmt: skip
    return Parts(s, policy, source)


def _policy(s: Settings) -> Policy:
    if isinstance(s.policy, Policy):
        return s.policy
    if s.policy not in REGISTRY:
        raise ConfigError(f"`policy` is {s.policy!r}, but must be one of {', '.join(REGISTRY)}")
    params = s.policy_params
    try:
        return create(
            s.policy, max_epochs=s.max_epochs, min_epochs=s.min_epochs, eta=s.eta, seed=s.seed,
            early_signal=s.early_signal, prior=s.prior_evidence(), **(params or {}),
        )  # fmt: skip
    except HyperschedError:
        raise
    except (TypeError, ValueError) as exc:  # a setting of the wrong type, found inside
        if not params:
            raise
        why = " ".join(str(exc).split())
        raise ConfigError(
            f"`policy_params` is {params!r}, but policy {s.policy!r} cannot take it ({why})"
        ) from None


# ---------------------------------------------------------------------------- the builders


def fresh(parts: Parts, session: Session) -> tuple[Search, Settings]:
    """A new search, started now on ``session`` (its clock starts, its cluster comes up):
    the search, and its settings with the checkpoint folder it writes to."""
    s = parts.settings
    journaled = session.live
    if journaled and s.checkpoint_dir is not None:
        check_unused(s.checkpoint_dir)  # before anything starts
    clock = session.open()
    deadline = resolve_deadline(
        s.deadline_spec, elapsed=clock.now(), current=None, started=session.started
    )
    if session.live and s.checkpoint_dir is None:  # a fresh folder per search
        s = s.replace(checkpoint_dir=session.run_folder())
    runtime = session.connect(_launch(s))
    try:
        writer = None
        if journaled:
            record = s.to_record(deadline=deadline, space_record=space_record(s.space))
            writer = JournalWriter.begin(
                journal_url(s.checkpoint_dir), started=session.started, settings=record
            )
        write = None if writer is None else writer.write
        observed = Observed(runtime, clock, session.gate, session.poll, record=write)
        inputs = Inputs(clock, observed, parts.source, record=write)
        return _search(parts, s, session, observed, clock, inputs, writer, deadline, runtime), s
    except BaseException:
        session.close()
        raise


def resumed(parts: Parts, session: Session, journal: Journal, new_deadline) -> Search:
    """The search of ``journal``, cut short when its kernel died, on a new cluster: fed its
    journal's inputs until they run out, where the runtime takes its unfinished trials on
    from their checkpoints and the search goes on live (to ``new_deadline``, a parsed
    deadline, where one is given)."""
    s = parts.settings
    clock = session.open(started=journal.started)
    runtime = session.connect(_launch(s))
    built: dict = {}  # the driver, once made: going live hands its trials to the runtime

    def go_live() -> None:
        d = built["driver"]
        trials = {t.trial_id: t.epochs for t in d.trials.values() if t.is_live}
        adopted = runtime.adopt(trials, running=tuple(d.running))
        now = clock.now()
        writer.write({"k": RecordKind.RESUMED, "t": now, "from": adopted})
        if new_deadline is not None:  # a budget counts from now
            d.deadline = (
                now + new_deadline.seconds
                if new_deadline.kind == "budget"
                else resolve_deadline(
                    new_deadline, elapsed=now, current=d.deadline, started=session.started
                )
            )

    try:
        writer = JournalWriter.after(journal)  # muted until the tape goes live
        tape = Tape(journal, clock=clock, writer=writer, on_live=go_live)
        observed = Observed(
            AfterReplay(runtime, tape), tape, session.gate, session.poll, record=writer.write
        )
        live = Inputs(clock, observed, parts.source, record=writer.write)
        inputs = Replay(tape, runtime=observed, live=live, on_offer=parts.source.replayed)
        deadline = journal.settings["deadline"]
        search = _search(parts, s, session, observed, clock, inputs, writer, deadline, runtime)
    except BaseException:
        session.close()
        raise
    built["driver"] = search.driver
    return search


def reopened(parts: Parts, journal: Journal) -> tuple[Search, Session, str]:
    """The search of ``journal`` as it stood when it ended or its kernel died, the session
    it stands in (over; its clock the journal's) and its status ("interrupted" for one cut
    short). Nothing runs: the driver is fed the journal to its end on a runtime where
    nothing trains."""
    s = parts.settings
    start = next(iter(journal.of(RecordKind.START)), {"workers": 0})
    dry = Dry(start["workers"], checkpoint_dir=s.checkpoint_dir, metric=s.metric, mode=s.mode,
              seed=s.seed)  # fmt: skip
    tape = Tape(journal)
    session = Session(dry, tape)
    observed = Observed(AfterReplay(dry, tape), tape, session.gate, None)
    inputs = Replay(tape, runtime=observed)
    search = _search(parts, s, session, observed, tape, inputs, None, s.deadline, dry)
    session.gate.enter()  # as a driver's thread does: readers get in while it waits
    try:
        search.driver.run()
        status = "finished"
    except EndOfJournal:
        status = "interrupted"
    finally:
        session.gate.leave()
    if journal.ended is not None:
        status = journal.ended["status"]
    resumed = journal.of(RecordKind.RESUMED)
    session.opened(status, journal.started, resumed_at=resumed[-1]["t"] if resumed else None)
    return search, session, status


def _search(parts: Parts, s: Settings, session, observed, clock, inputs, writer, deadline, runtime):
    heard = Heard(parts.source, s.fail_fast, failing=session.failing)
    driver = Driver(
        parts.policy, observed, clock, parts.source, deadline=deadline,
        max_epochs=s.max_epochs, mode=s.mode,
        scaling=s.scaling_curve or getattr(runtime, "scaling", None) or LINEAR,
        target=s.target, journal=True, on_trial_over=heard.over, on_trial_paused=heard.paused,
        inputs=inputs, max_workers=s.max_workers, cost_budget=s.cost_budget,
    )  # fmt: skip
    return Search(observed, driver, writer, heard, s.cost_budget)


def _launch(s: Settings) -> Launch:
    return Launch(
        s.trainable, s.cluster, None if s.checkpoint_dir is None else os.fspath(s.checkpoint_dir),
        s.metric, s.mode, s.seed, s.max_epochs, s.step_timeout,
    )  # fmt: skip


def resumable(journal, trainable):
    """The trainable the search ``journal`` holds goes on with (``trainable``, else the
    class it names); a search that cannot go on is a one-line error saying why."""
    s = journal.settings
    if journal.ended is not None:
        raise ConfigError(
            f"the search at {journal.url} is {journal.ended['status']}; "
            "Experiment.open() reads it, a new Experiment searches again"
        )
    trainable = trainable or imported(s["trainable"])
    if trainable is None:
        raise ConfigError(
            f"the trainable {s['trainable']} cannot be imported here: import or define "
            "it, or pass trainable=<the class>"
        )
    if s["space"] is None:
        raise ConfigError(
            f"the search at {journal.url} offered from an iterator, which a journal cannot hold"
        )
    return trainable


def settings_of(journal, *, live: bool, policy, trainable, space, **changes) -> Settings:
    """The settings of the search ``journal`` holds; what they lack or cannot be is a
    one-line error naming the journal."""
    from hypersched_nb.experiment.journal import JournalError

    folder = journal.url.rpartition("/")[0]  # the journal lies beside its checkpoints,
    changes.setdefault("checkpoint_dir", folder or ".")  # wherever the folder was moved
    try:
        return Settings.from_record(
            journal.settings, trainable=trainable, space=space, policy=policy, live=live,
            **changes,
        )  # fmt: skip
    except ConfigError as exc:
        raise type(exc)(f"the search at {journal.url}: {exc}") from None
    except (KeyError, TypeError) as exc:
        raise JournalError(
            f"line 1 of {journal.url} describes the search with settings this version cannot "
            f"use ({exc}): the journal is damaged or was written by another version"
        ) from None
