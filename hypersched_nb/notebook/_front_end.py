"""What the front end has made of the dashboard's widgets: the views it has shown, and when
the widgets may close.

A front end builds a widget view on its own time: a plotly figure's view comes last, after a
script of its own (seconds on a page's first load). A display updated while it is still
building the view it was sent loses that view half-made ("Cannot read properties of null
(reading 'addWidget')" in the page), and a model closed under it breaks what is still under
way ("no comm channel defined"), as when a search ends within seconds of its dashboard being
shown. So the dashboard updates its display once the front end has shown the view it last
sent, and closes the widgets :data:`GRACE` seconds after the display stopped showing them.

The front end says what it has shown through ipywidgets' ``_view_count``, which it keeps once
the kernel has set it to a number: one more for a view shown, one less for a view removed.
Under nbclient (nbval, nbconvert) no front end says anything: every wait ends after
:data:`GRACE` seconds.

Example (what the front end's messages do to the trait, set here by hand):
    >>> import ipywidgets as w
    >>> a, b = w.HTML(), w.HTML()
    >>> views = ViewsShown([a, b])
    >>> a._view_count, b._view_count = 1, 1  # both shown once
    >>> views.wait(1, timeout=0), views.wait(2, timeout=0)
    (True, False)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

__all__ = ["GRACE", "ViewsShown", "close_later", "close_tree"]

# The longest the dashboard waits for the front end to show a view it was sent, and the time
# between the display's last view and the widgets' closing. No view shows the widgets
# meanwhile: nothing is seen to linger.
GRACE = 10.0


class ViewsShown:
    """How many views of each of ``widgets`` the front end has shown, to wait on."""

    def __init__(self, widgets: Sequence):
        self._shown = [0] * len(widgets)
        self._changed = threading.Condition()
        for i, widget in enumerate(widgets):
            widget._view_count = 0  # from now on the front end counts this widget's views
            widget.observe(functools.partial(self._on_count, i), names="_view_count")

    def _on_count(self, i: int, change) -> None:
        if (change["new"] or 0) > (change["old"] or 0):  # one more view shown
            with self._changed:
                self._shown[i] += 1
                self._changed.notify_all()

    def wait(self, views: int, *, timeout: float) -> bool:
        """Wait until each widget has been shown ``views`` times, at most ``timeout``
        seconds; whether it has."""
        with self._changed:
            return self._changed.wait_for(lambda: min(self._shown) >= views, max(0.0, timeout))


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
