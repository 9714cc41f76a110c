"""A replayed search held still at a chosen time: a test looks at it "while it runs".

:func:`halted_replay` builds what ``Experiment.replay`` builds, on a runtime that stops when
the simulated clock reaches ``at``: the driver's thread waits there, inside ``advance`` (so
outside the search's gate), until :meth:`Halt.release`. Between :meth:`Halt.wait` and
:meth:`Halt.release`, the search stands still in the middle of its run.
"""

from __future__ import annotations

import threading

from hypersched_nb.experiment.experiment import Experiment
from hypersched_nb.experiment.simulate import SimSettings, replayed
from hypersched_nb.sim.runtime import SimRuntime
from hypersched_nb.sim.trace import Trace

__all__ = ["Halt", "halted_replay"]


class Halt:
    """The simulator, stopped once when its clock reaches ``at``."""

    def __init__(self, inner: SimRuntime, at: float):
        self.inner, self.at = inner, at
        self._reached, self._released = threading.Event(), threading.Event()

    def workers(self) -> int:
        return self.inner.workers()

    def execute(self, instruction) -> None:
        self.inner.execute(instruction)

    def advance(self, until: float):
        if self._reached.is_set() or until < self.at:
            return self.inner.advance(until)
        events = self.inner.advance(self.at)
        if events:
            return events
        self._reached.set()  # the clock stands at `at`: nothing happened before it
        self._released.wait()
        return []

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until the search stands at ``at``."""
        return self._reached.wait(timeout)

    def release(self) -> None:
        self._released.set()


def halted_replay(
    trace: Trace, *, at: float, deadline: float, workers: int, policy: str = "asha", seed: int = 0
) -> tuple[Experiment, Halt]:
    """``Experiment.replay(trace, ...)`` whose search halts at ``at`` seconds."""
    sim = replayed(trace, seed, SimSettings(workers=workers, configs=len(trace.ids)))
    halt = Halt(sim.runtime, at)
    exp = Experiment._on(
        halt, sim.clock, sim.offered, metric=trace.metric_name, mode=trace.mode,
        deadline=deadline, max_epochs=sim.max_epochs, policy=policy, seed=seed,
        scaling=sim.scaling,
    )  # fmt: skip
    return exp, halt
