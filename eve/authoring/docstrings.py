"""A tool function's docstring read as a model sees it: the description, and each parameter's.

Parsed by ``docstring_parser`` (Google, NumPy, Sphinx/reST and Epydoc styles, detected per
docstring), not by hand. A docstring with no parameter section is kept as it was written.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import docstring_parser


@dataclass(frozen=True, kw_only=True)
class ToolDocstring:
    #: what the tool's description says (the parameter sections taken out)
    description: str | None
    #: each documented parameter's description, by parameter name
    parameters: dict[str, str] = field(default_factory=dict)


def read_docstring(doc: str | None) -> ToolDocstring:
    if not doc:
        return ToolDocstring(description=doc)
    parsed = docstring_parser.parse(doc)
    parameters = {p.arg_name: p.description for p in parsed.params if p.description}
    if not parameters:
        return ToolDocstring(description=doc)
    parts = [parsed.short_description, parsed.long_description]
    if parsed.returns is not None and parsed.returns.description:
        parts.append(f"Returns: {parsed.returns.description}")
    text = "\n\n".join(inspect.cleandoc(part) for part in parts if part)
    return ToolDocstring(description=text or None, parameters=parameters)
