"""The A2A request handler over eve's sessions: every JSON-RPC method, with no store of its own.

The a2a-sdk's dispatcher parses and answers JSON-RPC; this handler does each method with
``ChannelSessions`` alone: a message creates a session or continues one (the context), each
turn is a task (``a2a_tasks``), and a task's state, history and stream are read back from
the session's event log. A dropped stream is subscribed to again from the log, an answer to
``input-required`` is an eve input response, and nothing is lost across a restart, because
nothing lives here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any, Literal, NoReturn

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers.request_handler import RequestHandler, validate_request_params
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskState,
    UnsupportedOperationError,
)
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
)
from a2a.utils.task import apply_history_length, validate_history_length

from eve.auth import Principal
from eve.channels.a2a_input import answers_of, user_message_of
from eve.channels.a2a_tasks import TaskRef, TurnView, parse_task_id
from eve.channels.mount import ChannelMount
from eve.channels.sessions import ChannelSessions
from eve.errors import AttachmentError, EveError, SessionNotActive, SessionNotFound
from eve.events import decode_event
from eve.sessions.idempotency import parse_key

#: the key of ``ServerCallContext.state`` that holds the request's principal
PRINCIPAL = "eve.principal"
#: a stream ends at the task's end, or also where it waits for input (``interrupt``)
Until = Literal["end", "interrupt"]
#: ListTasks pages: 50 tasks unless asked for fewer, 100 at most (the protocol's bounds)
DEFAULT_PAGE, MAX_PAGE = 50, 100


@contextmanager
def _as_a2a() -> Iterator[None]:
    """eve's refusals as the protocol's errors, their message and eve's code kept."""
    try:
        yield
    except SessionNotActive as error:
        if error.reason == "unknown":
            raise InvalidParamsError(
                f"no context {error.session_id}: send the message without a contextId to start one",
                data={"code": error.code},
            ) from error
        raise UnsupportedOperationError(str(error), data={"code": error.code}) from error
    except AttachmentError as error:
        raise ContentTypeNotSupportedError(str(error), data={"code": error.code}) from error
    except EveError as error:
        if error.http_status >= 500:
            raise
        raise InvalidParamsError(str(error), data={"code": error.code}) from error


