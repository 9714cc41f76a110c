"""The configurations a search tries first: ``Experiment(points_to_evaluate=...)``.

A user's model usually comes with a configuration that works: the one it trains with
today. Syne Tune's searchers try such a configuration first by default; Ray Tune's and
Optuna's take a list (``points_to_evaluate``, ``study.enqueue_trial``). Here:

- ``"defaults"`` (the default): the trainable's own ``defaults``, where its class declares
  them (a dict, as every example of :mod:`hypersched_nb.train.examples` does), for the
  parameters the space samples and where each lies in its distribution; the sampler draws
  the rest. A trainable without them, or a space given as a list of configurations, tries
  nothing first.
- a list of dicts: those, in order; a dict may name some parameters only (the sampler
  draws the others, as Optuna's ``enqueue_trial`` does). Each must name parameters the
  space samples, with values inside their distributions: anything else is a one-line
  :class:`~hypersched_nb.errors.ConfigError` saying what to change.
- ``[]`` or None: nothing first.

The points are resolved once, when the search's settings are made, and kept in its
journal's first line, so that a resumed search's sampler is asked exactly as the first one
was (see :class:`~hypersched_nb.experiment.space.OptunaSource`).

Example:
    >>> from optuna.distributions import FloatDistribution
    >>> class Model:
    ...     defaults = {"lr": 0.05, "momentum": 0.9, "batch_size": 64}
    >>> space = {"lr": FloatDistribution(1e-4, 1.0, log=True), "batch_size": [32, 128]}
    >>> first_points("defaults", trainable=Model, space=space)  # 64 is not a choice
    ({'lr': 0.05},)
    >>> first_points([{"lr": 3.0}], trainable=Model, space=space)
    Traceback (most recent call last):
    ...
    hypersched_nb.errors.ConfigError: `points_to_evaluate[0]['lr']` is 3.0, outside its distribution in the space (FloatDistribution(high=1.0, log=True, low=0.0001, step=None)): change it or widen the space
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

from hypersched_nb.errors import ConfigError
from hypersched_nb.experiment.space import split_space

__all__ = ["DEFAULTS", "first_points"]

DEFAULTS = "defaults"  # the trainable's own defaults first


def first_points(points, *, trainable, space) -> tuple[dict, ...]:
    """The configurations (parameter values) to offer first, checked against ``space``."""
    if points is None:
        return ()
    if points == DEFAULTS:
        return _defaults_of(trainable, space)
    if isinstance(points, (str, Mapping)) or not isinstance(points, (list, tuple)):
        raise ConfigError(
            f"`points_to_evaluate` is {points!r}, but must be 'defaults' (the trainable's), a "
            "list of dicts of parameter values to try first, or []"
        )
    if points and isinstance(space, (list, tuple)):
        raise ConfigError(
            "`points_to_evaluate` is given with a list of configurations, which are tried "
            "in their order: put these first in the list"
        )
    if not points or not isinstance(space, Mapping):  # none, or a reopened search's (no space)
        return tuple(dict(p) for p in points if isinstance(p, Mapping))
    sampled = _sampled(space)
    return tuple(_checked(i, point, sampled) for i, point in enumerate(points))


def _sampled(space: Mapping) -> dict:
    return split_space(space)[0]


def _defaults_of(trainable, space) -> tuple[dict, ...]:
    defaults = getattr(trainable, "defaults", None)
    if not isinstance(defaults, Mapping) or not isinstance(space, Mapping):
        return ()
    sampled = _sampled(space)
    point = {
        name: defaults[name]
        for name, d in sampled.items()
        if name in defaults and inside(d, defaults[name])
    }
    return (point,) if point else ()


def _checked(i: int, point, sampled: Mapping) -> dict:
    if not isinstance(point, Mapping):
        raise ConfigError(f"`points_to_evaluate[{i}]` is {point!r}, but must be a dict")
    for name, value in point.items():
        if name not in sampled:
            raise ConfigError(
                f"`points_to_evaluate[{i}]` names {name!r}, which the space does not sample "
                f"(it samples {', '.join(sampled) or 'nothing'})"
            )
        if not inside(sampled[name], value):
            raise ConfigError(
                f"`points_to_evaluate[{i}][{name!r}]` is {value!r}, outside its distribution "
                f"in the space ({sampled[name]}): change it or widen the space"
            )
    return dict(point)


def inside(distribution, value) -> bool:
    """Does ``value`` lie in the Optuna ``distribution`` (a choice of it, or a number in
    its range and on its step)?"""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    d = distribution
    if isinstance(d, CategoricalDistribution):
        return value in d.choices
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if not (math.isfinite(value) and d.low <= value <= d.high):
        return False
    if isinstance(d, IntDistribution) and float(value) != int(value):
        return False
    step = getattr(d, "step", None)
    steps = None if step is None else (value - d.low) / step
    return steps is None or math.isclose(steps, round(steps), abs_tol=1e-8)
