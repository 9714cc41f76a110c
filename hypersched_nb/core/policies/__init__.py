"""Scheduling policies, one per module, and the name registry the benchmark and API use."""

from __future__ import annotations

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
        raise ConfigError(f"policy {name!r} is unknown; choose one of {', '.join(REGISTRY)}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def create(name: str, **params) -> Policy:
    """Build policy ``name``. Every policy takes ``max_epochs``, ``min_epochs``, ``eta`` and
    ``seed``; other keywords go to that policy's own parameters."""
    return resolve(name)(**params)


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
