"""Should a past search's best regions be offered first? The measurement behind that choice.

    python benchmarks/prior_first.py [--seeds 10] [--always] [--first K] [--traces NAME,...]
        [--processes 2]

``benchmarks/prior_split.py``'s cells and settings (each trace split into two halves of its
configurations: the first half is the prior, the second the new search), except that
``hypersched +prior`` meets the new half's configurations in another order: best first, as
predicted from the prior. Each configuration's prediction is the mean, over its 5 nearest
configurations of the prior (each numeric parameter on a log scale where it spans over
a factor of 20, divided by its spread; a categorical one counts 1 where it differs), of the
metric those reached at the epoch one trial can reach by the deadline (the deadline, less
the prior's start-up, over its median epoch; a curve shorter than that counts its last
value; a diverged one, the worst value). The order is kept only where the prior predicts
itself: the rank correlation between each of its configurations' metric and its
prediction from the others must pass z = 1.645 over chance (rule 2's test); ``--always``
orders whatever that says; ``--first K`` puts only the K best predicted first (K = the
8 workers: the first wave) and leaves the rest in the seed's order. Nothing reads a
trace's name or family.

Only the offers' order changes: the policy, its evidence from the prior and the baselines
are ``prior_split.py``'s. The result, and why this is not (yet) a setting of the package,
is in RESULTS ("A past search as the prior").
"""

from __future__ import annotations

import sys

import numpy as np
import prior_split
from scipy.stats import spearmanr

import hypersched_nb.experiment.simulate as sim_module
from hypersched_nb.sim.trace import TRACE_KEY, Trace

NEAREST = 5
ALWAYS = "--always" in sys.argv
#: ``--first K``: only the K best predicted come first, the rest in the seed's own order
FIRST = int(sys.argv[sys.argv.index("--first") + 1]) if "--first" in sys.argv else 0
_PLAIN = prior_split.run_cell  # a cell as prior_split.py runs it


def predicted(prior: Trace, configs: list[dict], *, at: int, leave_out: bool = False) -> np.ndarray:
    """The metric ``configs`` are predicted to reach by epoch ``at`` (higher is better)."""
    ids = list(prior.ids)
    sign = 1.0 if prior.mode == "max" else -1.0
    reached = sign * np.array([prior.metrics[i][min(at, len(prior.metrics[i])) - 1] for i in ids])
    worst = np.nanmin(np.where(np.isfinite(reached), reached, np.nan))
    reached = np.where(np.isfinite(reached), reached, worst)
    distance = np.zeros((len(configs), len(ids)))
    for key in sorted({k for i in ids for k in prior.params[i]} - {TRACE_KEY}):
        theirs = [prior.params[i].get(key) for i in ids]
        ours = [c.get(key) for c in configs]
        try:
            a, b = np.array(theirs, dtype=float), np.array(ours, dtype=float)
        except (TypeError, ValueError):  # categorical: 1 where they differ
            distance += np.array(ours, dtype=object)[:, None] != np.array(theirs, dtype=object)
            continue
        both = np.concatenate([a, b])
        if np.all(both > 0) and both.max() / both.min() > 20:
            a, b, both = np.log(a), np.log(b), np.log(both)
        spread = np.std(both) or 1.0
        distance += ((b[:, None] - a[None, :]) / spread) ** 2
    if leave_out:
        np.fill_diagonal(distance, np.inf)
    nearest = np.argsort(distance, axis=1)[:, :NEAREST]
    return reached[nearest].mean(axis=1)


def predicts_itself(prior: Trace, at: int) -> bool:
    """The prior's configurations ranked by their prediction from the others agree with
    their own ranking, over chance at z = 1.645."""
    configs = [prior.params[i] for i in prior.ids]
    sign = 1.0 if prior.mode == "max" else -1.0
    own = sign * np.array([prior.metrics[i][min(at, len(prior.metrics[i])) - 1] for i in prior.ids])
    ok = np.isfinite(own)
    r = spearmanr(predicted(prior, configs, at=at, leave_out=True)[ok], own[ok]).correlation
    return bool(r > 1.645 / np.sqrt(ok.sum() - 1))


def run_cell(job: tuple) -> tuple:
    name, max_epochs, deadline, seed, policy = job
    past, _ = prior_split.halves(name, seed)
    if policy != prior_split.WITH:
        return _PLAIN(job)
    step = float(np.median(np.concatenate([past.seconds[i] for i in past.ids])))
    at = max(1, int((deadline - past.startup_seconds) / step))
    if not (ALWAYS or predicts_itself(past, at)):
        return _PLAIN(job)
    replayed = sim_module.replayed

    def best_first(trace, seed, settings):
        sim = replayed(trace, seed, settings)
        order = np.argsort(-predicted(past, sim.offered, at=at), kind="stable")
        first = [int(i) for i in order[: FIRST or len(order)]]
        rest = [i for i in range(len(order)) if i not in set(first)]
        sim.offered[:] = [sim.offered[i] for i in first + rest]
        return sim

    sim_module.replayed = best_first
    try:
        return _PLAIN(job)
    finally:
        sim_module.replayed = replayed


if __name__ == "__main__":
    if FIRST:
        del sys.argv[sys.argv.index("--first") : sys.argv.index("--first") + 2]
    sys.argv = [a for a in sys.argv if a != "--always"]
    prior_split.run_cell = run_cell  # what prior_split's pool runs (fork: the children see it)
    prior_split.main()
