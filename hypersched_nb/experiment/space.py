"""Where configurations come from: an Optuna sampler by ask-and-tell, or a fixed list.

The driver pulls configurations one at a time (``next(offers, None)``) when it has a free
worker and nothing to resume; when a trial is over, :meth:`OptunaSource.tell` reports it
back so that the sampler (TPE, random, QMC or any Optuna sampler) learns from it:

- a trial that trained to ``max_epochs`` (or said it was done) is COMPLETE with its best
  metric;
- a trial stopped early (by the policy, the deadline or the user) is PRUNED with its
  per-epoch metrics as intermediate values — TPE ranks pruned trials by them, as it does
  under Optuna's own pruners;
- a trial that never trained, raised or diverged is FAIL (samplers ignore it).

No configuration is offered twice: a draw the search has offered before is told FAIL (so
the sampler moves on) and drawn again, and a space with finitely many configurations (only
choices, integers and stepped floats) offers each of them once at most, then no more: the
search ends when its trials do, as a grid search does.

Example:
    >>> import optuna
    >>> src = OptunaSource({"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True),
    ...                     "width": [16, 32], "epochs_per_step": 1}, sampler="random", seed=0)
    >>> config = next(src)
    >>> sorted(config), config["epochs_per_step"]
    (['epochs_per_step', 'lr', 'width'], 1)
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence

from hypersched_nb.core.trial import Trial, TrialState
from hypersched_nb.errors import ConfigError

__all__ = [
    "REPEAT",
    "OptunaSource",
    "ListSource",
    "config_source",
    "SAMPLERS",
    "space_record",
    "space_from_record",
    "split_space",
]

#: sampler names accepted by ``Experiment(sampler=...)``; any Optuna sampler object works too
SAMPLERS = ("tpe", "random", "qmc")
_FIXED = (int, float, str, bool, type(None))


def _sampler(name, seed: int):
    import optuna

    if isinstance(name, optuna.samplers.BaseSampler):
        return name
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "qmc":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # QMC warns that asynchronous seeding varies
            return optuna.samplers.QMCSampler(
                seed=seed, scramble=True, warn_asynchronous_seeding=False
            )
    raise ConfigError(
        f"`sampler` is {name!r}, but must be one of {', '.join(map(repr, SAMPLERS))} or an Optuna sampler"
    )


def split_space(space: Mapping) -> tuple[dict, dict]:
    """(distributions to sample, fixed values) from a user's space."""
    from optuna.distributions import BaseDistribution, CategoricalDistribution

    dists, fixed = {}, {}
    for name, spec in space.items():
        if not isinstance(name, str):
            raise ConfigError(f"`space` key {name!r} must be a string (a parameter name)")
        if isinstance(spec, BaseDistribution):
            dists[name] = spec
        elif isinstance(spec, list):
            if not spec:
                raise ConfigError(f"`space[{name!r}]` is an empty list; give at least one choice")
            dists[name] = CategoricalDistribution(spec)
        elif isinstance(spec, _FIXED):
            fixed[name] = spec
        else:
            raise ConfigError(
                f"`space[{name!r}]` is {spec!r}, but must be an Optuna distribution, a list of "
                "choices or a fixed value"
            )
    return dists, fixed


