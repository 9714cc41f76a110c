"""``%hypersched``: start, watch, re-time and stop a search from a notebook line.

::

    %load_ext hypersched_nb
    %hypersched start DigitsCNN --metric val_acc --deadline 2m --workers 2 --max-epochs 30
    %hypersched start DigitsCNN --deadline 2m --prior last
    %hypersched status
    %hypersched deadline +10m
    %hypersched forecast +10m --workers 8
    %hypersched forecast --early-signal trust
    %hypersched wait
    %hypersched stop
    %hypersched resume hypersched-runs/20261125-101500-4242
    %hypersched compare hypersched-runs/20261125-101500-4242 hypersched-runs/20261126-093000-77

``start`` takes a trainable (a name in the notebook, a shipped example such as
``DigitsCNN`` without an import, or ``module:Class``) or an ``Experiment`` the notebook
already built (started or not: a running one is followed); once it runs, it binds a new
experiment to ``exp`` (``--name``) and shows the dashboard. While a search started here
runs, another ``start`` is refused and changes nothing. ``wait`` blocks until the end with
the dashboard's controls still live. ``resume PATH`` goes on with a search whose kernel
died, from its checkpoint folder (its journal), and binds it as ``start`` does.
``compare PATH...`` shows searches side by side (a table, and the best so far of each
against time: :func:`hypersched_nb.compare`). The other
subcommands act on the last search started here. Bad input is a one-line ``UsageError``; ``--help`` works on every subcommand.
"""

from __future__ import annotations

import argparse
import keyword
import os

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import (
    MagicArgumentParser,
    argument,
    magic_arguments,
    parse_argstring,
)

from hypersched_nb._lazy import load
from hypersched_nb.core.policies import check_early_signal
from hypersched_nb.errors import HyperschedError
from hypersched_nb.experiment.deadline import resolve_deadline
from hypersched_nb.experiment.experiment import Experiment as Search
from hypersched_nb.notebook.dashboard import Dashboard
from hypersched_nb.notebook.experiment import Experiment

__all__ = ["HyperschedMagics"]

COMMANDS = ("start", "resume", "status", "deadline", "forecast", "wait", "stop", "compare")


class _Help(Exception):
    """argparse printed a help text; nothing else to do."""


class _Parser(MagicArgumentParser):
    def __init__(self, **kw):
        super().__init__(add_help=True, formatter_class=argparse.RawDescriptionHelpFormatter, **kw)

    def exit(self, status=0, message=None):
        if message:
            raise UsageError(message.strip())
        raise _Help


def _start_parser() -> _Parser:
    p = _Parser(
        prog="%hypersched start", description="Start a deadline-aware search in the background."
    )
    p.add_argument(
        "trainable",
        help="a Trainable class in the notebook, a shipped example (DigitsCNN), 'module:Class', "
        "or an Experiment",
    )
    p.add_argument(
        "--space", help="name of a dict of Optuna distributions (default: the trainable's space())"
    )
    p.add_argument(
        "--metric", default="val_acc", help="metric that step() returns (default: val_acc)"
    )
    p.add_argument("--mode", default="max", choices=("max", "min"))
    p.add_argument("--deadline", default="20m", help="'20m', '1h30m', '17:00' ... (default: 20m)")
    p.add_argument("--max-epochs", type=int, default=100)
    p.add_argument("--min-epochs", type=int, default=1)
    p.add_argument("--eta", type=float, default=4)
    p.add_argument("--policy", default="hypersched")
    p.add_argument(
        "--early-signal",
        default="auto",
        metavar="auto|trust|doubt",
        help="what your curves' first epochs say: trust them (as ASHA), doubt them until they "
        "predict later ones, or trust them for now while a few trials test them (default: auto)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers", type=int, help="local worker processes (default: one per GPU, or CPU slots)"
    )
    where.add_argument("--address", help="scheduler address of an existing Dask cluster")
    p.add_argument("--sampler", default="tpe", help="tpe, random or qmc (default: tpe)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--configs", type=int, help="offer at most this many configurations")
    p.add_argument("--checkpoint-dir", help="where checkpoints go (any fsspec URL)")
    p.add_argument(
        "--prior",
        help="a past search of the same model: its folder, a trace (CSV or name), or 'last' "
        "(the newest search of this trainable in the runs folder)",
    )
    p.add_argument(
        "--name", default="exp", help="notebook variable the experiment is bound to (default: exp)"
    )
    p.add_argument(
        "--no-dashboard", action="store_true", help="print one status line instead of the widgets"
    )
    return p


