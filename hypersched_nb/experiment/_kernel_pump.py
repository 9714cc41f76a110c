"""A wait that keeps a notebook's widgets working while a cell blocks in it.

A cell that blocks (``exp.wait()``, ``%hypersched wait``) holds the kernel's event loop, so
the messages the dashboard's slider and stop button send would be read only when the cell
ends. :func:`wait` does that part of the loop's work itself while it waits, as the
jupyter-ui-poll package does: it takes the messages sent to the main shell off its socket,
runs the widget (comm) messages at once with the kernel's own handlers, and keeps every other
message (a queued cell, a completion request) in order, handing them back to the kernel when
the wait ends, the way its stream hands over every message it reads, so that they run after
the blocking cell, in order, as they would have. :func:`cell_holds_controls` tells the
dashboard when some other cell holds the loop, so that it can say so.

This needs ipykernel 7. Anywhere else (plain Python, a thread other than
the kernel's main one, a wait within a widget's callback) :func:`wait` is ``event.wait``.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
import time

__all__ = ["cell_holds_controls", "wait"]

_SLICE = 0.1  # seconds between two looks at the event while no message comes
_COMM = frozenset({"comm_open", "comm_msg", "comm_close"})
_pumping = False  # a wait on the kernel's main thread is taking its messages now


def wait(event: threading.Event, timeout: float | None = None) -> bool:
    """``event.wait(timeout)``, handling widget messages meanwhile when called from a cell."""
    pump = _Pump.here()
    if pump is None:
        return event.wait(timeout)
    return pump.wait(event, timeout)


def cell_holds_controls() -> bool:
    """Whether a cell of this kernel runs now without handling widget messages, so that the
    dashboard's controls act only when it ends (False outside a kernel, and during a wait)."""
    if _pumping or "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    running = getattr(getattr(get_ipython(), "kernel", None), "_main_asyncio_lock", None)
    return running is not None and running.locked()  # held while the main shell runs a cell


class _Pump:
    """The main shell's socket of the running kernel, read from the cell's own thread."""

    def __init__(self, kernel, stream, deliver, loop):
        self.kernel, self.stream, self.deliver, self.loop = kernel, stream, deliver, loop
        self.held: list = []  # messages for the kernel once the wait ends, in arrival order

    @classmethod
    def here(cls) -> _Pump | None:
        if _pumping or "ipykernel" not in sys.modules:
            return None
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
        if kernel is None or not hasattr(kernel, "shell_main"):  # not ipykernel 7
            return None
        channel = getattr(kernel, "shell_channel_thread", None)
        main = channel.parent_thread if channel is not None else threading.main_thread()
        if threading.current_thread() is not main:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        from ipykernel.eventloops import get_shell_stream

        stream = get_shell_stream(kernel)
        if stream is None or stream.closed():
            return None
        deliver = getattr(stream, "_recv_callback", None)  # what the loop does with a message
        if deliver is None:
            return None
        return cls(kernel, stream, deliver, loop)

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        global _pumping
        import zmq

        end = None if timeout is None else time.monotonic() + timeout
        _pumping = True
        try:
            while not event.is_set():
                left = _SLICE if end is None else min(_SLICE, end - time.monotonic())
                if left <= 0:
                    break
                if self.stream.socket.poll(left * 1000, zmq.POLLIN):
                    self._drain()
            return event.is_set()
        finally:
            _pumping = False
            self._drain()  # the socket is left empty, so nothing waits behind what is held
            for message in self.held:  # the way the stream delivers a message read later:
                self._later(self.deliver(message))  # in order after those read before

    def _drain(self) -> None:
        import zmq

        while True:
            try:
                message = self.stream.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            if not self._run_comm(message):
                self.held.append(message)

    def _run_comm(self, message) -> bool:
        """Handle ``message`` now if it is a widget's; False to keep it for the kernel."""
        kernel, session = self.kernel, self.kernel.session
        try:  # the header first: only a widget's message is read in full here
            idents, frames = session.feed_identities(message, copy=False)
            kind = session.deserialize(frames, content=False, copy=False)["header"]["msg_type"]
            handler = kernel.shell_handlers.get(kind) if kind in _COMM else None
            if handler is None or inspect.iscoroutinefunction(handler):
                return False
            msg = session.deserialize(frames, content=True, copy=False)
        except Exception:  # noqa: BLE001 - one this wait cannot read: the kernel reports it
            return False
        parent, ident = kernel.get_parent("shell"), kernel._parent_ident["shell"]
        kernel.set_parent(idents, msg, channel="shell")  # a callback's output goes with it
        try:
            self._later(handler(kernel.shell_stream, idents, msg))
        except Exception:  # logged as the kernel's own dispatch logs it
            kernel.log.error("Exception in message handler:", exc_info=True)
        finally:
            for out in (sys.stdout, sys.stderr):
                if out is not None:
                    out.flush()
            kernel.set_parent(ident, parent, channel="shell")  # back to the blocking cell
        return True

    def _later(self, result) -> None:
        """Leave ``result`` to the event loop if it is awaitable (as the stream does)."""
        if inspect.isawaitable(result):
            asyncio.ensure_future(result, loop=self.loop)
