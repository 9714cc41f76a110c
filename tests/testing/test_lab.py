"""The browser harness's record of what went wrong on the page."""

from types import SimpleNamespace

from hypersched_nb.testing.lab import Lab


def _console(kind: str, text: str) -> SimpleNamespace:
    return SimpleNamespace(type=kind, text=text)


def test_console_errors_are_the_pages_but_a_changed_host_network_is_set_apart(tmp_path):
    lab = Lab(tmp_path, artifacts=tmp_path / "artifacts")
    lab._on_console(_console("error", "Failed to load resource: net::ERR_NETWORK_CHANGED"))
    lab._on_console(_console("warning", "a deprecation"))
    lab._on_console(_console("error", "Uncaught TypeError: x is undefined"))
    assert lab.errors == ["console error: Uncaught TypeError: x is undefined"]
    assert lab.network_changes == ["Failed to load resource: net::ERR_NETWORK_CHANGED"]
