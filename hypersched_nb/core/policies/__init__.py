"""Scheduling policies, one per module, and the name registry the benchmark and API use."""

from __future__ import annotations

import functools
import math

from hypersched_nb.core.policies._base import Policy, check_budget
from hypersched_nb.errors import ConfigError

__all__ = ["Policy", "check_budget", "REGISTRY", "create", "names"]

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
    **params,
) -> Policy:
    """Build policy ``name`` for a search's budget (R = ``max_epochs``, r = ``min_epochs``,
    η = ``eta``) and ``seed``, with ``params`` its own settings.

    The budget is the search's: it is checked here, and each value goes to the policy only
    if its constructor takes it (a policy without rungs takes no η; one without randomness
    no seed; None: the policy's default). What a constructor takes is read from its
    signature, once per class, rather than declared again beside it. A setting the policy
    does not take is a one-line :class:`ConfigError`.
    """
    cls = resolve(name)
    budget = {"max_epochs": max_epochs, "min_epochs": min_epochs, "eta": eta, "seed": seed}
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


_BUDGET = frozenset({"max_epochs", "min_epochs", "eta", "seed"})


@functools.cache
def _keywords(cls: type[Policy]) -> frozenset[str] | None:
    """The keywords ``cls``'s constructor takes; None when it takes any (``**kwargs``)."""
    import inspect

    params = inspect.signature(cls).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


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