class EveRequestHandler(RequestHandler):
    """A2A's methods as operations on the sessions of the request's principal."""

    def __init__(self, mount: ChannelMount[Any]) -> None:
        self.mount = mount

    def _sessions(self, context: ServerCallContext) -> ChannelSessions:
        principal: Principal = context.state[PRINCIPAL]
        return self.mount.sessions(principal)

    # --- messages ----------------------------------------------------------------------

    @validate_request_params
    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        sessions = self._sessions(context)
        view, start, answered = await self._accept(sessions, params)
        if not params.configuration.return_immediately:
            async for _ in _turn_updates(sessions, view, start, answered=answered):
                pass
        return apply_history_length(view.task(), params.configuration)

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncIterator[Event]:
        sessions = self._sessions(context)
        view, start, answered = await self._accept(sessions, params, streamed=True)
        yield apply_history_length(view.task(), params.configuration)
        async for update in _turn_updates(sessions, view, start, answered=answered):
            yield update

    async def _accept(
        self, sessions: ChannelSessions, params: SendMessageRequest, *, streamed: bool = False
    ) -> tuple[TurnView, int, bool]:
        """Do what the message asks; the task it concerns as of the log's ``start`` (where
        following it goes on from), and whether the message answered it. A new task
        ``streamed`` is taken from its start: its stream carries every update (the answer's
        chunks too) however far the turn ran before the stream began; a quick turn that
        ended first was streamed as one finished task."""
        message = params.message
        if params.configuration.HasField("task_push_notification_config"):
            raise PushNotificationNotSupportedError(_NO_PUSH)
        validate_history_length(params.configuration)
        with _as_a2a():
            key = parse_key(f"a2a:{message.message_id}")
            if message.task_id:
                return await self._answer(sessions, message, key)
            user = user_message_of(message)
            if message.context_id:
                accepted = await sessions.send(message.context_id, user, key=key)
            else:
                accepted = await sessions.create(user, key=key)
        assert accepted.turn_id is not None, "a message always makes a turn"
        ref = TaskRef(session_id=accepted.session_id, turn_id=accepted.turn_id)
        if streamed:
            return TurnView(ref), await sessions.turn_start(ref.session_id, ref.turn_id), False
        view, start = await _snapshot(sessions, ref)
        return view, start, False

    async def _answer(
        self, sessions: ChannelSessions, message: Message, key: str | None
    ) -> tuple[TurnView, int, bool]:
        ref = parse_task_id(message.task_id)
        if message.context_id and message.context_id != ref.session_id:
            raise InvalidParamsError(
                f"task {ref.id} belongs to context {ref.session_id}, not {message.context_id}"
            )
        # read before answering: following from here sees the answer taken
        view, start = await _snapshot(sessions, ref)
        if not view.waiting:
            if await _replayed(sessions, view, message, key):
                return view, start, True
            raise UnsupportedOperationError(_not_waiting(view))
        answers = answers_of(message, list(view.pending.values()))
        await sessions.respond(ref.session_id, answers, key=key)
        return view, start, True

    # --- tasks ---------------------------------------------------------------------------

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        validate_history_length(params)
        view, _ = await _snapshot(self._sessions(context), parse_task_id(params.id))
        return apply_history_length(view.task(), params)

    @validate_request_params
    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        sessions = self._sessions(context)
        view, start = await _snapshot(sessions, parse_task_id(params.id))
        if view.terminal or (
            view.state == TaskState.TASK_STATE_SUBMITTED
            # the log may not tell yet that a turn the engine runs has started
            and await sessions.running_turn(view.ref.session_id) != view.ref.turn_id
        ):
            raise TaskNotCancelableError(_not_cancelable(view))
        await sessions.cancel(view.ref.session_id)
        async for _ in _follow(sessions, view, start, "end"):
            pass
        return view.task()

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncIterator[Event]:
        sessions = self._sessions(context)
        view, start = await _snapshot(sessions, parse_task_id(params.id))
        if view.terminal:
            raise UnsupportedOperationError(
                f"task {view.ref.id} has ended ({_state(view)}): read it with GetTask"
            )
        yield view.task()
        if not view.waiting:
            async for update in _follow(sessions, view, start, "interrupt"):
                yield update

    @validate_request_params
    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        if not params.context_id:
            raise InvalidParamsError(
                "ListTasks needs a contextId: eve lists the tasks of one context (session)"
            )
        validate_history_length(params)
        size = params.page_size or DEFAULT_PAGE
        if not 1 <= size <= MAX_PAGE:
            raise InvalidParamsError(f"pageSize must be 1 to {MAX_PAGE}, not {size}")
        tasks = await _tasks_of(self._sessions(context), params.context_id)
        tasks = [t for t in tasks if _listed(t, params)]
        first = _page_start(params.page_token, tasks)
        page = tasks[first : first + size]
        more = first + size < len(tasks)
        return ListTasksResponse(
            tasks=[apply_history_length(t, params) for t in page],
            next_page_token=page[-1].id if more else "",
            page_size=size,
            total_size=len(tasks),
        )

    # --- what eve does not offer -----------------------------------------------------------

    async def _no_push(self, params: object, context: ServerCallContext) -> NoReturn:
        raise PushNotificationNotSupportedError(_NO_PUSH)

    on_create_task_push_notification_config = _no_push
    on_get_task_push_notification_config = _no_push
    on_list_task_push_notification_configs = _no_push
    on_delete_task_push_notification_config = _no_push

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError("eve's A2A channel has one public card")


_NO_PUSH = (
    "eve's A2A channel has no push notifications: stream the task (SendStreamingMessage, "
    "SubscribeToTask) or poll GetTask"
)


async def _replayed(
    sessions: ChannelSessions, view: TurnView, message: Message, key: str | None
) -> bool:
    """Whether ``message`` is a retry (same messageId) of the one that answered the task's
    last requests: the session's idempotency record says so, and nothing is answered again."""
    if key is None or not view.asked:
        return False
    try:
        answers = answers_of(message, view.asked)
        accepted = await sessions.respond(view.ref.session_id, answers, key=key)
    except (A2AError, EveError):
        return False  # not the same answer: the task is simply not waiting
    return accepted.replayed


def _state(view: TurnView) -> str:
    name = str(TaskState.Name(view.state))
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _not_waiting(view: TurnView) -> str:
    if view.terminal:
        return (
            f"task {view.ref.id} has ended ({_state(view)}) and takes no more messages: send "
            f"the message with contextId {view.ref.session_id} and no taskId for a new task"
        )
    return f"task {view.ref.id} is {_state(view)}: it takes a message only in input-required"


