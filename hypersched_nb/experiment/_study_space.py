"""The search space of a study: the Optuna distributions its trials' parameters come from.

A search asked of a dict of Optuna distributions has them as they were given; a list of
configurations (what a replayed trace offers, or a user's list) has none, so they are read
off the list: a name whose values are all whole numbers is an :class:`IntDistribution`,
all numbers a :class:`FloatDistribution` (both on a log scale when every value is positive
and the largest is at least 100 times the smallest, as learning rates and weight decays
are), anything else a :class:`CategoricalDistribution` of the values seen (a value that is
not None, a bool, a number or a string is written as its JSON text). A name with one value
in every configuration is a fixed setting, not a parameter, as in a dict space.

Example:
    >>> space = inferred([{"lr": 0.001, "width": 16, "act": "relu", "seed": 1},
    ...                   {"lr": 0.1, "width": 64, "act": "tanh", "seed": 1}])
    >>> space.distributions["lr"]
    FloatDistribution(high=0.1, log=True, low=0.001, step=None)
    >>> space.distributions["width"], space.fixed
    (IntDistribution(high=64, log=False, low=16, step=1), {'seed': 1})
    >>> space.distributions["act"].choices
    ('relu', 'tanh')
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Space", "inferred", "of_space", "param_value"]

_LOG_RATIO = 100.0  # max / min from which numbers are read as spread on a log scale
_CHOICE = (type(None), bool, int, float, str)


@dataclass(frozen=True)
class Space:
    """The distributions of the searched parameters, and the settings every trial shares."""

    distributions: Mapping = field(default_factory=dict)
    fixed: Mapping = field(default_factory=dict)


def of_space(space) -> Space | None:
    """The :class:`Space` of what a search was asked to search: a dict (distributions,
    lists of choices and fixed values) or a list of configurations; None for anything else
    (an iterator: what it offered is known only from the trials)."""
    from optuna.distributions import BaseDistribution, CategoricalDistribution

    if isinstance(space, Mapping):
        dists, fixed = {}, {}
        for name, spec in space.items():
            if isinstance(spec, BaseDistribution):
                dists[name] = spec
            elif isinstance(spec, list):
                dists[name] = CategoricalDistribution([param_value(v) for v in spec])
            else:
                fixed[name] = spec
        return Space(dists, fixed)
    if isinstance(space, (list, tuple)):
        return inferred(space)
    return None


def inferred(configs: Iterable[Mapping]) -> Space:
    """The :class:`Space` read off a list of configurations (see the module's docstring)."""
    configs = list(configs)
    seen: dict[str, list] = {}
    for config in configs:
        for name, value in config.items():
            seen.setdefault(name, []).append(value)
    dists, fixed = {}, {}
    for name, values in seen.items():
        distinct = _distinct(values)
        if len(distinct) == 1 and len(values) == len(configs):  # the same in every one
            fixed[name] = values[0]
        else:
            dists[name] = _distribution(distinct)
    return Space(dists, fixed)


def param_value(value):
    """``value`` as a parameter of a study holds it: a number, a string, a bool or None as
    it is, anything else as its JSON text."""
    if isinstance(value, _CHOICE):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _distinct(values: list) -> list:
    out, keys = [], set()
    for v in values:
        key = param_value(v)
        marker = (type(key).__name__, key)
        if marker not in keys:
            keys.add(marker)
            out.append(key)
    return out


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _distribution(values: list):
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if all(_number(v) for v in values):
        low, high = min(values), max(values)
        log = low > 0 and high >= _LOG_RATIO * low
        if all(isinstance(v, int) for v in values):
            return IntDistribution(low, high, log=log)
        return FloatDistribution(float(low), float(high), log=log)
    return CategoricalDistribution(values)
