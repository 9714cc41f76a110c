"""s(k): how much faster one epoch runs on k workers than on one (a measured curve)."""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping

from hypersched_nb.errors import ConfigError

__all__ = ["ScalingCurve", "LINEAR", "NONE"]


class ScalingCurve:
    """Piecewise-linear speed-up curve through measured points, s(1) = 1.

    Between points s() is interpolated linearly; past the last point it stays flat (no
    speed-up is assumed that was not measured). ``ScalingCurve({2: 1.87, 4: 3.42, 8: 5.6})``
    is the ResNet-50/V100 profile of the HyperSched authors.
    """

    __slots__ = ("_ks", "_ss", "_cache")

    def __init__(self, points: Mapping[int | str, float] | None = None):
        pts = {1: 1.0}
        for k, s in (points or {}).items():
            try:
                k, s = _worker_count(k), float(s)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"scaling point {k!r}: {s!r} is not a worker count and a speed-up"
                ) from None
            if k < 1:
                raise ConfigError(f"scaling point {k} workers is not allowed; workers must be >= 1")
            if not s > 0:
                raise ConfigError(f"scaling s({k}) is {s}, but must be > 0")
            pts[k] = float(s)
        self._ks = sorted(pts)
        self._ss = [pts[k] for k in self._ks]
        self._cache: dict[int, float] = {}

    @classmethod
    def parse(cls, spec: str | Mapping | ScalingCurve | None) -> ScalingCurve:
        """From a curve, a mapping, a JSON object string or a named profile."""
        if isinstance(spec, ScalingCurve):
            return spec
        if spec is None:
            return cls()
        if isinstance(spec, str):
            if spec in PROFILES:
                return cls(PROFILES[spec])
            try:
                spec = json.loads(spec)
            except json.JSONDecodeError:
                raise ConfigError(
                    f"scaling {spec!r} is neither a JSON object nor one of {sorted(PROFILES)}"
                ) from None
        if not isinstance(spec, Mapping):
            raise ConfigError(f"scaling {spec!r} must map worker counts to speed-ups")
        return cls(spec)

    def __call__(self, k: int) -> float:
        """Speed-up on ``k`` workers (0 workers: 0)."""
        s = self._cache.get(k)
        if s is None:
            s = self._cache[k] = self._interpolate(k)
        return s

    def _interpolate(self, k: float) -> float:
        if k <= 0:
            return 0.0
        ks, ss = self._ks, self._ss
        if k >= ks[-1]:
            return ss[-1]
        i = bisect.bisect_right(ks, k)
        k0, k1, s0, s1 = ks[i - 1], ks[i], ss[i - 1], ss[i]
        return s0 + (s1 - s0) * (k - k0) / (k1 - k0)

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self._ks, self._ss, strict=True))

    def __repr__(self) -> str:
        return f"ScalingCurve({self.as_dict()})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ScalingCurve) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self._ks) + tuple(self._ss))


def _worker_count(k) -> int:
    """``k`` as a whole number of workers (``"2"`` from JSON is fine, ``2.5`` is not)."""
    n = int(k)
    if isinstance(k, float) and n != k:
        raise ValueError(k)
    return n


#: Named profiles (measured V100 speed-ups published by the HyperSched authors).
PROFILES: dict[str, dict[int, float]] = {
    "none": {1: 1.0},
    "linear": {1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0, 16: 16.0, 32: 32.0, 64: 64.0},
    "resnet50-v100": {2: 1.87, 4: 3.42, 8: 5.60},
    "resnet18-v100": {2: 1.85, 4: 3.43, 8: 5.40},
    "resnet101-v100": {2: 1.89, 4: 3.63, 8: 6.67},
    "imagenet-resnet50-v100": {2: 1.77, 4: 2.93, 8: 4.29},
}
NONE = ScalingCurve()
LINEAR = ScalingCurve(PROFILES["linear"])
