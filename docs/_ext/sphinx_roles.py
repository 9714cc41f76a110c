"""A griffe extension for the API reference: the docstrings' Sphinx roles become links.

The package's docstrings cross-reference in Sphinx's words (``:class:`~hypersched_nb.Trainable```,
``:meth:`start```), which Markdown would print as they are. Each role becomes an optional
cross-reference: a link where the reference documents its target, the name in code type
where it does not, so that a role never fails ``mkdocs build --strict``. A role's target is
looked up as Sphinx would: as written, then in the class and the module of the docstring,
then through the module's imports. A class without a docstring of its own (the public
``Experiment`` copies its base's at run time) shows its first documented base's.
"""

from __future__ import annotations

import functools
import html
import re

import griffe

# a target may be broken across lines, as a long one is in a wrapped docstring
ROLE = re.compile(r":(?:class|meth|func|attr|mod|data|exc|obj):`(~?)([\w.][\w.\s]*?)(\(\))?`")


class SphinxRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in _walk(pkg):
            if obj.is_class and obj.docstring is None:
                _inherit_docstring(obj)
            if obj.docstring is not None:
                obj.docstring.value = ROLE.sub(
                    functools.partial(_link, obj=obj), obj.docstring.value
                )


def _walk(obj):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


def _inherit_docstring(cls) -> None:
    for base in cls.resolved_bases:
        if base.docstring is not None:
            cls.docstring = griffe.Docstring(base.docstring.value, parent=cls)
            return


def _link(match: re.Match, *, obj) -> str:
    short, name, call = match.groups()
    name = re.sub(r"\s+", "", name)
    title = (name.rsplit(".", 1)[-1] if short else name) + (call or "")
    target = _resolve(name, obj)
    code = f"<code>{html.escape(title)}</code>"
    if target is None:
        return code
    return f'<autoref identifier="{target}" optional>{code}</autoref>'


def _resolve(name: str, obj) -> str | None:
    """The full path of ``name`` as written in ``obj``'s docstring, None if none is found."""
    head, _, rest = name.partition(".")
    scopes = [o for o in (obj, obj.parent, obj.module) if o is not None]
    candidates = [name]
    for scope in scopes:
        candidates.append(f"{scope.path}.{name}")
        imported = scope.imports.get(head) if hasattr(scope, "imports") else None
        if imported:
            candidates.append(f"{imported}.{rest}" if rest else imported)
    for path in candidates:
        try:
            found = obj.modules_collection.get_member(path)
            return found.final_target.path if found.is_alias else found.path
        except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError):
            continue  # not this one (outside the package, or not loaded): the next
    return None
