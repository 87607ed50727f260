"""``eve__skill``: the model loads a skill's body when the task needs it.

Its description lists the node's skills by name and description, so the list travels with
the tool list to whoever runs the loop (``eve run``, a durable session, your own
``run_agent``) and the system prompt stays exactly ``instructions.md``. The body is read
from the skill file at call time, front matter stripped: nothing is imported, and only the
skills the model chose to load take room in its context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eve._frontmatter import FrontMatterError, parse_front_matter
from eve.authoring.context import ToolContext
from eve.authoring.tools import Execute
from eve.builtins._limits import READ_MAX_BYTES, capped_text
from eve.builtins.automatic import SKILL_TOOL, declaration
from eve.errors import StaleArtifacts, ToolInputInvalid
from eve.manifest import FunctionToolEntry, SkillEntry


def skill_declaration(skills: Sequence[SkillEntry]) -> FunctionToolEntry:
    """``eve__skill`` as the model sees it: the skills listed in its description."""
    assert skills, "eve__skill comes only with skills"
    listing = "\n".join(f"- {skill.name}: {skill.description}" for skill in skills)
    return declaration(
        SKILL_TOOL,
        "Load a skill: instructions for one kind of task, kept out of the prompt until "
        "needed. Before doing what a skill is for, load it and follow it. The skills:\n" + listing,
        {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The skill's name, from the list above.",
                    "examples": [skills[0].name],
                }
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    )


def skill_body(text: str) -> str:
    """The part of a skill file the model reads: everything after the front matter."""
    try:
        return parse_front_matter(text)[1]
    except FrontMatterError:
        # edited since the compile that found its description; the text is still the skill
        return text.strip("\n") + "\n"


def _read(path: Path, logical_path: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise StaleArtifacts(
            f"{logical_path} no longer exists; the agent was compiled with it: run `eve compile`"
        ) from None
    except OSError as error:
        # the model sees this text: name the file as the app does, not by its host path
        raise OSError(f"{logical_path}: {error.strerror}") from None
    body = skill_body(data.decode("utf-8", errors="replace")).encode()
    return capped_text(body, len(body), READ_MAX_BYTES)


def skill_loader(skills: Sequence[SkillEntry], app_root: Path) -> Execute:
    """``eve__skill``'s execute for these skills, whose paths are relative to ``app_root``."""
    known = {skill.name: skill for skill in skills}

    async def load_skill(data: dict[str, Any], ctx: ToolContext) -> str:
        name = data["name"]
        skill = known.get(name)
        if skill is None:
            raise ToolInputInvalid(
                f"there is no skill named {name!r}; the skills are: {', '.join(sorted(known))}"
            )
        # a file read, off the event loop: one process serves every session
        return await asyncio.to_thread(_read, app_root / skill.logical_path, skill.logical_path)

    return load_skill