def _prior(given: str | None, trainable, checkpoint_dir: str | None):
    """``--prior``: a path or trace name as given; ``last``: the newest search of the same
    trainable in the runs folder (the one ``--checkpoint-dir`` is in, else hypersched-runs)."""
    if given != "last":
        return given
    from hypersched_nb.experiment.prior import newest_search
    from hypersched_nb.experiment.settings import import_path

    folder = (
        os.path.dirname(os.path.normpath(checkpoint_dir)) if checkpoint_dir else "hypersched-runs"
    )
    found = newest_search(folder or ".", trainable=import_path(trainable))
    if found is None:
        name = getattr(trainable, "__name__", trainable)
        raise UsageError(f"--prior last: no search of {name} in {folder!r} yet; give its folder")
    return os.fspath(found)


def _deadline_parser() -> _Parser:
    p = _Parser(prog="%hypersched deadline", description="Move the deadline of the running search.")
    p.add_argument(
        "deadline", help="'+10m' (ten more minutes), '-5m', '30m' (from the start) or '17:00'"
    )
    p.add_argument(
        "--end-now",
        action="store_true",
        help="accept a deadline already past: the search ends now (else it is refused)",
    )
    return p


def _forecast_parser() -> _Parser:
    p = _Parser(
        prog="%hypersched forecast",
        description="Print, in one line, the best the search would reach by a deadline on a "
        "number of workers (simulated from where it stands).",
    )
    p.add_argument(
        "deadline", nargs="?", help="'+10m', '30m' (from the start), '17:00' (default: the current)"
    )
    p.add_argument("--workers", type=int, help="cluster size (default: the cluster's now)")
    p.add_argument("--runs", type=int, default=16, help="simulations (default: 16)")
    p.add_argument("--margin", type=float, default=0.0, help="P(beat the best by this much)")
    p.add_argument("--prior", help="a trace of a similar model, for a search with no result yet")
    p.add_argument(
        "--early-signal",
        help="'trust' or 'doubt': the best if the hypersched policy were told so now",
    )
    return p


def _resume_parser() -> _Parser:
    p = _Parser(
        prog="%hypersched resume",
        description="Go on with a search whose kernel died, from its checkpoint folder.",
    )
    p.add_argument("path", help="the search's checkpoint folder (it holds journal.jsonl)")
    p.add_argument("--deadline", help="a new deadline: '30m' (from now), '+10m', '17:00'")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, help="local workers (default: as the search had)")
    where.add_argument("--address", help="a Dask scheduler address instead of a local cluster")
    p.add_argument("--name", default="exp", help="variable to bind the Experiment to")
    p.add_argument("--no-dashboard", action="store_true", help="do not show the dashboard")
    return p