class OptunaSource(Iterator[dict]):
    """Configurations asked of an Optuna study; results told back when trials end.

    ``points`` (parameter values, checked by :func:`.first_points.first_points`) are asked
    first, in order; ``max_configs`` bounds how many are offered (None: as many as the
    policy admits). The
    i-th configuration offered becomes the driver's trial i. Optuna's per-trial INFO log is
    turned down to WARNING so that a notebook cell is not flooded.
    """

    def __init__(
        self,
        space: Mapping,
        *,
        sampler="tpe",
        seed: int = 0,
        mode: str = "max",
        max_configs: int | None = None,
        points: Sequence[Mapping] = (),
    ):
        import optuna

        if not isinstance(space, Mapping) or not space:
            raise ConfigError(
                f"`space` is {space!r}, but must be a non-empty dict of Optuna distributions"
            )
        if max_configs is not None and max_configs < 1:
            raise ConfigError(f"`configs` is {max_configs}, but must be >= 1")
        self.distributions, self.fixed = split_space(space)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = optuna.create_study(
            direction="maximize" if mode == "max" else "minimize", sampler=_sampler(sampler, seed)
        )
        for point in points:  # asked first, in order (see first_points)
            self.study.enqueue_trial(dict(point))
        self.max_configs = max_configs
        self._size = space_size(self.distributions)  # configurations there are (inf: unbounded)
        self._offered: set[str] = set()  # the configurations offered, as keys (see _key)
        self._asked: list = []  # optuna trial of driver trial i
        self._told: dict[int, tuple] = {}  # driver trial -> (epochs, state) the sampler heard

    def __next__(self) -> dict:
        if self.max_configs is not None and len(self._asked) >= self.max_configs:
            raise StopIteration
        if len(self._offered) >= self._size:  # a finite space, every configuration offered
            raise StopIteration
        trial = self._draw()
        self._asked.append(trial)
        self._offered.add(_key(trial.params))
        return {**trial.params, **self.fixed}

    def replayed(self, config: dict) -> None:
        """A configuration this search offered before its kernel died (its journal's),
        asked again. Fed the same asks and tells in the same order, a seeded sampler draws
        the same configuration, so the sampler's history and its random state go on from
        where they were, and what it offers next is new. Where it draws another (a sampler
        that is not deterministic), that draw is told as failed and the journal's
        configuration is asked as it was."""
        from optuna.trial import TrialState as OptunaState

        params = _as_journaled({k: v for k, v in config.items() if k in self.distributions})
        trial = self._draw()
        if _as_journaled(trial.params) != params:
            self.study.tell(trial, state=OptunaState.FAIL)
            self.study.enqueue_trial(params)
            trial = self._ask()
        self._asked.append(trial)
        self._offered.add(_key(trial.params))

    def _draw(self):
        """The sampler's next draw that was not offered before: a repeat is told FAIL and
        drawn again; after :data:`_REDRAWS` repeats in a row, a finite space's first
        configuration not offered yet is asked instead."""
        from optuna.trial import TrialState as OptunaState

        for _ in range(_REDRAWS):
            trial = self._ask()
            if _key(trial.params) not in self._offered:
                return trial
            trial.set_user_attr(REPEAT, True)  # not an offer: the sampler's own history
            self.study.tell(trial, state=OptunaState.FAIL)
        untried = _first_untried(self.distributions, self._offered, self._size)
        if untried is not None:
            self.study.enqueue_trial(untried)
        return self._ask()

    def _ask(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # independent-sampling notices, one per trial
            return self.study.ask(self.distributions)

    def tell(self, trial: Trial, *, complete: bool) -> None:
        """What ``trial`` has shown reaches the sampler: its per-epoch metrics as
        intermediate values, COMPLETE (``complete``: it trained to the end) with its best,
        else PRUNED (stopped, or paused: the sampler learns from it while it waits), or FAIL
        (it raised or diverged). A trial told before (it was paused) that has shown more
        since is recorded anew, as Optuna cannot reopen a finished trial."""
        if trial.trial_id >= len(self._asked):
            return  # not one of ours
        told = self._told.get(trial.trial_id)
        state = _state(trial, complete)
        if told == (len(trial.metrics), state):
            return  # nothing new
        self._told[trial.trial_id] = (len(trial.metrics), state)
        ask = self._asked[trial.trial_id]
        value = _best(trial.metrics, self.study.direction.name) if complete else None
        if told is None:
            if state.name != "FAIL":
                for epoch, metric in enumerate(trial.metrics, 1):
                    ask.report(metric, epoch)
            self.study.tell(ask, value, state=state, skip_if_finished=True)
            return
        import optuna

        self.study.add_trial(
            optuna.trial.create_trial(
                params=ask.params, distributions=ask.distributions, value=value, state=state,
                intermediate_values=dict(enumerate(trial.metrics, 1)) if state.name != "FAIL" else {},
            )
        )  # fmt: skip

    @property
    def told(self) -> int:
        """How many of the trials offered the sampler has heard from."""
        return len(self._told)

    @property
    def offered(self) -> int:
        return len(self._asked)


class ListSource(Iterator[dict]):
    """Configurations from a fixed list (or any iterable), offered in order."""

    def __init__(self, configs: Iterable[dict]):
        self._it = iter(configs)
        self.offered = 0

    def __next__(self) -> dict:
        config = next(self._it)
        if not isinstance(config, Mapping):
            raise ConfigError(f"`space` item {self.offered} is {config!r}, but must be a dict")
        self.offered += 1
        return dict(config)

    def __length_hint__(self) -> int:
        """How many configurations are left, where the list knows (-1 is unknown, an
        iterator's)."""
        return operator.length_hint(self._it, -1)

    def replayed(self, config: dict) -> None:
        """A configuration offered before (a resumed search's): the list goes on after it."""
        next(self._it, None)
        self.offered += 1

    def tell(self, trial: Trial, *, complete: bool) -> None:
        """Nothing learns from a fixed list."""


def _state(trial: Trial, complete: bool):
    """The Optuna state a driver trial is told as."""
    from optuna.trial import TrialState as OptunaState

    finite = all(math.isfinite(m) for m in trial.metrics)
    if trial.state is TrialState.ERRORED or not trial.metrics or not finite:
        return OptunaState.FAIL
    return OptunaState.COMPLETE if complete else OptunaState.PRUNED


def _best(metrics, direction: str) -> float:
    return max(metrics) if direction == "MAXIMIZE" else min(metrics)


REPEAT = "repeat"  # user attribute of a draw told FAIL for repeating an offer
_REDRAWS = 50  # repeats drawn in a row before a finite space's next untried one is asked
_ENUMERABLE = 100_000  # the largest finite space whose configurations are listed in order


def space_size(distributions: Mapping) -> float:
    """How many configurations ``distributions`` hold: inf if any is continuous."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    size = 1
    for d in distributions.values():
        if isinstance(d, CategoricalDistribution):
            size *= len(d.choices)
        elif isinstance(d, FloatDistribution) and d.step is None:
            return math.inf
        else:  # an IntDistribution, or a FloatDistribution with a step
            size *= int(round((d.high - d.low) / d.step)) + 1
    return size


def _values(d) -> list:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(d, CategoricalDistribution):
        return list(d.choices)
    n = int(round((d.high - d.low) / d.step)) + 1
    if isinstance(d, IntDistribution):
        return [d.low + i * d.step for i in range(n)]
    return [float(d.low + i * d.step) for i in range(n)]


def _first_untried(distributions: Mapping, offered: set[str], size: float) -> dict | None:
    """The first configuration, in the order of the space, not offered yet (None: none, or
    a space too large to list)."""
    import itertools

    if size > _ENUMERABLE:
        return None
    names = list(distributions)
    for values in itertools.product(*(_values(distributions[n]) for n in names)):
        params = dict(zip(names, values, strict=True))
        if _key(params) not in offered:
            return params
    return None


def _key(params: Mapping) -> str:
    """A configuration's identity: its parameters as the journal keeps them."""
    import json

    return json.dumps(_as_journaled(params), sort_keys=True)


def _as_journaled(params: Mapping) -> dict:
    """``params`` as a journal gives them back (through JSON): a tuple is a list."""
    import json

    return json.loads(json.dumps(dict(params), default=str))


def config_source(
    space, *, sampler="tpe", seed: int = 0, mode: str = "max", max_configs: int | None = None,
    points: Sequence[Mapping] = (),
):  # fmt: skip
    """An :class:`OptunaSource` for a dict space (``points`` asked first), a
    :class:`ListSource` for a list of dicts."""
    if isinstance(space, Mapping):
        return OptunaSource(
            space, sampler=sampler, seed=seed, mode=mode, max_configs=max_configs, points=points
        )
    if isinstance(space, (list, tuple)) and not space:
        raise ConfigError(f"`space` is {space!r}, but a list of configurations needs at least one")
    if isinstance(space, (list, tuple)) or (
        isinstance(space, Iterable) and not isinstance(space, (str, bytes))
    ):
        configs = list(space)[:max_configs] if max_configs is not None else space
        return ListSource(configs)
    raise ConfigError(
        f"`space` is {space!r}, but must be a dict of Optuna distributions or a list of configurations"
    )


def space_record(space) -> dict | list:
    """``space`` as JSON-ready values (a journal's): each Optuna distribution as Optuna
    writes it (``distribution_to_json``), fixed values as they are; a list of
    configurations as it is."""
    from optuna.distributions import BaseDistribution, distribution_to_json

    if isinstance(space, (list, tuple)):
        return [dict(c) for c in space]
    if not isinstance(space, Mapping):
        return None  # an iterator: what it offered is in the journal, the rest is not kept
    out = {}
    for name, spec in space.items():
        if isinstance(spec, BaseDistribution):
            out[name] = {"distribution": distribution_to_json(spec)}
        elif isinstance(spec, list):
            out[name] = {"choices": list(spec)}
        else:
            out[name] = {"fixed": spec}
    return out


def space_from_record(record):
    """The space :func:`space_record` wrote."""
    from optuna.distributions import json_to_distribution

    if isinstance(record, list):
        return record
    out = {}
    for name, spec in record.items():
        if "distribution" in spec:
            out[name] = json_to_distribution(spec["distribution"])
        elif "choices" in spec:
            out[name] = list(spec["choices"])
        else:
            out[name] = spec["fixed"]
    return out
