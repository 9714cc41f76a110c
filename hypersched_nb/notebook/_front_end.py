"""What the front end has made of the dashboard's widgets: the views it has shown, and when
the widgets may close.

A front end builds a widget view on its own time: a plotly figure's view comes last, after a
script of its own (evaluated the first time a page shows a figure: about a second here; see
:mod:`._plotly_widget`). A display updated while it is still
building the view it was sent loses that view half-made ("Cannot read properties of null
(reading 'addWidget')" in the page), and a model closed under it breaks what is still under
way ("no comm channel defined"), as when a search ends within seconds of its dashboard being
shown. So the dashboard updates its display once the front end has shown the view (an
update that carries the same widgets keeps that view: JupyterLab does not build it again),
and closes the widgets :data:`GRACE` seconds after the display stopped showing them.

The front end says what it has shown through ipywidgets' ``_view_count``, which it keeps once
the kernel has set it to a number: one more for a view shown, one less for a view removed.
Under nbclient (nbval, nbconvert) no front end says anything: the wait ends after
:data:`GRACE` seconds.

Example (what the front end's messages do to the trait, set here by hand):
    >>> import ipywidgets as w
    >>> a, b = w.HTML(), w.HTML()
    >>> views = ViewsShown([a, b])
    >>> a._view_count = 1  # a view of a shown
    >>> views.wait(timeout=0)
    False
    >>> b._view_count = 1
    >>> views.wait(timeout=0)
    True
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

__all__ = ["GRACE", "NOW", "THEN", "ViewsShown", "close_later", "close_tree", "now_or_then"]

# The longest the dashboard waits for the front end to show a view it was sent, and the time
# between the display's last view and the widgets' closing. No view shows the widgets
# meanwhile: nothing is seen to linger.
GRACE = 10.0

# Words that speak of now (the time left, the controls, the policy's line) are marked with
# the class NOW, and what the page says instead once it has lost the kernel with THEN.
# ipywidgets marks each view ``jupyter-widgets-disconnected`` when its kernel restarts or
# dies, and a view made from a saved notebook's widget state is marked so from the start:
# then _SWAP, a style sheet sent with the words, hides the one and shows the other, so no
# page says "running · 41s left" of a search whose kernel is gone.
NOW, THEN = "hs-now", "hs-then"
_LOST = "jupyter-widgets-disconnected"
_SWAP = (
    f"<style>.{THEN}{{display:none}}.{_LOST} .{THEN}{{display:revert}}"
    f".{_LOST} .{NOW},.{_LOST}.{NOW}{{display:none !important}}</style>"
)


def now_or_then(now: str, then: str = "") -> str:
    """HTML that says ``now`` while the page has its kernel and ``then`` once it has lost it
    (both HTML already), with the style sheet that swaps them."""
    return f"{_SWAP}<span class='{NOW}'>{now}</span><span class='{THEN}'>{then}</span>"


class ViewsShown:
    """Whether the front end has shown a view of each of ``widgets``, to wait on."""

    def __init__(self, widgets: Sequence):
        self._unseen = set(range(len(widgets)))  # the widgets not shown yet
        self._changed = threading.Condition()
        for i, widget in enumerate(widgets):
            widget._view_count = 0  # from now on the front end counts this widget's views
            widget.observe(functools.partial(self._on_count, i), names="_view_count")

    def _on_count(self, i: int, change) -> None:
        if change["new"]:  # a view shown
            with self._changed:
                self._unseen.discard(i)
                self._changed.notify_all()

    def wait(self, *, timeout: float) -> bool:
        """Wait, at most ``timeout`` seconds, until each widget has been shown; whether it
        has."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._unseen, max(0.0, timeout))


def close_tree(widget) -> None:
    """Close a widget and every widget under it (their models end in the front end too)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    widget.close()


def close_later(widget, seconds: float) -> None:
    """:func:`close_tree` ``widget`` in ``seconds`` (at once when that is 0), on a timer."""
    if seconds <= 0:
        close_tree(widget)
        return
    timer = threading.Timer(seconds, close_tree, args=(widget,))
    timer.name, timer.daemon = "hypersched-close-widgets", True
    timer.start()
