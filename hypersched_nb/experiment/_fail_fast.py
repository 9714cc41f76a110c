"""Fail fast: a search whose first trials all fail the same way is a mistake, not bad luck.

A wrong metric name, a ``setup`` that raises, a missing file: every trial fails with the
same error, and a search left to run would fail thousands of them until its deadline. Ray
Tune's ``fail_fast`` stops a search at its first failure; this rule waits for the first
``threshold`` trials to end, and stops the search only if they all failed with the same
error (the last line of each trial's error). One trial that ends otherwise, or two errors
that differ, and the rule says nothing again for the rest of the search. A search that ends
before ``threshold`` trials have (fewer configurations, or an early deadline), each of them
failed with the same error, failed too: it ran nothing that worked.
"""

from __future__ import annotations

from hypersched_nb.core.trial import Trial, TrialEnding
from hypersched_nb.errors import HyperschedError

__all__ = ["FailFast", "SearchFailed"]


class SearchFailed(HyperschedError):
    """The search stopped because its trials fail the same way; the message says how."""


class FailFast:
    """Hears how each trial ended; :meth:`heard` returns the reason to stop the search,
    once, when the first ``threshold`` endings are failures with one error (None: never)."""

    def __init__(self, threshold: int | None):
        self.threshold = threshold
        self._errors: list[str] = []
        self._decided = threshold is None

    def heard(self, trial: Trial, ending: TrialEnding) -> str | None:
        if self._decided:
            return None
        if ending is not TrialEnding.FAILED:
            self._decided = True  # the code runs: later failures are the trials' own
            return None
        self._errors.append(_last_line(trial.error))
        if len(self._errors) < self.threshold:
            return None
        self._decided = True
        if len(set(self._errors)) > 1:
            return None
        return (
            f"the first {self.threshold} trials all failed with the same error, so the search "
            f"stopped (fail_fast={self.threshold}): {self._errors[0]}"
        )

    def at_end(self) -> str | None:
        """At the search's end: the reason it failed, where every trial that ended failed with
        one error before ``threshold`` of them could (None: it did not)."""
        if self._decided or not self._errors or len(set(self._errors)) > 1:
            return None
        count = len(self._errors)
        what = "its only trial failed" if count == 1 else (
            f"all {count} of its trials failed with the same error"
        )  # fmt: skip
        return f"{what}, and no other ran (fail_fast={self.threshold}): {self._errors[0]}"


def _last_line(error: str | None) -> str:
    lines = [line for line in (error or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no error message"
