"""Scheduling policies, one per module, and the name registry the benchmark and API use."""

from __future__ import annotations

import functools
import math

from hypersched_nb.core.policies._base import (
    EARLY_SIGNALS,
    Policy,
    check_budget,
    check_early_signal,
)
from hypersched_nb.core.policies._prior import PriorEvidence
from hypersched_nb.errors import ConfigError

__all__ = [
    "EARLY_SIGNALS",
    "Policy",
    "PriorEvidence",
    "check_budget",
    "check_early_signal",
    "REGISTRY",
    "create",
    "names",
]

#: name -> "module:Class", imported on first use so one policy's import cost is not all's.
REGISTRY: dict[str, str] = {}


def register(name: str, target: str) -> None:
    REGISTRY[name] = target


def names() -> list[str]:
    return list(REGISTRY)


def resolve(name: str) -> type[Policy]:
    import importlib

    try:
        target = REGISTRY[name]
    except KeyError:
        known = ", ".join(REGISTRY)
        raise ConfigError(f"policy {name!r} is unknown; choose one of {known}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def create(
    name: str,
    *,
    max_epochs: int | None = None,
    min_epochs: int | None = None,
    eta: float | None = None,
    seed: int | None = None,
    early_signal: str | None = None,
    prior=None,
    **params,
) -> Policy:
    """Build policy ``name`` for a search's budget (R = ``max_epochs``, r = ``min_epochs``,
    η = ``eta``), ``seed`` and ``early_signal``, with ``params`` its own settings.

    The budget and what the user knows of their curves (``early_signal``, one of
    :data:`EARLY_SIGNALS`) are the search's: they are checked here, and each value goes to
    the policy only if its constructor takes it (a policy without rungs takes no η; one
    without randomness no seed; one that never judges by first epochs no early signal;
    None: the policy's default). What a constructor takes is read from its signature (and
    its ``params_class``), once per class, rather than declared again beside it. A setting
    the policy does not take is a one-line :class:`ConfigError`. ``prior`` (a
    :class:`PriorEvidence`: what a past search showed) goes to a policy that reads one.
    """
    if early_signal is not None:
        check_early_signal(early_signal)
    cls = resolve(name)
    budget = {"max_epochs": max_epochs, "min_epochs": min_epochs, "eta": eta, "seed": seed}
    budget["early_signal"] = early_signal
    budget["prior"] = prior  # a PriorEvidence, for a policy that reads one
    budget = {key: value for key, value in budget.items() if value is not None}
    check_budget(budget.get("max_epochs", math.inf), budget.get("min_epochs", 1), eta)
    takes = _keywords(cls)
    if takes is None:  # it takes any keyword
        return cls(**budget, **params)
    for key in params:
        if key not in takes:
            own = ", ".join(sorted(takes - _BUDGET)) or "none"
            raise ConfigError(f"policy {name!r} has no setting `{key}` (its settings: {own})")
    return cls(**{k: v for k, v in budget.items() if k in takes}, **params)


_BUDGET = frozenset({"max_epochs", "min_epochs", "eta", "seed", "early_signal", "params", "prior"})


@functools.cache
def _keywords(cls: type[Policy]) -> frozenset[str] | None:
    """The keywords ``cls``'s constructor takes: its signature's, and the fields of its
    ``params_class``; None when it takes any (``**kwargs`` and no ``params_class``)."""
    import dataclasses
    import inspect

    params = inspect.signature(cls).parameters.values()
    named = frozenset(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    if cls.params_class is not None:
        return named | {f.name for f in dataclasses.fields(cls.params_class)}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return named


for _name, _target in {
    "hypersched": "_hypersched:HyperSched",
    "hypersched-paper": "_hypersched_paper:HyperSchedPaper",
    "asha": "_asha:ASHA",
    "hyperband": "_hyperband:HyperBand",
    "random": "_random:RandomFIFO",
    "pop": "_pop:POP",
    "bandit": "_bandit:Bandit",
    "earlyterm": "_earlyterm:EarlyTerm",
    "hermes": "_hermes:Hermes",
    "fifo": "_fifo:FIFO",
    "rr": "_rr:RoundRobin",
    "slaq": "_slaq:SLAQ",
    "seer": "_seer:SEER",
}.items():
    register(_name, f"{__name__}.{_target}")