def _not_cancelable(view: TurnView) -> str:
    if view.terminal:
        return f"task {view.ref.id} has ended ({_state(view)})"
    return (
        f"task {view.ref.id} has not started (it is queued behind its context's running "
        "task): cancel it once it runs"
    )


# --- reading the log -------------------------------------------------------------------------


async def _exists(sessions: ChannelSessions, ref: TaskRef) -> None:
    """A turn the session accepted (queued or not yet in the log is still a task)."""
    try:
        row = await sessions.get(ref.session_id)
    except SessionNotFound:
        raise TaskNotFoundError(f"no task {ref.id}: no context {ref.session_id}") from None
    if ref.number >= row.next_turn:
        raise TaskNotFoundError(f"no task {ref.id}: its context has no {ref.turn_id}")


async def _snapshot(sessions: ChannelSessions, ref: TaskRef) -> tuple[TurnView, int]:
    """The task as the log tells it now, and the index after the log's last event. Only
    the turn's stretch of the log is read: a task costs its own events, not its context's
    history."""
    await _exists(sessions, ref)
    view = TurnView(ref)
    start = await sessions.turn_start(ref.session_id, ref.turn_id)
    async for line in await sessions.events(ref.session_id, start, follow=False):
        view.apply(decode_event(line))
        start += 1
    return view, start


async def _follow(
    sessions: ChannelSessions, view: TurnView, start: int, until: Until
) -> AsyncIterator[Event]:
    """The task's updates from the log's ``start`` on, live, until it ends (or, ``until``
    ``interrupt``, waits for input)."""
    if view.terminal:
        return
    async for line in await sessions.events(view.ref.session_id, start, follow=True):
        if not line:
            continue  # a keep-alive of the log
        updates = view.apply(decode_event(line))
        for update in updates:
            yield update
        if view.terminal:
            return
        # a status sent while the task waits is its question: the stream ends on it
        if until == "interrupt" and view.waiting and updates:
            return


def _turn_updates(
    sessions: ChannelSessions, view: TurnView, start: int, *, answered: bool
) -> AsyncIterator[Event]:
    """A message's stream: to the task's end or its next wait for input (a task that waits
    already, unanswered, has nothing to follow)."""
    if view.waiting and not answered:
        return _nothing()
    return _follow(sessions, view, start, "interrupt")


async def _nothing() -> AsyncIterator[Event]:
    return
    yield


async def _tasks_of(sessions: ChannelSessions, session_id: str) -> list[Task]:
    """Every task of the context, newest first: one pass over its log."""
    try:
        row = await sessions.get(session_id)
    except SessionNotFound:
        raise InvalidParamsError(f"no context {session_id}") from None
    views = [TurnView(TaskRef(session_id, f"turn_{n}")) for n in range(row.next_turn)]
    started = -1
    async for line in await sessions.events(session_id, 0, follow=False):
        event = decode_event(line)
        number = _turn_number(event.data.turn_id)
        if event.data.parent is None and number is not None and number < len(views):
            started = max(started, number)
            views[number].apply(event)
        elif event.data.parent is not None and started >= 0:
            views[started].apply(event)  # a subagent's, during the turn that runs
    # a place with no events before a started turn was a reset or compaction, not a task;
    # one after the last started turn is a task still queued
    kept = [v for v in views if v.ref.number > started or v.state != TaskState.TASK_STATE_SUBMITTED]
    return [view.task() for view in reversed(kept)]


def _turn_number(turn_id: str | None) -> int | None:
    if turn_id is None or not turn_id.startswith("turn_"):
        return None
    return int(turn_id.removeprefix("turn_"))


def _listed(task: Task, params: ListTasksRequest) -> bool:
    if params.status and task.status.state != params.status:
        return False
    if params.HasField("status_timestamp_after"):
        after = params.status_timestamp_after.ToDatetime()
        return bool(task.status.timestamp.ToDatetime() > after)
    return True


def _page_start(token: str, tasks: list[Task]) -> int:
    if not token:
        return 0
    ids = [task.id for task in tasks]
    if token not in ids:
        raise InvalidParamsError(f"pageToken {token!r} is not one this context's list gave")
    return ids.index(token) + 1
