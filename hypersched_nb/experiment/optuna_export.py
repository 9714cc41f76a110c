"""A search's journal written out as an Optuna storage file, for optuna-dashboard.

``python -m hypersched_nb export-optuna PATH [--out FILE]`` opens the search whose journal
is at ``PATH`` (as :meth:`Experiment.open` does) and writes its study (see
:mod:`.study`) to ``FILE``, an Optuna journal file (``JournalStorage`` on a
``JournalFileBackend``), which ``optuna-dashboard FILE``, the ``jupyterlab-optuna``
extension and ``optuna.load_study`` open. A journal file rather than an SQLite database:
it is an append-only log of JSON lines as the search's own journal is, so it needs no
database schema (an RDB storage carries a schema version that the Optuna and the
dashboard reading it must agree on), and Optuna keeps old journal files readable.

The search's journal stays the one record of the search: the file is derived from it,
written whole each time (to a temporary file, then moved over the old one) and never read
back by hypersched_nb. Export again to see a search that has moved on.
"""

from __future__ import annotations

import argparse
import os
import sys

from hypersched_nb.errors import ConfigError, HyperschedError
from hypersched_nb.experiment.journal import journal_url
from hypersched_nb.experiment.study import study_of

__all__ = ["DEFAULT_NAME", "export_optuna", "main"]

DEFAULT_NAME = "optuna.log"  # beside the search's journal, unless --out says otherwise


def export_optuna(path, out=None) -> str:
    """Write the search whose journal is at ``path`` (its checkpoint folder or the journal
    file) as an Optuna journal file at ``out`` (default: ``optuna.log`` beside the journal),
    replacing any file there; return where it went."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    from hypersched_nb.experiment.experiment import Experiment

    url = journal_url(path)
    if out is None:
        if "://" in url:
            raise ConfigError(
                f"the search at {url} is not on this machine: give --out, a local file to write"
            )
        out = os.path.join(os.path.dirname(url), DEFAULT_NAME)
    out = os.fspath(out)
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise ConfigError(f"`out` is {out!r}, but its folder {folder} does not exist")
    exp = Experiment.open(path)
    tmp = f"{out}.{os.getpid()}.tmp"
    try:
        study_of(exp, storage=JournalStorage(JournalFileBackend(tmp)))
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m hypersched_nb export-optuna",
        description="Write a search as an Optuna journal file that optuna-dashboard opens.",
    )
    p.add_argument("path", help="the search's checkpoint folder (it holds journal.jsonl)")
    p.add_argument("--out", help=f"the file to write (default: {DEFAULT_NAME} beside the journal)")
    return p


def main(argv: list[str]) -> int:
    """The ``export-optuna`` command: 0 once written, 2 on a search it cannot export."""
    a = _parser().parse_args(argv)
    try:
        out = export_optuna(a.path, a.out)
    except HyperschedError as exc:
        print(f"export-optuna: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}; open it with: optuna-dashboard {out}")
    return 0
