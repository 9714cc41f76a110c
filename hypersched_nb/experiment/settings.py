"""What a search is asked to do: its settings, checked once, and their journal record.

:class:`Settings` holds every choice an :class:`~hypersched_nb.experiment.experiment.
Experiment` is made with, frozen. Its checks run in ``__post_init__``, so a setting is
checked in one place however the search is put together (new, resumed, reopened or
replayed), and each failure is one :class:`~hypersched_nb.errors.ConfigError` line naming
the setting, its value and what it must be. :meth:`Settings.to_record` is what a journal's
first line says of the search; :meth:`Settings.from_record` reads it back (a missing or
damaged field is a :class:`~hypersched_nb.experiment.journal.JournalError` naming line 1).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from hypersched_nb.core.policies import EARLY_SIGNALS, Policy, check_budget
from hypersched_nb.core.scaling import ScalingCurve
from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.deadline import DeadlineSpec, parse_deadline, resolve_deadline
from hypersched_nb.experiment.first_points import first_points

__all__ = ["Settings", "import_path", "imported"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Every setting of one search, as the user gave them (see ``Experiment``'s
    docstring); ``deadline`` parsed. ``live``: the search trains a ``trainable`` class (a
    replayed trace or a reopened journal need none)."""

    trainable: type | None
    space: object
    metric: str = "val_acc"
    mode: str = "max"
    deadline: object = "20m"  # as given: a budget, a time of day, seconds
    max_epochs: int = 100
    min_epochs: int = 1
    eta: float = 4
    policy: str | Policy = "hypersched"
    policy_params: Mapping | None = None
    early_signal: str = "auto"
    cluster: object = None
    sampler: object = "tpe"
    seed: int = 0
    checkpoint_dir: object = None
    scaling: object = None
    configs: int | None = None
    target: float | None = None
    poll: float = 0.25
    fail_fast: int | None = 3
    max_workers: int | None = None
    cost_budget: float | None = None
    step_timeout: object = "auto"  # seconds an epoch may run, "auto" or None (see DaskRuntime)
    prior: object = None  # a past search (see experiment.prior); resolved to a Prior
    points_to_evaluate: object = "defaults"  # see experiment.first_points; resolved to dicts
    live: bool = True
    deadline_spec: DeadlineSpec = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.live and not (
            isinstance(self.trainable, type) and callable(getattr(self.trainable, "step", None))
        ):
            raise ConfigError(
                f"`trainable` is {self.trainable!r}, but must be a Trainable subclass (the class itself)"
            )
        for name in _RULES:
            check(name, getattr(self, name))
        check_budget(self.max_epochs, self.min_epochs, self.eta)
        _check_cluster(self.cluster)
        _check_space(self.space)
        spec = parse_deadline(self.deadline)
        object.__setattr__(self, "deadline_spec", spec)
        if spec.kind == "shift" and not spec.seconds > 0:
            raise ConfigError(
                f"`deadline` is {self.deadline!r}, which is before the search starts; give a "
                "budget such as '20m'"
            )
        if self.live and spec.kind == "at":  # a time already past: said now
            resolve_deadline(spec, elapsed=0.0, current=None, started=datetime.now())
        self.scaling_curve  # noqa: B018 - a scaling that does not parse is said now
        if self.prior is not None:  # read and checked against the space now: one line
            from hypersched_nb.experiment.prior import resolve_prior

            found = resolve_prior(self.prior, space=self.space, metric=self.metric, mode=self.mode)
            object.__setattr__(self, "prior", found)
        points = first_points(self.points_to_evaluate, trainable=self.trainable, space=self.space)
        object.__setattr__(self, "points_to_evaluate", points)
        if isinstance(self.policy, Policy):
            if self.policy_params is not None:
                raise ConfigError(
                    "`policy_params` is given with a ready-made policy; pass its settings to "
                    "its constructor"
                )
            if self.early_signal != "auto":
                raise ConfigError(
                    f"`early_signal` is {self.early_signal!r} with a ready-made policy; pass "
                    "it to its constructor"
                )
        elif self.policy_params is not None and not isinstance(self.policy_params, Mapping):
            raise ConfigError(
                f"`policy_params` is {self.policy_params!r}, but must be a dict of the "
                "policy's own settings"
            )
        if (
            self.max_workers is not None
            and _whole(self.cluster)
            and self.cluster > self.max_workers
        ):
            raise ConfigError(
                f"`max_workers` is {self.max_workers}, below the {self.cluster} workers "
                f"`cluster` starts with: give max_workers >= {self.cluster}"
            )

    def prior_evidence(self):
        """What the policy is told of the prior (a ``PriorEvidence``), or None."""
        if self.prior is None:
            return None
        return self.prior.evidence(
            min_epochs=self.min_epochs, eta=self.eta, max_epochs=self.max_epochs
        )

    @property
    def scaling_curve(self) -> ScalingCurve | None:
        return None if self.scaling is None else ScalingCurve.parse(self.scaling)

    def replace(self, **changes) -> Settings:
        """These settings with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ the journal's record

    def to_record(self, *, deadline: float, space_record) -> dict:
        """What a journal's first line says of this search: enough to open or resume it.
        ``deadline`` is the one resolved at the start (seconds since it)."""
        policy = self.policy
        return {
            "trainable": import_path(self.trainable), "space": space_record,
            "metric": self.metric, "mode": self.mode, "deadline": deadline,
            "max_epochs": self.max_epochs, "min_epochs": self.min_epochs, "eta": self.eta,
            "policy": policy if isinstance(policy, str) else import_path(type(policy)),
            "policy_params": self.policy_params, "seed": self.seed,
            "sampler": self.sampler if isinstance(self.sampler, str) else None,
            "configs": self.configs, "checkpoint_dir": os.fspath(self.checkpoint_dir),
            "scaling": self.scaling if isinstance(self.scaling, str) else None,
            "target": self.target, "fail_fast": self.fail_fast,
            "cluster": self.cluster if isinstance(self.cluster, (int, str)) else None,
            "max_workers": self.max_workers, "cost_budget": self.cost_budget,
            "early_signal": self.early_signal, "step_timeout": self.step_timeout,
            "prior": None if self.prior is None else self.prior.to_record(self.prior_evidence()),
            "points_to_evaluate": [dict(p) for p in self.points_to_evaluate],
        }  # fmt: skip

    @classmethod
    def from_record(
        cls, record: Mapping, *, trainable=None, space=None, policy=None, live: bool, **changes
    ) -> Settings:
        """The settings a journal's first line (``record``, upgraded to this format: see
        :mod:`hypersched_nb.experiment.journal`) describes. ``trainable``, ``space`` and
        ``policy`` replace what the record names (a class defined in the notebook, a
        ready-made policy); ``changes`` replace any other setting."""
        if isinstance(record["policy"], str) and ":" in record["policy"] and policy is None:
            raise ConfigError(
                f"the search used its own policy ({record['policy']}); pass policy= an "
                "instance of it"
            )
        ready = isinstance(policy, Policy)
        fields = {
            "trainable": trainable, "space": space, "metric": record["metric"],
            "mode": record["mode"], "deadline": record["deadline"],
            "max_epochs": record["max_epochs"], "min_epochs": record["min_epochs"],
            "eta": record["eta"], "policy": policy or record["policy"],
            "policy_params": None if ready else record["policy_params"],
            "early_signal": "auto" if ready else record["early_signal"],
            "cluster": record["cluster"], "sampler": record["sampler"] or "tpe",
            "seed": record["seed"], "checkpoint_dir": record["checkpoint_dir"],
            "scaling": record["scaling"], "configs": record["configs"], "target": record["target"],
            "fail_fast": record["fail_fast"], "max_workers": record["max_workers"],
            "cost_budget": record["cost_budget"], "step_timeout": record["step_timeout"],
            "points_to_evaluate": record["points_to_evaluate"], "live": live,
        }  # fmt: skip
        if record["prior"] is not None:  # what the policy was told, kept in the header
            from hypersched_nb.experiment.prior import Prior

            fields["prior"] = Prior.from_record(record["prior"])
        fields.update(changes)
        return cls(**fields)


#: the fields of a journal's settings record, in the order :meth:`Settings.to_record`
#: writes them
RECORD_FIELDS = (
    "trainable", "space", "metric", "mode", "deadline", "max_epochs", "min_epochs", "eta",
    "policy", "policy_params", "seed", "sampler", "configs", "checkpoint_dir", "scaling",
    "target", "fail_fast", "cluster", "max_workers", "cost_budget", "early_signal",
    "step_timeout", "prior", "points_to_evaluate",
)  # fmt: skip


# ---------------------------------------------------------------------------- the checks


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
    "max_workers": ("a number of workers >= 1, or None", lambda v: v is None or (_whole(v) and v >= 1)),
    "cost_budget": ("a finite number of worker-seconds > 0, or None", lambda v: v is None or (_finite(v) and v > 0)),
    "early_signal": ("one of " + ", ".join(map(repr, EARLY_SIGNALS)), lambda v: isinstance(v, str) and v in EARLY_SIGNALS),
    "step_timeout": ("a number of seconds > 0, 'auto' (a multiple of the trial's median epoch) or None", lambda v: v is None or v == "auto" or (not isinstance(v, str) and _finite(v) and v > 0)),
}  # fmt: skip
#: checked where they are given (replay()'s), not settings of a live search
_OTHER_RULES = {
    "workers": ("a number of workers >= 1", lambda v: _whole(v) and v >= 1),
    "startup": ("a number of seconds >= 0, or None", lambda v: v is None or (_finite(v) and v >= 0)),
}  # fmt: skip


def check(name: str, value) -> None:
    """One setting's check: a one-line error naming it, its value and what it must be."""
    rule, ok = _RULES[name] if name in _RULES else _OTHER_RULES[name]
    if not ok(value):
        raise ConfigError(f"`{name}` is {value!r}, but must be {rule}")


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
    elif isinstance(cluster, bool) or not (
        (isinstance(cluster, int) and cluster >= 1)
        or (not isinstance(cluster, int) and hasattr(cluster, "submit"))
    ):
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


def import_path(obj) -> str | None:
    """``"module:qualname"`` of a class, as a journal names it (None for anything else)."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}:{name}" if module and name else None


def imported(path: str | None):
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
