"""The weights of the search's best results, kept apart so that the best model can be
loaded after the search.

Each epoch goes out with the bar it must clear (:meth:`BestWeights.bar`: the best metric
whose weights are kept when it was sent); rank 0 writes the weights of an epoch that clears
it (see :mod:`hypersched_nb.runtime._worker_io`), and the client offers them here when the
epoch is reported. The last two records stay, older ones are deleted: the last may come just
after the deadline, and the search's best is then the one before. A batch halted at a
boundary may have written weights for epochs it never reported; :meth:`BestWeights.prune`
deletes them when the search ends.
"""

from __future__ import annotations

from hypersched_nb.runtime._messages import BestBar
from hypersched_nb.runtime.checkpoint import (
    BestCheckpoint,
    Checkpoint,
    prune_bests,
    remove_checkpoint,
)

__all__ = ["BestWeights"]


class BestWeights:
    """Records of ``metric``'s best values and their weights; ``sign`` is +1 when larger
    is better, -1 when smaller is."""

    def __init__(self, metric: str, sign: float):
        self.metric, self.sign = metric, sign
        self._kept: list[BestCheckpoint] = []  # oldest first, at most 2

    def bar(self) -> BestBar:
        """What the next epoch's metric must beat for its weights to be written."""
        above = self.sign * self._kept[-1].metric if self._kept else None
        return BestBar(self.metric, self.sign, above)

    def offer(self, trial_id: int, written: Checkpoint, metric: float) -> None:
        """Keep weights written for a record; drop them if another trial's beat them since."""
        if self._kept and self.sign * metric <= self.sign * self._kept[-1].metric:
            remove_checkpoint(written.url)
            return
        self._kept.append(BestCheckpoint.of(written, trial_id=trial_id, metric=metric))
        if len(self._kept) > 2:
            remove_checkpoint(self._kept.pop(0).url)

    def adopt(self, kept: BestCheckpoint) -> None:
        """Keep weights found on disk (a resumed search's) if they beat the last kept."""
        if not self._kept or self.sign * kept.metric > self.sign * self._kept[-1].metric:
            self._kept = [*self._kept[-1:], kept]

    def prune(self, directory: str) -> None:
        """Delete every best's weights under ``directory`` but the records kept."""
        prune_bests(directory, {kept.url for kept in self._kept})

    def best(self, at_most: float | None = None) -> BestCheckpoint | None:
        """The last record kept, or with ``at_most`` the last whose metric is not better
        than that; None if there is none."""
        for kept in reversed(self._kept):
            if at_most is None or self.sign * kept.metric <= self.sign * at_most:
                return kept
        return None
