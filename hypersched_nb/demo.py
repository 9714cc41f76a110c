"""The main job: ``python -m hypersched_nb demo``.

A real deadline-aware search (HyperSched by default) of a small CNN on scikit-learn's
digits (offline), on the default local Dask cluster, within a deadline of two minutes.
It prints its progress on one line (rewritten in place on a terminal, a plain line every
``--every`` seconds otherwise), then the best configuration and metric, and writes a
self-contained HTML report of the workers each trial held against the deadline and the
learning curves. Ctrl-C stops the search gracefully and still reports.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

__all__ = ["main"]

#: the demo's ``--model`` names and the example trainables they name (in
#: ``hypersched_nb.train.examples``, imported only to run: ``--help`` needs no torch)
MODELS = {
    "digits": "DigitsCNN",
    "digits-mlp": "DigitsMLP",
    "mnist1d": "MNIST1DCNN",
    "mnist1d-cosine": "MNIST1DCosine",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m hypersched_nb demo",
        description="A real deadline-aware search of a small CNN on scikit-learn's digits, on a local Dask cluster.",
    )
    p.add_argument(
        "--deadline", default="2m", help="a budget ('2m', '90s') or a time ('17:00'); default 2m"
    )
    p.add_argument("--policy", default="hypersched", help="scheduling policy (default: hypersched)")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        help="local worker processes (default: one per GPU, or min(cores, 4))",
    )
    where.add_argument(
        "--address", help="use the Dask scheduler at this address instead of a local cluster"
    )
    p.add_argument(
        "--model",
        choices=tuple(MODELS),
        default="digits",
        help="example trainable (default: digits; digits-mlp trains a perceptron with AdamW and "
        "a step schedule; mnist1d-cosine anneals its learning rate over --max-epochs)",
    )
    p.add_argument(
        "--max-epochs", type=int, default=30, help="epochs a trial may train (default: 30)"
    )
    p.add_argument("--eta", type=float, default=4)
    p.add_argument("--sampler", default="tpe", help="tpe, random or qmc (default: tpe)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--report", help="where the HTML report goes (default: in the run's folder)")
    p.add_argument(
        "--every",
        type=float,
        default=10.0,
        help="seconds between progress lines when not on a terminal",
    )
    return p


def _check(args) -> None:
    """The demo's own options (the search's are checked by ``Experiment``): one-line errors
    before anything starts, rather than after the search."""
    from hypersched_nb.errors import ConfigError

    if not (math.isfinite(args.every) and args.every >= 0):
        raise ConfigError(f"`--every` is {args.every}, but must be a number of seconds >= 0")
    report = args.report
    if report is not None and (not report.strip() or Path(report).is_dir()):
        raise ConfigError(
            f"`--report` is {report!r}, but must be the path of an HTML file (like report.html)"
        )


class _Progress:
    """One line: rewritten in place on a terminal, printed every ``every`` seconds elsewhere."""

    def __init__(self, stream, every: float):
        self.stream, self.every = stream, every
        self.tty = stream.isatty()
        self._last, self._line = -1e9, ""

    def show(self, line: str, *, force: bool = False) -> None:
        if line == self._line and not self.tty:
            return
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r" + line[:width] + "\x1b[K")
            self.stream.flush()
        elif force or time.monotonic() - self._last >= self.every:
            self.stream.write(line + "\n")
            self.stream.flush()
            self._last, self._line = time.monotonic(), line

    def end(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def search_space(name: str, max_epochs: int) -> tuple[type, dict]:
    """The example trainable called ``name`` and its search space; ``mnist1d-cosine``'s
    schedule spans the search's epoch budget, with its warm-up shorter than it."""
    from optuna.distributions import IntDistribution

    from hypersched_nb.train import examples

    model = getattr(examples, MODELS[name])
    space = model.space()
    if model is examples.MNIST1DCosine:
        warmup = IntDistribution(0, max(0, min(space["warmup_epochs"].high, max_epochs - 1)))
        space |= {"warmup_epochs": warmup, "budget_epochs": max_epochs}
    return model, space


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # keep the one progress line readable: Dask's own chatter goes to ERROR, here and in workers
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    warnings.filterwarnings("ignore", message=r"Port \d+ is already in use")

    from hypersched_nb.errors import HyperschedError
    from hypersched_nb.experiment.experiment import Experiment
    from hypersched_nb.notebook.report import write_report

    t0 = time.monotonic()
    try:
        _check(args)
        model, space = search_space(args.model, args.max_epochs)
        exp = Experiment(
            model, space, metric="val_acc", mode="max", deadline=args.deadline,
            max_epochs=args.max_epochs, eta=args.eta, policy=args.policy,
            cluster=args.workers if args.address is None else args.address,
            sampler=args.sampler, seed=args.seed,
        )  # fmt: skip
    except HyperschedError as exc:
        print(f"hypersched_nb demo: {exc}", file=sys.stderr)
        return 2
    where = args.address or "a local Dask cluster"
    print(
        f"{args.policy} search of {model.__name__} ({args.model}, offline) on {where}; deadline {args.deadline}"
    )
    progress = _Progress(sys.stdout, args.every)
    progress.show("starting the cluster ...", force=True)
    interrupted = False
    try:
        try:
            exp.start()
        except HyperschedError as exc:  # no scheduler answers at --address: one line
            progress.end()
            print(f"hypersched_nb demo: {exc}", file=sys.stderr)
            return 2
        while not exp.wait(0.5):
            progress.show(exp.statistics().progress_line())
    except KeyboardInterrupt:
        interrupted = True
        progress.show("stopping (Ctrl-C) ...", force=True)
        if exp.statistics().status != "created":
            exp.stop()
    snap = exp.statistics()
    progress.show(snap.progress_line(), force=True)
    progress.end()
    print(
        f"{len(snap.trials)} trials in {time.monotonic() - t0:.0f} s wall time ({'stopped by Ctrl-C' if interrupted else snap.status})"
    )
    if snap.best is None:
        print("no trial finished an epoch before the deadline; try a later --deadline")
    else:
        b = snap.best
        print(
            f"best {snap.metric} = {b.metric:.4f} (trial {b.trial_id}, epoch {b.epoch}), configuration:"
        )
        for k, v in b.config.items():
            print(f"  {k} = {v:.4g}" if isinstance(v, float) else f"  {k} = {v}")
        weights = exp.best_checkpoint()
        if weights is not None:  # exp.load_best() gives the trainable with them loaded
            print(f"its weights: {weights.url}")
    if snap.status == "created":
        return 1
    target = Path(args.report) if args.report else Path(exp.checkpoint_dir) / "report.html"
    path = write_report(snap, target, title=f"hypersched_nb demo: {args.policy} on {args.model}")
    print(f"report: {path.resolve()}")
    return 0 if snap.best is not None else 1


if __name__ == "__main__":
    sys.exit(main())
