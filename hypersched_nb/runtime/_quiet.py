"""Distributed's warnings about the epoch tasks a search cancels on purpose, kept quiet.

When a local cluster closes, each worker cancels the epoch tasks still running on it and
logs, for each, ``Async instruction for <Task cancelled name="execute('hs-epoch-…')" …>
ended with CancelledError``. The worker processes write to the kernel's stderr, so these
land in the notebook at the end of every search. :class:`QuietCancellations`, registered as
a worker plugin, filters exactly those records (a cancelled task of this package, whose keys
begin with ``hs-``) out of the worker's state-machine logger; every other record still shows.

Closing a local cluster the search started also makes this process's scheduler and nannies
log what a close does on purpose: a worker "removed" with results still in memory, and a
worker process killed because it was still finishing an epoch after 4 s.
:func:`closing_quietly` drops exactly those two records, in this process, while the cluster
closes.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["QuietCancellations", "closing_quietly", "is_expected_cancellation"]

LOGGER = "distributed.worker.state_machine"


def is_expected_cancellation(message: str) -> bool:
    """Whether ``message`` is the warning about one of this package's tasks cancelled."""
    return (
        message.startswith("Async instruction for <Task cancelled")
        and "execute('hs-" in message
        and message.endswith("ended with CancelledError")
    )


class _Filter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not is_expected_cancellation(record.getMessage())


class QuietCancellations(WorkerPlugin):
    """A worker plugin: the filter on the worker's logger from setup to teardown (a worker
    cancels its tasks before it tears its plugins down)."""

    name = "hypersched-quiet-cancellations"

    def setup(self, worker) -> None:
        self._filter = _Filter()
        logging.getLogger(LOGGER).addFilter(self._filter)

    def teardown(self, worker) -> None:
        logging.getLogger(LOGGER).removeFilter(self._filter)


_CLOSING = {  # logger: what it says of a worker that a close takes down on purpose
    "distributed.scheduler": ("Removing worker", "lose already computed task"),
    "distributed.nanny": ("Worker process still alive after", "killing"),
}


class _ClosingFilter(logging.Filter):
    def __init__(self, start: str, part: str):
        super().__init__()
        self.start, self.part = start, part

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith(self.start) and self.part in message)


@contextmanager
def closing_quietly():
    """Within the block (a local cluster's close), the scheduler's and the nannies' records
    of the workers the close takes down are dropped; every other record shows."""
    added = [(logging.getLogger(name), _ClosingFilter(*words)) for name, words in _CLOSING.items()]
    for logger, f in added:
        logger.addFilter(f)
    try:
        yield
    finally:
        for logger, f in added:
            logger.removeFilter(f)
