"""Running one tool call: validate, approve, execute, project — always exactly one result."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, assert_never, runtime_checkable

import msgspec
import pydantic

from eve._cancellation import CancelSignal
from eve._redact import redact
from eve.auth.principal import OPERATOR, Principal
from eve.authoring.context import ToolContext
from eve.context.active import active_context
from eve.costs import Spend
from eve.errors import EveError
from eve.events import ActionPartialData, ResultStatus
from eve.execution.events import EventEmitter
from eve.execution.tracebacks import tool_traceback
from eve.messages import (
    DocumentPart,
    ImagePart,
    TextPart,
    ToolCall,
    ToolResultMessage,
    ToolResultPart,
)
from eve.runtime.partials import running_call_partial
from eve.runtime.resolved import (
    ResolvedFunctionTool,
    ResolvedProviderTool,
    ResolvedSubagent,
    ResolvedTool,
    ResolvedWorkflowTool,
    RunnableTool,
)
from eve.runtime.server_asks import CallAsks, running_call_asks
from eve.tracing import ToolCallSpan

ABORTED_BEFORE_EXECUTION = "aborted before execution"


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    """What an approval hook is asked: may this call run?"""

    tool_name: str
    call_id: str
    input: dict[str, Any]
    #: ``always``, ``once`` or ``policy`` (a policy that answered needs-user-approval)
    rule: str
    #: who may answer besides the turn's principal and operators (``role:<name>``)
    by: str | None = None


ApprovalHook = Callable[[ApprovalRequest], Awaitable[bool] | bool]


@runtime_checkable
class ApprovesTogether(Protocol):
    """An approval hook that takes all of one step's requests as one round (a durable
    session's: one ``input.requested`` naming every call); a plain hook is asked about
    them one after another."""

    def __call__(self, request: ApprovalRequest) -> Awaitable[bool] | bool: ...

    async def together(self, requests: Sequence[ApprovalRequest]) -> Sequence[bool]: ...


@dataclass(frozen=True, kw_only=True)
class Admitted:
    """A validated, approved call, ready to run."""

    call: ToolCall
    tool: RunnableTool
    data: Any


@dataclass(frozen=True)
class NeedsPerson:
    """A call that may run only once a person approves it, and the rule that says so."""

    rule: str


class CallOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call's result as the loop records it (a Struct, so recorders can store it)."""

    result: ToolResultMessage
    status: ResultStatus
    ends_turn: bool = False
    #: a subagent's tokens and cost, which count toward the caller's turn
    spend: Spend | None = None
    #: a tool that raised: its traceback, for the event (``eve.execution.tracebacks``)
    traceback: str | None = None
    #: what the event keeps when the model reads less (a result over the model's cap):
    #: the whole text up to the store's cap (``eve.execution.tool_output``)
    stored_output: str | None = None
    #: what an MCP server's sampling requests spent of the agent's model during the call
    #: (``execution.call_asks``), counted in the step like a subagent's ``spend``
    sampled: Spend | None = None


def _encode_default(value: Any) -> Any:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    return str(value)


def render_content(value: Any) -> str:
    """What the model reads: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value, enc_hook=_encode_default).decode()


def result_parts(value: Any) -> list[ToolResultPart]:
    """A tool's return value as the parts of its result.

    An ``ImagePart`` or ``DocumentPart`` reaches the model as an image or a document, not
    as JSON; so does each one in a list, in order with the list's strings (``TextPart``s);
    any other value is one text part (``render_content``).
    """
    if isinstance(value, ImagePart | DocumentPart | TextPart):
        return [value]
    if isinstance(value, list | tuple) and any(
        isinstance(v, ImagePart | DocumentPart) for v in value
    ):
        return [p for v in value for p in result_parts(v)]
    return [TextPart(text=render_content(value))]


def partial_data(value: Any) -> Any:
    """What ``action.partial`` carries: a string as it is, anything else as JSON data."""
    return value if isinstance(value, str) else msgspec.json.decode(render_content(value))


async def publish_partial(
    emitter: EventEmitter, *, turn_id: str | None, step: int, call: ToolCall, value: Any
) -> None:
    """``action.partial``: a tool's progress (a generator's yield, a workflow's report)."""
    await emitter.emit(
        ActionPartialData(
            turn_id=turn_id,
            step_index=step,
            call_id=call.id,
            name=call.name,
            partial=partial_data(value),
        )
    )


