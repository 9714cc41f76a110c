"""The project's exceptions: one line each, naming the parameter, the value and the rule."""

from __future__ import annotations

import warnings

__all__ = [
    "ConfigError",
    "HyperschedError",
    "InvalidTransition",
    "TraceFormatError",
    "warn",
]


class HyperschedError(Exception):
    """Base class of every error hypersched_nb raises on purpose. Its message is the whole
    story: in IPython and Jupyter its traceback shows only the user's own frames, ending in
    their call, then the one line (IPython's ``_render_traceback_`` hook)."""

    def _render_traceback_(self) -> list[str]:
        import os
        import traceback

        package = os.path.dirname(os.path.abspath(__file__))
        frames = [
            f
            for f in traceback.extract_tb(self.__traceback__)
            if not os.path.abspath(f.filename).startswith(package + os.sep)
        ]
        lines = ["Traceback (most recent call last):"] if frames else []
        lines += [line.rstrip("\n") for line in traceback.format_list(frames)]
        return [*lines, f"{type(self).__name__}: {self}"]


class ConfigError(HyperschedError, ValueError):
    """A parameter has a value it cannot take: ``"`eta` is 1, but must be >= 2"``."""


class TraceFormatError(HyperschedError, ValueError):
    """A learning-curve trace does not follow the trace format (docs/design.md)."""


class InvalidTransition(HyperschedError, RuntimeError):
    """A trial was asked to move where its lifecycle does not allow."""


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn, pointing at the first frame outside hypersched_nb (like optuna's ``_warn``).

    Counts the package's own frames by hand: ``warnings.warn(skip_file_prefixes=...)`` only
    exists from Python 3.12, and this package supports 3.11."""
    import os
    import sys

    package = os.path.dirname(__file__)
    frame, level = sys._getframe(1), 2  # stacklevel 2 is our caller
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
