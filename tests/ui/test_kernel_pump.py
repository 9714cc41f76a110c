"""A wait in a real kernel keeps the widgets working, and loses or reorders nothing.

The kernel is a real ipykernel, driven by jupyter_client as JupyterLab drives it: widget
messages are sent on the shell channel as the frontend sends them when a slider moves.
"""

import json
import threading
import time

import pytest

from hypersched_nb.experiment import _kernel_pump

SETUP = """
import json, threading, time
import ipywidgets
from hypersched_nb.experiment import _kernel_pump

done = threading.Event()
moves = []
slider = ipywidgets.IntSlider()

def moved(change):
    moves.append((time.time(), change["new"]))
    print("moved to", change["new"])
    if change["new"] == 7:
        done.set()

slider.observe(moved, names="value")
print(slider.comm.comm_id)
"""


class Kernel:
    """A kernel and its client; ``run`` sends a cell, ``outputs`` collects what comes back."""

    def __init__(self):
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(kernel_name="python3")

    def send(self, code: str) -> str:
        return self.client.execute(code)

    def outputs(self, *cells: str, timeout: float = 60) -> dict[str, str]:
        """The text each cell printed (or the name of its error), once all of them are over;
        output that belongs to no cell is keyed by its parent's message id."""
        texts, over = {}, set()
        end = time.monotonic() + timeout
        while over != set(cells):
            msg = self.client.get_iopub_msg(timeout=max(0.1, end - time.monotonic()))
            parent, kind = msg["parent_header"].get("msg_id"), msg["msg_type"]
            if kind == "stream":
                texts[parent] = texts.get(parent, "") + msg["content"]["text"]
            elif kind == "error":
                texts[parent] = texts.get(parent, "") + msg["content"]["ename"]
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                over |= {parent} & set(cells)
        return texts

    def run(self, code: str) -> str:
        cell = self.send(code)
        return self.outputs(cell).get(cell, "")

    def move(self, comm_id: str, value: int) -> float:
        """What the frontend sends when the slider is dropped at ``value``; the time sent."""
        data = {"method": "update", "state": {"value": value}, "buffer_paths": []}
        self.client.shell_channel.send(
            self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        )
        return time.time()

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel():
    k = Kernel()
    yield k
    k.close()


@pytest.fixture
def slider(kernel) -> str:
    """The comm id of a fresh slider whose moves the kernel notes; 7 ends the wait."""
    return kernel.run(SETUP).strip()


def test_slider_moves_are_handled_while_a_cell_waits(kernel, slider):
    waiting = kernel.send("print('over:', _kernel_pump.wait(done, 30))")
    time.sleep(1.0)  # the cell is blocked in the wait by now
    sent = []
    for value in (3, 5, 7):
        sent.append(kernel.move(slider, value))
        time.sleep(0.3)
    texts = kernel.outputs(waiting)
    assert texts[waiting] == "over: True\n"  # the cell's own output stays in the cell
    moves = json.loads(kernel.run("print(json.dumps(moves))"))
    assert [value for _, value in moves] == [3, 5, 7]
    assert max(at - s for (at, _), s in zip(moves, sent, strict=True)) < 0.5


def test_a_callback_prints_under_the_message_that_caused_it(kernel, slider):
    waiting = kernel.send("_kernel_pump.wait(done, 30)")
    time.sleep(0.5)
    kernel.move(slider, 7)
    texts = kernel.outputs(waiting)
    assert waiting not in texts
    assert list(texts.values()) == ["moved to 7\n"]


def test_cells_sent_with_the_waiting_one_run_after_it_in_order(kernel, slider):
    kernel.run("ran = []")
    busy = kernel.send("time.sleep(0.5)")  # the kernel reads some of what follows meanwhile
    waiting = kernel.send("_kernel_pump.wait(done, 30); ran.append('wait')")
    queued = [kernel.send(f"ran.append({k})") for k in range(1, 6)]
    time.sleep(1.5)
    kernel.move(slider, 7)
    kernel.outputs(busy, waiting, *queued)
    assert kernel.run("print(ran)") == "['wait', 1, 2, 3, 4, 5]\n"


def test_an_interrupted_wait_hands_every_request_back(kernel):
    waiting = kernel.send("_kernel_pump.wait(threading.Event(), 30)")
    time.sleep(0.5)
    completion = kernel.client.complete("threadi", 7)
    time.sleep(0.5)
    kernel.manager.interrupt_kernel()
    assert kernel.outputs(waiting)[waiting] == "KeyboardInterrupt"
    replies = {}
    while completion not in replies:
        reply = kernel.client.get_shell_msg(timeout=10)
        replies[reply["parent_header"]["msg_id"]] = reply["content"]
    assert "threading" in replies[completion]["matches"]


def test_a_cell_holds_the_controls_unless_it_waits_through_the_pump(kernel):
    kernel.run(
        "phase, seen = 'start', []\n"
        "def sample():\n"
        "    while phase != 'end':\n"
        "        seen.append((phase, _kernel_pump.cell_holds_controls()))\n"
        "        time.sleep(0.05)\n"
        "threading.Thread(target=sample).start()"
    )
    kernel.run("phase = 'sleep'; time.sleep(1); phase = 'idle'")
    time.sleep(1.0)
    kernel.run("phase = 'wait'; _kernel_pump.wait(threading.Event(), 1); phase = 'end'")
    seen = json.loads(kernel.run("print(json.dumps(seen))"))
    held = {phase: {value for p, value in seen if p == phase} for phase in ("sleep", "wait")}
    assert held == {"sleep": {True}, "wait": {False}}
    # between the cells nothing holds them; a sample at either end of that second may fall
    # in the sleeping cell's last moments or the next cell's first, before `phase` changes
    assert False in [value for p, value in seen if p == "idle"]


def test_outside_a_kernel_it_is_a_plain_event_wait():
    event = threading.Event()
    assert _kernel_pump.wait(event, 0.05) is False
    event.set()
    assert _kernel_pump.wait(event, 0) is True
    assert _kernel_pump.cell_holds_controls() is False
