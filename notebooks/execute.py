"""Run the notebooks here top to bottom and save their outputs (what nbval compares against).

    .venv/bin/python notebooks/execute.py                 # every notebook in this folder
    .venv/bin/python notebooks/execute.py 02-policies.ipynb

Each notebook runs in a fresh ``python3`` kernel of this environment, in this folder (the
notebooks keep naming the ``hypersched-nb`` kernel that ``make`` registers). Widget views are
dropped from the saved outputs: their state is not saved, so a saved notebook shows the PNG
picture that every dashboard display carries instead (a finished one carries nothing else).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from queue import Empty

import nbformat
from jupyter_client.manager import start_new_kernel

HERE = Path(__file__).resolve().parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def run(path: Path, timeout: float = 900.0) -> None:
    nb = nbformat.read(path, as_version=4)
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(path.parent))
    displays: dict[str, list] = {}  # display_id -> outputs showing it
    t0 = time.monotonic()
    try:
        count = 0
        for cell in nb.cells:
            if cell.cell_type == "code":
                count += 1
                _run_cell(kc, cell, count, f"{path.name}: cell {count}", timeout, displays)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    nbformat.write(nb, path)
    print(f"{path.name}: {count} cells in {time.monotonic() - t0:.0f} s")


def _run_cell(kc, cell, count: int, where: str, timeout: float, displays: dict) -> None:
    """Execute one code cell and keep its outputs as a notebook front end would."""
    cell.outputs, cell.execution_count = [], count
    msg_id = kc.execute(cell.source, allow_stdin=False)
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except Empty:
            raise TimeoutError(f"{where} gave nothing for {timeout:.0f} s") from None
        kind, content = msg["msg_type"], msg["content"]
        if kind == "update_display_data":
            for out in displays.get(content.get("transient", {}).get("display_id"), []):
                out["data"] = _clean(content["data"])
        elif msg["parent_header"].get("msg_id") != msg_id:
            continue
        elif kind == "status" and content["execution_state"] == "idle":
            return
        elif kind == "error":
            raise RuntimeError(f"{where} raised {content['ename']}: {content['evalue']}")
        else:
            _record(cell, kind, content, count, displays)


def _record(cell, kind: str, content: dict, count: int, displays: dict) -> None:
    """File one output message of the cell: streams are joined, displays remembered by id."""
    if kind == "stream":
        last = cell.outputs[-1] if cell.outputs else None
        if (
            last is not None
            and last.get("output_type") == "stream"
            and last["name"] == content["name"]
        ):
            last["text"] += content["text"]
        else:
            cell.outputs.append(
                nbformat.v4.new_output("stream", name=content["name"], text=content["text"])
            )
    elif kind in ("display_data", "execute_result"):
        out = nbformat.v4.new_output(
            kind, data=_clean(content["data"]), metadata=content.get("metadata", {})
        )
        if kind == "execute_result":
            out["execution_count"] = count
        cell.outputs.append(out)
        did = content.get("transient", {}).get("display_id")
        if did:
            displays.setdefault(did, []).append(out)
    elif kind == "clear_output":
        cell.outputs = []


def _clean(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != WIDGET_VIEW}


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(p.name for p in HERE.glob("*.ipynb"))
    for name in names:
        run(HERE / name)