def outcome(
    call: ToolCall, content: str | list[ToolResultPart], status: ResultStatus
) -> CallOutcome:
    """The call's result: ``content`` is the text the model reads, or the result's parts."""
    parts = [TextPart(text=content)] if isinstance(content, str) else content
    return CallOutcome(
        result=ToolResultMessage(
            tool_call_id=call.id,
            parts=[TextPart(text=redact(p.text)) if isinstance(p, TextPart) else p for p in parts],
            is_error=status != "completed",
            name=call.name,
        ),
        status=status,
    )


def raised(call: ToolCall, error: Exception) -> CallOutcome:
    """The result of a tool that raised ``error``: the model reads ``ErrorName: message``;
    the traceback goes only to the event, for a person."""
    failed = outcome(call, f"{type(error).__name__}: {error}", "failed")
    return msgspec.structs.replace(failed, traceback=tool_traceback(error))


@dataclass(kw_only=True)
class ToolRunner:
    """Runs calls for one turn: look up, validate, check approval, execute."""

    tools: dict[str, ResolvedTool]
    approve: ApprovalHook | None
    emitter: EventEmitter
    signal: CancelSignal
    session_id: str
    node_id: str
    workspace: Path
    turn_id: str | None = None
    #: the node's cap on one result's text for the model (a tool's own comes first;
    #: ``eve.execution.tool_output.agent_output_limit``)
    output_limit: int
    #: who sent the turn's message: ``ctx.principal`` of every call
    principal: Principal = OPERATOR
    #: what a call offers the MCP server running it (``execution.call_asks``); None: the
    #: server's elicitation and sampling requests are refused
    asks: Callable[[ToolCall], CallAsks] | None = None
    #: the node lets calls of one step run concurrently (``define_agent(parallel_tools=)``)
    parallel: bool = True

    def output_limit_of(self, call: ToolCall) -> int:
        """The cap on what ``call``'s result sends to the model: the tool's, else the node's."""
        match self.tools.get(call.name):
            case ResolvedFunctionTool(entry=entry):
                own = entry.max_output_chars
                return self.output_limit if own is None else own
            case ResolvedWorkflowTool() | ResolvedSubagent() | ResolvedProviderTool() | None:
                return self.output_limit
            case unknown:
                assert_never(unknown)

    def concurrent(self, admitted: Admitted) -> bool:
        """Whether ``admitted`` may run beside the other calls of its step."""
        match admitted.tool:
            case ResolvedFunctionTool(entry=entry):
                return self.parallel and entry.parallel
            case ResolvedWorkflowTool() | ResolvedSubagent():
                return False  # tasks run between parts, one at a time
            case _:
                assert_never(admitted.tool)

    async def needs_person(
        self, tool: RunnableTool, data: Any, approved_once: AbstractSet[str]
    ) -> str | None:
        """The rule that requires asking a person, ``"denied"`` for a policy refusal, or None."""
        match tool:
            case ResolvedSubagent():
                return None  # delegating asks no one; the subagent's tools ask for themselves
            case ResolvedFunctionTool() | ResolvedWorkflowTool():
                rule = tool.approval
            case _:
                assert_never(tool)
        if rule.kind == "never" or (rule.kind == "once" and tool.name in approved_once):
            return None
        if rule.kind == "policy" and rule.policy is not None:
            decision = rule.policy(data)
            if inspect.isawaitable(decision):
                decision = await decision
            if decision in (True, "approved"):
                return None
            if decision in (False, "denied"):
                return "denied"
        return rule.kind

    def approval_request(self, call: ToolCall, rule: str) -> ApprovalRequest:
        match self.tools.get(call.name):
            case ResolvedFunctionTool(approval=approval) | ResolvedWorkflowTool(approval=approval):
                by = approval.by
            case ResolvedSubagent() | ResolvedProviderTool() | None:
                by = None
            case unknown:
                assert_never(unknown)
        return ApprovalRequest(
            tool_name=call.name, call_id=call.id, input=call.input, rule=rule, by=by
        )

    async def ask(self, asks: Sequence[tuple[ToolCall, str]]) -> list[bool]:
        """A person's answer about each ``(call, rule)``, asked in one round: all at once
        when the hook takes a round (``ApprovesTogether``), else one after another."""
        if self.approve is None:
            return [False for _ in asks]
        requests = [self.approval_request(call, rule) for call, rule in asks]
        if isinstance(self.approve, ApprovesTogether):
            return list(await self.approve.together(requests))
        answers: list[bool] = []
        for request in requests:
            answer = self.approve(request)
            answers.append(bool(await answer) if inspect.isawaitable(answer) else bool(answer))
        return answers

    def _validated(self, call: ToolCall) -> tuple[RunnableTool, Any] | CallOutcome:
        match self.tools.get(call.name):
            case None:
                names = ", ".join(sorted(self.tools)) or "none"
                return outcome(call, f"unknown tool '{call.name}' (available: {names})", "failed")
            case ResolvedProviderTool():
                text = f"{call.name} is run by the model provider, not by eve"
                return outcome(call, text, "failed")
            case ResolvedFunctionTool() | ResolvedWorkflowTool() | ResolvedSubagent() as tool:
                try:
                    return tool, tool.validator.validate(call.input)
                except EveError as error:
                    return outcome(call, str(error), "failed")
            case unknown:
                assert_never(unknown)

    async def admit(
        self, call: ToolCall, approved_once: AbstractSet[str]
    ) -> Admitted | CallOutcome | NeedsPerson:
        """Look up, validate and check approval: the call to run, the result instead, or
        the rule by which a person must decide first (then ``answered`` takes the answer).

        Nothing here waits for a person, so it can run inside a checkpointed step; asking
        happens between steps, where a durable session can park the turn.
        """
        found = self._validated(call)
        if isinstance(found, CallOutcome):
            return found
        tool, data = found
        rule = await self.needs_person(tool, data, approved_once)
        if rule is None:
            return Admitted(call=call, tool=tool, data=data)
        if rule == "denied":
            return outcome(call, f"the approval policy of {call.name} denied this call", "rejected")
        return NeedsPerson(rule=rule)

    def answered(self, call: ToolCall, approved: bool) -> Admitted | CallOutcome:
        """The call ``admit`` held for a person, now that they answered."""
        found = self._validated(call)
        if isinstance(found, CallOutcome):
            return found
        tool, data = found
        if self.signal.cancelled:
            return outcome(call, ABORTED_BEFORE_EXECUTION, "failed")
        if not approved:
            who = "a person denied" if self.approve else "no one can approve here, so eve denied"
            return outcome(call, f"{call.name} needs approval and {who} this call", "rejected")
        return Admitted(call=call, tool=tool, data=data)

    async def run_admitted(self, admitted: Admitted, step_index: int) -> CallOutcome:
        """Run an admitted function tool (tasks run in the task runner, not here)."""
        call, tool = admitted.call, admitted.tool
        assert isinstance(tool, ResolvedFunctionTool), "tasks run in the task runner"
        span = ToolCallSpan(
            call.name, call.id, call.input, session_id=self.session_id, step=step_index
        )
        asks = None if self.asks is None else self.asks(call)
        with span:
            try:
                value = await self.execute(tool, call, admitted.data, step_index, asks)
                if tool.to_model_output is not None:
                    value = tool.to_model_output(value)
            except Exception as error:
                failed = raised(call, error)
                span.failed(error, failed.traceback)
                return msgspec.structs.replace(failed, sampled=_sampled(asks))
            done = outcome(call, result_parts(value), "completed")
            span.completed(done.result.content)
        return CallOutcome(
            result=done.result,
            status="completed",
            ends_turn=tool.entry.ends_turn,
            sampled=_sampled(asks),
        )

    async def execute(
        self,
        tool: ResolvedFunctionTool,
        call: ToolCall,
        data: Any,
        step: int,
        asks: CallAsks | None = None,
    ) -> Any:
        ctx = ToolContext(
            session_id=self.session_id,
            call_id=call.id,
            tool_name=call.name,
            node_id=self.node_id,
            signal=self.signal,
            workspace=self.workspace,
            principal=self.principal,
            turn_id=self.turn_id or "turn_0",
            deps=_turn_deps(),
        )
        fn = tool.execute

        async def report(value: Any) -> None:
            await publish_partial(
                self.emitter, turn_id=self.turn_id, step=step, call=call, value=value
            )

        # a tool that reports progress without being a generator (an MCP server's
        # notifications) finds where to through this (``eve.runtime.partials``)
        running_call_partial.set(report)
        running_call_asks.set(asks)  # an MCP server's questions (``runtime.server_asks``)
        if inspect.isasyncgenfunction(fn):
            last: Any = None
            async for last in fn(data, ctx):
                await publish_partial(
                    self.emitter, turn_id=self.turn_id, step=step, call=call, value=last
                )
            return last
        if inspect.iscoroutinefunction(fn):
            return await fn(data, ctx)
        # Sync tools run in a thread so a slow one cannot stall other sessions; the context
        # (define_state) travels with it.
        result = await asyncio.to_thread(fn, data, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result


def _turn_deps() -> Any:
    # the running turn's (``execution.deps``): in its context, as ``define_state`` is
    context = active_context()
    return None if context is None else context.deps


def _sampled(asks: CallAsks | None) -> Spend | None:
    spent = None if asks is None else asks.spent
    return spent if spent is not None and spent != Spend() else None
