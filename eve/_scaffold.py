"""``eve init``: a new app written from the templates shipped inside the package.

``eve/templates/app`` is a starter (an agent with one tool and one eval); ``eve/templates/
example`` is the example agent of eve's repository (links to it there, files in a built
wheel). Nothing is overwritten: when any file the app would write exists, nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

from eve.errors import ScaffoldConflict

Template = Literal["app", "example"]
#: a template's files stored under another name: a `.gitignore` inside eve's own tree would
#: apply to the template folder itself
_RENAMED = {"gitignore": ".gitignore"}
_SKIPPED_DIRS = {"__pycache__"}


@dataclass(frozen=True, kw_only=True)
class TemplateFile:
    #: where it goes, relative to the new app's root
    path: str
    content: bytes


def template_files(template: Template) -> list[TemplateFile]:
    """Every file of ``template``, sorted by path."""
    found: list[TemplateFile] = []
    _walk(files("eve") / "templates" / template, "", found)
    return sorted(found, key=lambda f: f.path)


def _walk(folder: Traversable, prefix: str, found: list[TemplateFile]) -> None:
    for item in folder.iterdir():
        if item.is_dir():
            if item.name not in _SKIPPED_DIRS:
                _walk(item, f"{prefix}{item.name}/", found)
        elif not item.name.endswith(".pyc"):
            name = _RENAMED.get(item.name, item.name) if not prefix else item.name
            found.append(TemplateFile(path=prefix + name, content=item.read_bytes()))


def create_app(root: Path, template: Template = "app") -> list[str]:
    """Write ``template`` into ``root`` (made if missing); the paths written.

    Raises ``ScaffoldConflict`` naming the files that exist already, having written nothing.
    """
    chosen = template_files(template)
    taken = [f.path for f in chosen if (root / f.path).exists()]
    if taken:
        shown = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
        raise ScaffoldConflict(
            f"eve init would overwrite {shown} in {root}: choose an empty directory "
            "(eve init DIR) or move those files away",
            directory=str(root),
            existing=taken,
        )
    for item in chosen:
        target = root / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(item.content)
    return [f.path for f in chosen]
