"""The weights of the search's best results, kept apart so that the best model can be
loaded after the search.

Each epoch goes out with the bar it must clear (:meth:`BestWeights.bar`: the best metric
whose weights are kept when it was sent); rank 0 writes the weights of an epoch that clears
it (see :mod:`hypersched_nb.runtime._worker_io`), and the client offers them here when the
epoch is reported. The last two records stay, older ones are deleted: the last may come just
after the deadline, and the search's best is then the one before. A batch halted at a
boundary may have written weights for epochs it never reported; :meth:`BestWeights.prune`
deletes them when the search ends.

Written in the background: the record of an epoch's weights comes with no checksum, and
is completed when its worker says they are written (:meth:`BestWeights.written`, on the
client's IO thread). :meth:`BestWeights.best` answers only with weights that are written:
it waits for the record it names (up to ``wait`` seconds), so the best it names is always
the best the search reported, metric and all. If they never come (their worker died, the
write failed), it says so and names the best before it whose weights are written.
"""

from __future__ import annotations

import dataclasses
import threading
import time

from hypersched_nb.errors import warn
from hypersched_nb.runtime._best_writer import pending
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
    is better, -1 when smaller is; ``wait`` bounds how long :meth:`best` waits for weights
    still being written."""

    def __init__(self, metric: str, sign: float, *, wait: float = 120.0):
        self.metric, self.sign, self.wait = metric, sign, wait
        self._kept: list[BestCheckpoint] = []  # oldest first, at most 2
        self._done = threading.Condition()  # guards _kept: written() comes on the IO thread
        self._early: dict[str, dict] = {}  # url -> written event heard before its epoch

    def bar(self) -> BestBar:
        """What the next epoch's metric must beat for its weights to be written."""
        with self._done:
            above = self.sign * self._kept[-1].metric if self._kept else None
        return BestBar(self.metric, self.sign, above)

    def offer(self, trial_id: int, written: Checkpoint, metric: float) -> None:
        """Keep weights written (or being written) for a record; drop them if another
        trial's beat them since."""
        with self._done:
            early = self._early.pop(written.url, None)
            if self._kept and self.sign * metric <= self.sign * self._kept[-1].metric:
                remove_checkpoint(written.url)  # one still being written: prune() deletes it
                return
            self._kept.append(BestCheckpoint.of(written, trial_id=trial_id, metric=metric))
            if len(self._kept) > 2:
                remove_checkpoint(self._kept.pop(0).url)
        if early is not None:
            self.written(early)

    def written(self, event: dict) -> None:
        """A worker says the weights at ``event["best_written"]`` are written (their
        checksum and size) or are not (``event["error"]``); on the client's IO thread."""
        url = event["best_written"]
        with self._done:
            at = next((i for i, k in enumerate(self._kept) if k.url == url and pending(k)), None)
            if at is None:  # its epoch's report may come after this event
                self._early[url] = event
                return
            if event.get("error") is None:
                self._kept[at] = dataclasses.replace(self._kept[at], sha256=event["sha256"])
            else:
                if not event["error"].startswith("superseded"):  # beaten before written: quiet
                    warn(f"the best weights of {url} could not be written ({event['error']})")
                self._kept.pop(at)
            self._done.notify_all()

    def adopt(self, kept: BestCheckpoint) -> None:
        """Keep weights found on disk (a resumed search's) if they beat the last kept."""
        with self._done:
            if not self._kept or self.sign * kept.metric > self.sign * self._kept[-1].metric:
                self._kept = [*self._kept[-1:], kept]

    def prune(self, directory: str) -> None:
        """Delete every best's weights under ``directory`` but the records kept (after
        those being written are, up to ``wait`` seconds)."""
        with self._done:
            self._done.wait_for(lambda: not any(pending(k) for k in self._kept), self.wait)
            keep = {kept.url for kept in self._kept}
        prune_bests(directory, keep)

    def best(self, at_most: float | None = None) -> BestCheckpoint | None:
        """The last record kept, or with ``at_most`` the last whose metric is not better
        than that; None if there is none. Weights still being written are waited for."""
        end = time.monotonic() + self.wait
        with self._done:
            while True:
                found = self._find(at_most)
                if found is None or not pending(found):
                    return found
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._done.wait(min(left, 1.0))
            warn(
                f"the weights of trial {found.trial_id}'s epoch {found.epoch} were not written "
                f"within {self.wait:g} s (its worker may have died): the best before is named"
            )
            self._kept.remove(found)
            return self._find(at_most)

    def _find(self, at_most: float | None) -> BestCheckpoint | None:
        for kept in reversed(self._kept):
            if at_most is None or self.sign * kept.metric <= self.sign * at_most:
                return kept
        return None
