"""Can the forecast weigh "trust epoch 1 now" against "test it first"? (issues 11 and 12)

    python benchmarks/weigh_early_signal.py [--traces digits-cnn,...] [--seeds 10] [--runs 32]
                                            [--workers 8] [--jobs 2]

On each trace (the three recorded ones and the LCBench traces of ``../shared/traces``; an
absent one is skipped with a note), for seeds 0-9, the simulated ``hypersched`` search of
``benchmarks/forecast_calibration.py`` (deadline D = one configuration's median full training
on one worker, 8 workers) is halted at D/4 and at D/2. There two forecasts of the best by D
are made, one with the policy's clones told ``early_signal="trust"`` and one told
``"doubt"``, and the search is run on to D three ways from the same point: as it stands,
told to trust, told to doubt.

Printed per trace and moment: the mean real best by D as it stands, told each word, and
following the forecast's pick (the word whose forecast expects more; neither, the search as
it stands, when the two forecasts are the same); how often the pick was the word that really
did better, over the cases where the two differ by more than 0.005; and the picks.
A policy that weighs the two with the forecast can be no better than "the pick" column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from forecast_calibration import FRACTIONS, Case, run_cases, search

from hypersched_nb.experiment.driver import Driver
from hypersched_nb.experiment.forecast import detach, forecast, offers_left
from hypersched_nb.sim.trace import load_trace

WORDS = ("trust", "doubt")
TIE = 0.005


@dataclass(frozen=True, slots=True)
class Weighed:
    """One case: each word's forecast of the best by D, and the real bests by D."""

    case: Case
    expected: dict[str, float]  # word -> the forecast's expected best
    real: dict[str, float]  # "as is" or word -> the real best

    def pick(self) -> str:
        """The word whose forecast expects more, or "as is" when they expect the same."""
        trust, doubt = self.expected["trust"], self.expected["doubt"]
        return "as is" if trust == doubt else "trust" if trust > doubt else "doubt"


def weigh(case: Case) -> Weighed:
    trace = load_trace(case.trace)
    expected: dict[str, float] = {}

    def look(driver: Driver) -> None:
        standing = detach(
            driver, now=driver.clock.now(), offers_left=offers_left(driver._inputs.offers)
        )
        for word in WORDS:
            told = forecast(standing, runs=case.runs, seed=case.seed, early_signal=word)
            expected[word] = told.outlooks[0].expected

    real = {"as is": search(trace, case, on_pause=look)}
    for word in WORDS:
        real[word] = search(
            trace, case, on_pause=lambda driver, w=word: driver.policy.tell_early_signal(w)
        )
    return Weighed(case, expected, real)


def report(rows: list[Weighed], name: str, fraction: float) -> str:
    mine = [r for r in rows if name in ("pooled", r.case.trace) and r.case.fraction == fraction]
    mean = {k: np.mean([r.real[k] for r in mine]) for k in ("as is", *WORDS)}
    picked = np.mean([r.real[r.pick()] for r in mine])
    apart = [r for r in mine if abs(r.real["trust"] - r.real["doubt"]) > TIE]
    right = sum(r.pick() == max(WORDS, key=r.real.__getitem__) for r in apart)
    picks = [sum(r.pick() == k for r in mine) for k in ("trust", "doubt", "as is")]
    return (
        f"{name:16s} {fraction:4.2f} {mean['as is']:8.4f} {mean['trust']:8.4f} "
        f"{mean['doubt']:8.4f} {picked:8.4f}   {right:3d} of {len(apart):<3d}   "
        + " / ".join(f"{n:2d}" for n in picks)
    )


def main() -> None:
    _, traces, rows = run_cases(__doc__, weigh, policy="hypersched")
    print("mean real best by the deadline, from the moment on: as the search stands, told each")
    print(
        f"word, or following the forecast's pick; right: picks of the better word (apart > {TIE})"
    )
    print(
        f"{'trace':16s} {'at':>4s} {'as is':>8s} {'trust':>8s} {'doubt':>8s} {'pick':>8s}"
        "   right        picked trust / doubt / neither (the same forecast)"
    )
    for name in [*traces, "pooled"]:
        for f in FRACTIONS:
            print(report(rows, name, f))


if __name__ == "__main__":
    main()
