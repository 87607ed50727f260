"""Tool input validation: the live pydantic model when there is one, else the JSON Schema."""

from __future__ import annotations

from typing import Any, Protocol

import pydantic

from eve._format import join_problems, pydantic_problems
from eve.errors import ToolInputInvalid
from eve.runtime.flat_schema import flat_check


class InputValidator(Protocol):
    def validate(self, data: dict[str, Any]) -> Any:
        """Return the value ``execute`` receives, or raise ``ToolInputInvalid``."""
        ...


class PydanticValidator:
    def __init__(self, model: type[pydantic.BaseModel]) -> None:
        self.model = model

    def validate(self, data: dict[str, Any]) -> Any:
        try:
            return self.model.model_validate(data)
        except pydantic.ValidationError as error:
            problems = pydantic_problems(error, top="(input)")
            raise ToolInputInvalid(f"invalid input: {problems}") from None


class JsonSchemaValidator:
    def __init__(self, schema: dict[str, Any]) -> None:
        # imported here: jsonschema costs ~30 ms at start-up, and most agents' tools have
        # pydantic models, so `eve run` should not pay for it until a plain schema needs it
        import jsonschema

        cls = jsonschema.validators.validator_for(schema)
        self.validator = cls(schema)
        #: a quick yes for a flat object of typed fields (``flat_schema``); None: none
        self.quick = flat_check(schema)

    def validate(self, data: dict[str, Any]) -> Any:
        if self.quick is not None and isinstance(data, dict) and self.quick(data):
            return data
        errors = sorted(self.validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            problems = join_problems(((e.absolute_path, e.message) for e in errors), top="(input)")
            raise ToolInputInvalid(f"invalid input: {problems}")
        return data
