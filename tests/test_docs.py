"""The documentation holds to the code it documents, without building the site.

Specified here: every public name of ``hypersched_nb.__all__`` has an entry in the API
reference, and every entry there names an object that exists; the trainable of the user
guide is the one ``tests/experiment/test_readme_example.py`` runs, verbatim; the lifecycle
diagram of the policies page is the one ``lifecycle_mermaid()`` draws from the transition
table; the README's and the pages' relative links lead to files of the repository; and the
README stays a landing page (the two set-up commands, at most 250 lines); and every example
in a docstring of the package (``>>>``) gives what it says. ``make docs`` builds the site
itself in strict mode, which fails on a broken link or reference.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest

import hypersched_nb

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference.md"
#: a mkdocstrings directive: "::: dotted.path" alone on its line
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.MULTILINE)
#: a Markdown link's target, up to its anchor: [text](target#anchor)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def _directives() -> list[str]:
    return DIRECTIVE.findall(REFERENCE.read_text(encoding="utf-8"))


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _with_examples() -> list[str]:
    """The package's modules whose docstrings hold an example."""
    names = (m.name for m in pkgutil.walk_packages(hypersched_nb.__path__, "hypersched_nb."))
    return sorted(
        name for name in names if ">>>" in Path(importlib.util.find_spec(name).origin).read_text()
    )


@pytest.mark.parametrize("name", _with_examples())
def test_every_example_in_a_docstring_gives_what_it_says(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0  # each failure is printed above


@pytest.mark.parametrize("name", hypersched_nb.__all__)
def test_every_public_name_has_an_entry_in_the_api_reference(name):
    assert f"hypersched_nb.{name}" in _directives(), (
        f"docs/reference.md has no '::: hypersched_nb.{name}' for a name of __all__"
    )


@pytest.mark.parametrize("path", _directives())
def test_every_entry_of_the_api_reference_names_an_object_that_exists(path):
    module, _, attr = path.rpartition(".")
    try:
        found = importlib.import_module(path)
    except ModuleNotFoundError:
        found = getattr(importlib.import_module(module), attr, None)
    assert found is not None, f"docs/reference.md documents {path}, which does not exist"


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"^```\w*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_the_guide_shows_the_trainable_the_tests_run_verbatim():
    source = (ROOT / "tests" / "experiment" / "test_readme_example.py").read_text()
    ran = source.split("# --- README example starts")[1].split("\n", 1)[1]
    ran = ran.split("# --- README example ends")[0].strip()
    shown = _code_blocks((DOCS / "guide" / "trainable.md").read_text(encoding="utf-8"))
    assert any(ran in block for block in shown), (
        "docs/guide/trainable.md's example differs from tests/experiment/test_readme_example.py"
    )


def test_the_policies_page_draws_the_lifecycle_of_the_transition_table():
    from hypersched_nb.core.trial import lifecycle_mermaid

    page = (DOCS / "guide" / "policies.md").read_text(encoding="utf-8")
    drawn = re.search(r"```mermaid\n(.*?)```", page, flags=re.DOTALL).group(1)
    assert drawn.strip() == lifecycle_mermaid().strip()


def test_the_quick_start_is_the_same_in_the_readme_and_the_site():
    def quick_start(path: Path) -> str:
        text = path.read_text(encoding="utf-8").split("## Quick start", 1)[1]
        return _code_blocks(text)[0]

    assert quick_start(ROOT / "README.md") == quick_start(DOCS / "getting-started.md")


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_of_the_repository(page):
    text = page.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        found = (page.parent / target).resolve()
        assert found.exists(), f"{page.name} links to {target}, which does not exist"
        assert ROOT in found.parents, f"{page.name} links outside the repository: {target}"


def test_the_readme_is_a_landing_page_with_the_two_set_up_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    commands = re.findall(r"^make (\w+)\s+#", readme, flags=re.MULTILINE)
    assert commands == ["demo", "test"]
