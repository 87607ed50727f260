"""One model response: assembling it from its stream (the parts in order, deltas for
display) and the response a step records."""

from __future__ import annotations

from dataclasses import dataclass, field

from eve._usage import TokenUsage
from eve.messages import AssistantMessage, AssistantPart, StopReason, TextPart, ToolCallPart
from eve.models.events import Done, PartCompleted, ToolCallEnd


@dataclass
class ResponseParts:
    """The parts of a response as its events arrive.

    Two accounts are kept: the adapter's own (``PartCompleted`` blocks and tool calls, in
    the order they completed) and one built from the deltas (the text so far, then the tool
    calls), for models that send no ``PartCompleted``. The adapter's wins when it sent any:
    it holds what the provider must get back verbatim.
    """

    completed: list[AssistantPart] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    calls: list[ToolCallPart] = field(default_factory=list)
    adapter_parts: bool = False
    done: Done | None = None

    def add_text(self, delta: str) -> None:
        self.text.append(delta)

    def add_call(self, end: ToolCallEnd) -> None:
        call = ToolCallPart(id=end.id, name=end.name, input=end.input)
        self.calls.append(call)
        self.completed.append(call)

    def add_part(self, event: PartCompleted) -> None:
        self.adapter_parts = True
        self.completed.append(event.part)

    def restart(self) -> None:
        """The call is being tried again: what it streamed so far is void."""
        self.__init__()  # type: ignore[misc]

    def parts(self) -> list[AssistantPart]:
        if self.adapter_parts:
            return list(self.completed)
        text = "".join(self.text)
        head: list[AssistantPart] = [TextPart(text=text)] if text else []
        return [*head, *self.calls]


class ModelResponse(AssistantMessage, frozen=True, kw_only=True):
    """One step's complete model response: the assistant message it records (its parts, in
    the order the model produced them) with why it ended and what it cost. Step records
    from before content parts (``text`` and ``tool_calls``) decode as AssistantMessage's do."""

    finish_reason: StopReason
    usage: TokenUsage
    #: the model that answered (a fallback chain's may not be the first); None in step
    #: records from before fallback chains, where it was always the node's model
    model: str | None = None

    def message(self) -> AssistantMessage:
        """What the history records of it."""
        return AssistantMessage(parts=self.parts)