def _check_name(name: str) -> None:
    """``--name``: a notebook variable the experiment can be bound to."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"--name {name!r} is not a Python identifier (a variable name)")


def _plain_parser(name: str, text: str) -> _Parser:
    return _Parser(prog=f"%hypersched {name}", description=text)


@magics_class
class HyperschedMagics(Magics):
    """The ``%hypersched`` line magic (registered by ``%load_ext hypersched_nb``)."""

    def __init__(self, shell=None):
        super().__init__(shell)
        self.current = None  # the last Experiment started or adopted here

    @magic_arguments()
    @argument("command", nargs="?", help=f"one of: {', '.join(COMMANDS)}")
    @argument(
        "args", nargs="...", help="the subcommand's arguments (see %%hypersched COMMAND --help)"
    )
    @line_magic
    def hypersched(self, line: str = ""):
        """Deadline-aware hyperparameter search from the notebook.

        Subcommands: ``start TRAINABLE [options]`` (a search in the background, with the
        dashboard), ``status`` (one summary), ``deadline SPEC`` (move it: '+10m', '17:00'),
        ``forecast [SPEC] [--workers N] [--early-signal trust|doubt]`` (the best expected by
        then, in one line; told to trust or doubt epoch 1 from now),
        ``resume PATH`` (go on with a search whose kernel died, from its checkpoint folder),
        ``wait`` (block until the end, the dashboard's controls still live), ``stop`` (end
        gracefully, keeping the best so far), ``compare PATH...`` (searches side by side).
        """
        if line.strip() in ("-h", "--help"):
            print(self.hypersched.parser.format_help())
            return None
        args = parse_argstring(self.hypersched, line)
        if args.command is None:
            raise UsageError(
                f"%hypersched needs a subcommand: {', '.join(COMMANDS)} (try %hypersched start --help)"
            )
        if args.command not in COMMANDS:
            raise UsageError(
                f"%hypersched: unknown subcommand {args.command!r}; use one of {', '.join(COMMANDS)}"
            )
        try:
            return getattr(self, f"_{args.command}")(args.args)
        except _Help:
            return None
        except HyperschedError as exc:
            raise UsageError(str(exc)) from None

    # ------------------------------------------------------------------ subcommands

    def _start(self, argv: list[str]):
        a = _start_parser().parse_args(argv)
        check_early_signal(a.early_signal, "--early-signal")
        target = self._lookup(a.trainable)
        _check_name(a.name)
        if self.current is not None and not self.current.done and target is not self.current:
            raise UsageError("a search started here is still running; %hypersched stop it first")
        if isinstance(target, Search):  # built in the notebook: started or not
            if a.prior is not None:
                raise UsageError(f"--prior is for a new search; {a.trainable} was built already")
            if a.early_signal != "auto":
                raise UsageError(
                    f"--early-signal is for a new search; {a.trainable} was built with "
                    f"early_signal={target.early_signal!r}"
                )
            exp = target
        else:
            space = self._lookup(a.space) if a.space else None
            exp = Experiment(
                target, space, metric=a.metric, mode=a.mode, deadline=a.deadline,
                max_epochs=a.max_epochs, min_epochs=a.min_epochs, eta=a.eta, policy=a.policy,
                cluster=a.workers if a.workers is not None else a.address, sampler=a.sampler,
                seed=a.seed, checkpoint_dir=a.checkpoint_dir, configs=a.configs,
                early_signal=a.early_signal, prior=_prior(a.prior, target, a.checkpoint_dir),
            )  # fmt: skip
        if exp.statistics().status == "created":
            exp.start()
        else:  # started from Python: follow it
            print(f"following {a.trainable}, already {exp.statistics().status}")
        if exp is not target:  # bound once it runs: a refused start leaves the notebook as it was
            self.shell.user_ns[a.name] = exp
        self._follow(exp, dashboard=not a.no_dashboard)

    def _resume(self, argv: list[str]):
        a = _resume_parser().parse_args(argv)
        _check_name(a.name)
        if self.current is not None and not self.current.done:
            raise UsageError("a search started here is still running; %hypersched stop it first")
        cluster = a.workers if a.workers is not None else a.address
        exp = Experiment.resume(a.path, cluster=cluster, deadline=a.deadline)
        self.shell.user_ns[a.name] = exp
        self._follow(exp, dashboard=not a.no_dashboard)

    def _follow(self, exp, *, dashboard: bool) -> None:
        """Make ``exp`` the search the other subcommands act on, and show it."""
        self.current = exp
        if not dashboard:
            print(exp.statistics().progress_line())
            return
        from IPython.display import display

        display(Dashboard(exp))

    def _status(self, argv: list[str]):
        _plain_parser("status", "Print a summary of the search.").parse_args(argv)
        print(self._experiment().statistics())

    def _deadline(self, argv: list[str]):
        values = [v for v in argv if v[:1] == "-" and v[1:2].isdigit()]  # "-5m": a value
        argv = [v for v in argv if v not in values] + (["--", *values] if values else [])
        a = _deadline_parser().parse_args(argv)
        exp = self._experiment()
        snap = exp.statistics()
        if snap.status == "running" and not a.end_now:
            new = resolve_deadline(
                a.deadline, elapsed=snap.time, current=snap.deadline, started=snap.started
            )
            if new <= snap.time:
                raise UsageError(
                    f"deadline {a.deadline} would end the search now ({snap.deadline_text()} "
                    f"is the deadline); add --end-now to end it, or %hypersched stop"
                )
        exp.deadline = a.deadline
        snap = exp.statistics()
        left = snap.left_text()
        print(f"deadline {snap.deadline_text()}" + (f" ({left})" if left else ""))

    def _forecast(self, argv: list[str]):
        from hypersched_nb.experiment.forecast import forecast_line

        if argv and argv[0][:1] == "-" and argv[0][1:2].isdigit():  # "-5m" is a value
            argv = [*argv[1:], "--", argv[0]]
        a = _forecast_parser().parse_args(argv)
        frame = self._experiment().forecast(
            None if a.deadline is None else [a.deadline],
            None if a.workers is None else [a.workers],
            runs=a.runs, margin=a.margin, prior=a.prior, early_signal=a.early_signal,
        )  # fmt: skip
        print(forecast_line(frame))

    def _wait(self, argv: list[str]):
        _plain_parser(
            "wait", "Block until the search ends; the slider and the stop button keep working."
        ).parse_args(argv)
        exp = self._experiment()
        exp.wait()
        print(exp.statistics())

    def _stop(self, argv: list[str]):
        _plain_parser("stop", "End the search gracefully (the best so far is kept).").parse_args(
            argv
        )
        exp = self._experiment()
        exp.stop(wait=True)
        print(exp.statistics())

    def _compare(self, argv: list[str]):
        p = _plain_parser(
            "compare", "Show searches side by side: a table, and the best so far against time."
        )
        p.add_argument("paths", nargs="+", help="the searches' checkpoint folders")
        a = p.parse_args(argv)
        from IPython.display import display

        from hypersched_nb.experiment.compare import compare, compare_plot

        opened = [Search.open(path) for path in a.paths]
        display(compare(opened))
        display(compare_plot(opened))

    # ------------------------------------------------------------------ helpers

    def _experiment(self):
        """The search the subcommands act on: the last started or followed here, else the
        one the notebook started through the API (the running one first, the last bound)."""
        if self.current is None:
            found = [
                v for v in self.shell.user_ns.values()
                if isinstance(v, Search) and v.statistics().status != "created"
            ]  # fmt: skip
            going = [v for v in found if not v.done]
            if not found:
                raise UsageError(
                    "no search yet; start one with %hypersched start TRAINABLE (see --help)"
                )
            self.current = (going or found)[-1]
        return self.current

    def _lookup(self, name: str):
        """A notebook variable, else a shipped example (``DigitsCNN``), else ``module:attr`` /
        ``module.attr`` imported."""
        ns = self.shell.user_ns
        if name in ns:
            return ns[name]
        if name.isidentifier():  # not the notebook's: the examples' (which import torch)
            examples = load("hypersched_nb.train.examples")
            if name in examples.__all__:
                return getattr(examples, name)
            raise UsageError(
                f"{name!r} is not defined in the notebook, nor a shipped example "
                "(nor 'module:Class')"
            )
        module, sep, attr = name.partition(":") if ":" in name else name.rpartition(".")
        if not sep or not module:
            raise UsageError(f"{name!r} is not defined in the notebook (nor 'module:Class')")
        try:
            return load(f"{module}:{attr}")
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"cannot import {name!r}: {exc}") from None
