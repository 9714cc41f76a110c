"""HyperSched's research knobs, in one frozen object that checks itself.

The search's budget (R = ``max_epochs``, r = ``min_epochs``, η = ``eta``) is the search's,
not the policy's, and is not here. Everything else the default policy can be told is, with
the paper's defaults where the paper has one; each field names the rule it belongs to (the
rules are :mod:`._hypersched`'s module docstring). A bad value is a one-line
:class:`~hypersched_nb.errors.ConfigError` naming the field and what it must be, when the
object is made: before any search starts.

Example:
    >>> HyperSchedParams().probation, HyperSchedParams(early_signal="trust").probation_rungs
    (1, 0)
    >>> HyperSchedParams(probation_pairs=3)
    Traceback (most recent call last):
    ...
    hypersched_nb.errors.ConfigError: `probation_pairs` is 3, but must be >= 4
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hypersched_nb.core.policies._base import at_least, check_early_signal
from hypersched_nb.core.policies._reallocation import Reallocation, startup_sample
from hypersched_nb.errors import ConfigError

__all__ = ["HyperSchedParams"]


@dataclass(frozen=True, slots=True)
class HyperSchedParams:
    """The default policy's settings; see the module docstring."""

    # rule 1: judge each rung once, pause
    pause: bool = True  # False: stop instead
    min_peers: int = 1  # values a rung needs before it judges (ASHA: 1; the paper: 2)
    confirm_peers: int | None = None  # a pass with this many peers or fewer is confirmed
    # once more (None: η − 1, or 0 when told to trust: every pass final, as in ASHA)
    promote: bool = False  # also resume a paused trial whose value rose into the top 1/η
    # rule 2: which rungs judge
    early_signal: str = "auto"  # "auto" (tentative verdicts), "trust" (no probation), "doubt"
    audit: int | None = None  # "auto": one trial in this many (None: η) trains untested to
    # the next rung while the lowest is in doubt and its test could still act; the others
    # are judged there tentatively
    probation: int = 1  # the lowest rungs that must earn trust (unless early_signal="trust")
    probation_pairs: int = 8  # tested at this many pairs, then at twice as many …
    probation_z: float = 1.645  # … and trusted when the AUC is this many standard errors
    probation_floor: float = 0.5  # above this (chance)
    pause_stalled: bool = True  # in doubt, pause a trial whose first epoch past the lowest
    # rung gains nothing on it (it is not learning: the test's epochs are wasted on it)
    # rule 3: breadth or depth
    depth_threshold: float = 1.0  # depth above this ratio
    depth_window: int = 64  # the latest trials past the judging rung whose gains count
    # rule 4: admission by reach
    breadth_reach: float = 2.0  # a new trial must reach this many times the judging epoch
    startup_percentile: float = 90  # O, the start-up overhead (the paper's)
    # rule 5: exploitation (the paper's reallocation)
    focus: bool = True  # in depth, pause a trial outside the running top 1/η for a leader
    split: str = "uniform"  # or "top_job"
    grow_threshold: float = 1.1  # the benefit test's threshold
    recharge: int = 5  # results since a (re)start before a trial may grow
    max_workers_per_trial: int | None = None  # None: any

    def __post_init__(self) -> None:
        check_early_signal(self.early_signal)
        at_least(min_peers=(self.min_peers, 1), confirm_peers=(self.confirm_peers, 0))
        at_least(audit=(self.audit, 1))
        at_least(probation=(self.probation, 0), probation_pairs=(self.probation_pairs, 4))
        at_least(probation_z=(self.probation_z, 0), depth_threshold=(self.depth_threshold, 0))
        at_least(depth_window=(self.depth_window, 2), breadth_reach=(self.breadth_reach, 1))
        if not 0 <= self.probation_floor < 1:
            raise ConfigError(
                f"`probation_floor` is {self.probation_floor}, but must be in [0, 1) (an AUC)"
            )
        startup_sample(self.startup_percentile)  # in [0, 100]
        self.reallocation()  # split, grow_threshold, recharge, max_workers_per_trial

    @classmethod
    def of(cls, params: HyperSchedParams | None = None, /, **settings) -> HyperSchedParams:
        """``params`` (default: the defaults) with ``settings`` changed; a setting that is
        not a field is a one-line error naming the fields."""
        known = {f.name for f in dataclasses.fields(cls)}
        for name in settings:
            if name not in known:
                raise ConfigError(
                    f"hypersched has no setting `{name}` (its settings: {', '.join(sorted(known))})"
                )
        return dataclasses.replace(params or cls(), **settings)

    @property
    def probation_rungs(self) -> int:
        """How many of the lowest rungs start on probation: none when told to trust."""
        return 0 if self.early_signal == "trust" else self.probation

    def confirm(self, eta: float, early_signal: str | None = None) -> int:
        """``confirm_peers``; by default η − 1, or 0 under ``early_signal`` (this object's
        unless given) ``"trust"``: the user who trusts the first epochs gets ASHA's verdicts,
        every pass final however few its peers."""
        if self.confirm_peers is not None:
            return self.confirm_peers
        return 0 if (early_signal or self.early_signal) == "trust" else int(eta) - 1

    def reallocation(self) -> Reallocation:
        """Rule 5's reallocation, with these settings (checked)."""
        return Reallocation(
            self.split, self.grow_threshold, self.recharge, self.max_workers_per_trial
        )
