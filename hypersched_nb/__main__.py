"""Command line: ``python -m hypersched_nb {demo,bench,export-optuna} ...`` (``--help`` on
each)."""

from __future__ import annotations

import sys

USAGE = """usage: python -m hypersched_nb COMMAND [options]

commands:
  demo    the main job: a real deadline-bound HyperSched search on a local cluster
  bench   replay learning-curve traces under several policies (docs/design.md)
  export-optuna PATH [--out FILE]
          write a search (its checkpoint folder) as an Optuna journal file that
          optuna-dashboard FILE opens
"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "bench":
        from hypersched_nb.bench.cli import main as bench

        return bench(rest)
    if command == "demo":
        from hypersched_nb.demo import main as demo

        return demo(rest)
    if command == "export-optuna":
        from hypersched_nb.experiment.optuna_export import main as export

        return export(rest)
    print(
        f"hypersched_nb: unknown command {command!r}; use one of: demo, bench, export-optuna",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
