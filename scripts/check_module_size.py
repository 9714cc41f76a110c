"""Fail when a module of the package passes its size bound: the next feature splits a
module by responsibility rather than growing it (``make lint`` runs this).

    python scripts/check_module_size.py hypersched_nb --max-lines 450
"""

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--max-lines", type=int, default=450)
    args = parser.parse_args(argv)
    over = []
    for path in sorted(args.package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > args.max_lines:
            over.append(f"{path}: {lines} lines, over {args.max_lines}: split it by responsibility")
    print(
        "\n".join(over)
        if over
        else f"every module of {args.package} is within {args.max_lines} lines"
    )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
