"""The one error tree of eve: every failure a user can cause is a named subclass here.

::

    EveError
    ├── AuthoringError                  a definition built with impossible arguments
    │   └── UnknownStub                 a test stubs a tool the agent does not have
    ├── CompileError                    eve compile could not produce artifacts
    │   └── CompileFailed               diagnostics with errors (carries them)
    ├── ResolveAgentError               artifacts could not be turned into a live agent
    │   ├── ArtifactsMissing            .eve/compile is absent: run eve compile
    │   ├── StaleArtifacts              module map and manifest disagree
    │   ├── ManifestVersionError        artifacts written by an incompatible eve
    │   ├── MissingCompiledModuleNamespace  no loader for a declared source
    │   ├── InvalidModuleExport         an export is not the definition it should be
    │   └── PluginLoadError             an eve.plugins entry point cannot be loaded
    │       └── PluginConflict          two plugins (or a plugin and eve) claim one name
    ├── ContextError
    │   ├── ContextKeyCollision         same name, different codec presence
    │   ├── NoActiveContext             state used outside an eve context
│   └── DepsTypeMismatch            current_deps(T) found deps of another type
    ├── ModelError                      a provider call failed (messages are redacted)
    │   ├── ModelCredentialsMissing     no API key in the environment
    │   ├── ModelSDKMissing             the provider's SDK (an eve extra) is not installed
    │   ├── UnknownModel                a model id with an unknown provider prefix
    │   ├── OfflineScriptError          an offline/script: file is missing or used up
    │   ├── ModelSettingUnsupported     a model setting the provider's API lacks
    │   ├── ModelProtocolError          the stream broke the provider's protocol
    │   ├── ModelHTTPError              an error status
    │   │   ├── ModelContextWindowExceeded  the request is over the window (says what to set)
    │   │   ├── ModelAuthError          401/403
    │   │   └── ModelRateLimited        429
    │   ├── ModelConnectionError        unreachable, or the stream was cut off
    │   └── ModelRetriesExhausted       retries ran out; says what was tried
    ├── MessageInvalid                  a message or content part that cannot be valid
    ├── AttachmentError                 an image or document eve will not send to a model
    │   ├── AttachmentUnsupported       a media type no provider takes, or a URL that is not http(s)
    │   └── AttachmentTooLarge          over the size limit of one attachment, or of a message's
    ├── ToolInputInvalid                a tool call's input fails the schema (the model sees it)
    ├── MCPConnectionError              an MCP server of connections/ failed (the model sees it)
    │   ├── MCPSdkMissing               the agent has connections and the mcp package is absent
    │   ├── MCPServerUnavailable        the server could not be started, reached or kept
    │   ├── MCPUnauthorized             401/403 from a server, with no OAuth declared to answer it
    │   ├── MCPAuthorizationRequired    no one signed in (OAuth) in time, or no one can
    │   ├── MCPAuthorizationFailed      the OAuth flow failed (metadata, registration, token)
    │   ├── MCPCallTimedOut             a tool call outlived the connection's call timeout
    │   ├── MCPToolFailed               the server answered a call with an error
    │   ├── MCPServerError              the server answered with a JSON-RPC error of its own
    │   ├── MCPCallInterrupted          the connection dropped under a call the server got
    │   ├── MCPTaskCancelled            a call run as a task, cancelled with its turn
    │   ├── MCPToolsChanged             a new session lists the called tool differently
    │   ├── MCPResultMalformed          a result that is no valid MCP tool result
    │   └── MCPToolNameClash            two of a server's tools map to one model-visible name
    ├── AgentMemoryError                a memory slot could not do what was asked
    │   ├── MemoryNotFound              404: no entry with this id in the slot's scope
    │   ├── MemorySlotUnknown           404: a slot name the agent does not declare
    │   ├── MemoryUnavailable           503: the slot's store cannot be opened or written
    │   └── MemorySearchUnavailable     semantic search without the memory-semantic extra
    ├── WorkspaceViolation              a built-in file tool asked for a path outside its workspace
    ├── FileToolLimit                   a built-in file tool asked to read or write past its cap
    │   ├── ReadOffsetTooFar            read_file's offset_line lies past the bytes it scans
    │   └── WriteTooLarge               write_file's content is over its size cap
    ├── WorkspaceUnsafe                 the workspace holds .eve/, agent/ or the session database
    ├── SandboxError                    the sandbox could not run commands as declared
    │   ├── SandboxUnavailable          bubblewrap is missing or cannot make its namespaces here
    │   └── WorkspaceTooLarge           a session's workspace grew past its size cap
    ├── TracingSetupError               OTEL_* asks for traces eve cannot export (no otel extra)
    ├── ScaffoldConflict                eve init would overwrite files that exist
    ├── ChannelHandlerInvalid           a define_channel handler answered with no Response
    ├── ExecutionError
    │   ├── EmptyModelResponse          neither text nor tool calls
    │   ├── OutputInvalid               the typed answer stayed invalid after every fix
    │   ├── OutputTruncated             the typed answer was cut at the output token limit
│   ├── DepsFactoryFailed           define_agent(deps=...)'s factory raised at a turn's start
│   ├── InstructionsFailed          instructions.py raised or returned no string
    │   └── TaskError                   a subagent call or workflow tool could not run
    │       ├── SubagentConfigError     a run-time configured subagent has no valid config
    │       │   ├── SubagentConfigMissing   its context key was never set
    │       │   └── SubagentConfigInvalid   its context key holds no valid config
    │       ├── NoOneToAsk              a question where no person can answer
    │       ├── WaitUnavailable         waiting for an event outside a durable session
    │       └── TaskCancelled           the turn was cancelled while the task waited
    ├── TranscriptError
    │   ├── TranscriptCorrupt           a line that is not a message
    │   └── TranscriptWriteFailed       an append failed; the run stops
    ├── SessionError
    │   ├── SessionNotFound             no session has this id
    │   ├── SessionNotActive            the session ended (timeout, token budget)
    │   ├── SessionLimitReached         a session limit crossed with no person to raise it
    │   ├── InputRequestNotPending      an answer to a request that is not waiting
    │   ├── InputOptionUnknown          an answer with an option the request does not offer
    │   ├── FormAnswerInvalid           a form answer whose values do not match its fields
    │   ├── AnswerNotAllowed            an answer from someone the request is not for
    │   ├── TaskNotWaiting              an event for a task that is not waiting
    │   ├── TurnNotFound                a turn id that is no turn of the session
    │   ├── SessionBusy                 a fork of a session whose turn, reset or compaction runs
    │   ├── StepRecordCorrupt           a durable step's record cannot be read
    │   ├── CheckpointMissing           a checkpoint version a replayed workflow loaded is gone
    │   ├── MailboxMessageInvalid       a workflow message no eve sent (eve.wire.mailbox)
    │   ├── RetentionInvalid            a retention period (--older-than, EVE_RETENTION) is not one
    │   ├── TurnLost                    an accepted turn ended with no outcome and could not rerun
    │   ├── MessageTooLong              a message over the configured length
    │   ├── ScheduleError               a schedule of agent/schedules/ could not do what was asked
    │   │   ├── ScheduleNotFound        a name that names no schedule of the agent
    │   │   ├── ScheduleRunFailed       a .py schedule's run(ctx) raised or returned no text
    │   │   └── ScheduleDeliveryFailed  a run's answer could not be posted where it goes
    │   │       └── WebhookDeliveryGaveUp  every try of a webhook POST was refused for now
    │   ├── QueueFull                   503: more turns wait than EVE_MAX_QUEUED_TURNS; retry later
    │   ├── DatabaseUnavailable         the session database cannot be opened
    │   │   └── StorageFailed           a write failed: disk full, I/O error, read-only
    │   ├── DatabaseTooNew              the session database was written by a newer eve
    │   └── ServerConfigError           eve serve cannot start as configured
    │       ├── ServedModelUnavailable  no credentials for the model eve serve would serve
    │       ├── EveAppNotStarted        an embedded eve app got a request before its lifespan
    │       ├── EveAppAlreadyRunning    a second eve app started in a process that runs one
    │       ├── ChannelKindUnavailable  a channel's kind module or protocol package is not installed
    │       ├── AuthConfigInvalid       auth settings that cannot work (an issuer without audience)
    │       └── WorkerIdInUse           a live process holds this worker id (set EVE_WORKER_ID)
    ├── RequestError                    the HTTP server refuses a request as sent
    │   ├── Unauthorized                401: no bearer token, or the wrong one
    │   │   └── InvalidToken            401: a token expired, for another audience, badly signed
    │   ├── InvalidBody                 400: not JSON, unknown fields, wrong types
    │   ├── InvalidPart                 400: a content part of `message` that is not valid
    │   ├── BodyTooLarge                413: over the server's body limit
    │   ├── BodyTooDeep                 400: JSON nested deeper than the server's limit
    │   ├── IdempotencyKeyInvalid       400: an Idempotency-Key that is empty, long or not ASCII
    │   ├── IdempotencyKeyReused        422: a key already used for another request
    │   ├── IdempotencyKeyInProgress    409: the key's first request is still opening its session
    │   ├── InvalidStartIndex           400: a stream's startIndex is not an index
    │   ├── InvalidListQuery            400: a sessions list's limit or cursor is not valid
    │   ├── HostNotAllowed              400: a Host header the server does not answer to
    │   ├── OAuthCallbackInvalid        400: an OAuth callback no authorization waits for
    │   ├── CrossOriginRefused          403: a state-changing request from another origin
    │   ├── UnsupportedContentType      415: a state-changing body that is not JSON
    │   └── ChannelRequestInvalid       400: a channel's protocol refuses the request as sent
    │       ├── ChannelModelUnknown     404: an OpenAI-compatible request names another model
    │       ├── ChannelResponseUnknown  404: a response id that names no turn of a session
    │       ├── ChannelAnswerExpected   409: a message to a session that waits on an answer
    │       └── SlackSignatureInvalid   401: a Slack request without a valid, fresh signature
    ├── AuthError                       who asks could not be established (not the caller's fault)
    │   ├── IdentityProviderUnavailable 503: the OIDC issuer's discovery or keys cannot be fetched
    │   └── AuthHookFailed              500: agent/auth.py raised, or returned no Principal
    ├── ClientError                     eve.client could not do what was asked
    │   ├── APIError                    the server answered {ok: false} (carries status, code)
    │   └── ServerUnreachable           no answer from the server, even after retrying
    └── EvalError                       eve eval could not run the evals (exit code 2)
        ├── EvalLoadError               an eval file failed to import or defines no eval
        ├── EvalNotFound                eve eval NAME names no eval
        └── JudgeAnswerInvalid          a judge model's answer is not a score

tests/test_errors.py checks this drawing against the classes below.

Each class carries the fields a caller needs (paths, names), an ``exit_code`` for the CLI
and an ``http_status`` for the server, so each edge translates errors in one place.
Errors pickle with their fields (DBOS records step failures).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eve.manifest import Diagnostic


__all__ = [
    "APIError",
    "AgentMemoryError",
    "AnswerNotAllowed",
    "ArtifactsMissing",
    "AttachmentError",
    "AttachmentTooLarge",
    "AttachmentUnsupported",
    "AuthConfigInvalid",
    "AuthError",
    "AuthHookFailed",
    "AuthoringError",
    "BodyTooDeep",
    "BodyTooLarge",
    "ChannelAnswerExpected",
    "ChannelHandlerInvalid",
    "ChannelKindUnavailable",
    "ChannelModelUnknown",
    "ChannelRequestInvalid",
    "ChannelResponseUnknown",
    "CheckpointMissing",
    "ClientError",
    "CompileError",
    "CompileFailed",
    "ContextError",
    "ContextKeyCollision",
    "CrossOriginRefused",
    "DatabaseTooNew",
    "DatabaseUnavailable",
    "DepsFactoryFailed",
    "DepsTypeMismatch",
    "EmptyModelResponse",
    "EvalError",
    "EvalLoadError",
    "EvalNotFound",
    "EveAppAlreadyRunning",
    "EveAppNotStarted",
    "EveError",
    "ExecutionError",
    "FileToolLimit",
    "FormAnswerInvalid",
    "HostNotAllowed",
    "IdempotencyKeyInProgress",
    "IdempotencyKeyInvalid",
    "IdempotencyKeyReused",
    "IdentityProviderUnavailable",
    "InputOptionUnknown",
    "InputRequestNotPending",
    "InstructionsFailed",
    "InvalidBody",
    "InvalidListQuery",
    "InvalidModuleExport",
    "InvalidPart",
    "InvalidStartIndex",
    "InvalidToken",
    "JudgeAnswerInvalid",
    "MCPAuthorizationFailed",
    "MCPAuthorizationRequired",
    "MCPCallInterrupted",
    "MCPCallTimedOut",
    "MCPConnectionError",
    "MCPResultMalformed",
    "MCPSdkMissing",
    "MCPServerError",
    "MCPServerUnavailable",
    "MCPTaskCancelled",
    "MCPToolFailed",
    "MCPToolNameClash",
    "MCPToolsChanged",
    "MCPUnauthorized",
    "MailboxMessageInvalid",
    "ManifestVersionError",
    "MemoryNotFound",
    "MemorySearchUnavailable",
    "MemorySlotUnknown",
    "MemoryUnavailable",
    "MessageInvalid",
    "MessageTooLong",
    "MissingCompiledModuleNamespace",
    "ModelAuthError",
    "ModelConnectionError",
    "ModelContextWindowExceeded",
    "ModelCredentialsMissing",
    "ModelError",
    "ModelHTTPError",
    "ModelProtocolError",
    "ModelRateLimited",
    "ModelRetriesExhausted",
    "ModelSDKMissing",
    "ModelSettingUnsupported",
    "NoActiveContext",
    "NoOneToAsk",
    "OAuthCallbackInvalid",
    "OfflineScriptError",
    "OutputInvalid",
    "OutputTruncated",
    "PluginConflict",
    "PluginLoadError",
    "QueueFull",
    "ReadOffsetTooFar",
    "RequestError",
    "ResolveAgentError",
    "RetentionInvalid",
    "SandboxError",
    "SandboxUnavailable",
    "ScaffoldConflict",
    "ScheduleDeliveryFailed",
    "ScheduleError",
    "ScheduleNotFound",
    "ScheduleRunFailed",
    "ServedModelUnavailable",
    "ServerConfigError",
    "ServerNotTrusted",
    "ServerUnreachable",
    "SessionBusy",
    "SessionError",
    "SessionLimitReached",
    "SessionNotActive",
    "SessionNotFound",
    "SlackSignatureInvalid",
    "StaleArtifacts",
    "StepRecordCorrupt",
    "StorageFailed",
    "SubagentConfigError",
    "SubagentConfigInvalid",
    "SubagentConfigMissing",
    "TaskCancelled",
    "TaskError",
    "TaskNotWaiting",
    "ToolInputInvalid",
    "TracingSetupError",
    "TranscriptCorrupt",
    "TranscriptError",
    "TranscriptWriteFailed",
    "TurnLost",
    "TurnNotFound",
    "Unauthorized",
    "UnknownModel",
    "UnknownStub",
    "UnsupportedContentType",
    "WaitUnavailable",
    "WebhookDeliveryGaveUp",
    "WorkerIdInUse",
    "WorkspaceTooLarge",
    "WorkspaceUnsafe",
    "WorkspaceViolation",
    "WriteTooLarge",
]


class EveError(Exception):
    """Base of every error eve raises on purpose.

    A subclass that carries fields declares them in a keyword-only ``__init__`` that takes
    them typed and stores them as attributes, so mypy checks both who raises and who reads.
    """

    exit_code: int = 1
    http_status: int = 500
    code: str = "eve_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        # the default (cls, args) cannot call a keyword-only constructor: rebuild the
        # instance from its attributes instead, so DBOS can record a failed step
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[EveError], message: str, state: dict[str, Any]) -> EveError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class AuthoringError(EveError, TypeError):
    """A ``define_*`` call was given arguments that cannot make a valid definition."""

    code = "authoring_error"


class UnknownStub(AuthoringError):
    """``eve.testing.agent_for_test(tools=...)`` stubs a name no function tool of the agent
    has (a typo, or a tool since renamed): the stub would never run."""

    code = "unknown_stub"

    def __init__(self, message: str, *, tool: str, known: list[str]) -> None:
        super().__init__(message)
        #: the stubbed name, and the function tools the agent has
        self.tool = tool
        self.known = known


class CompileError(EveError):
    """``eve compile`` could not produce artifacts."""

    code = "compile_error"


class CompileFailed(CompileError):
    """Compilation found error diagnostics; ``diagnostics`` lists all of them."""

    code = "compile_failed"

    def __init__(self, message: str, *, diagnostics: list[Diagnostic]) -> None:
        super().__init__(message)
        #: every diagnostic of the failed compile
        self.diagnostics = diagnostics


class ResolveAgentError(EveError):
    """Compiled artifacts could not be resolved into a live agent."""

    code = "resolve_error"

    def __init__(self, message: str, *, node_id: str | None = None) -> None:
        super().__init__(message)
        #: the agent node being resolved, when the failure is about one
        self.node_id = node_id


class ArtifactsMissing(ResolveAgentError):
    """No compiled artifacts where they were expected."""

    code = "artifacts_missing"

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        #: the artifact that is missing
        self.path = path


class StaleArtifacts(ResolveAgentError):
    """The artifacts do not belong together or no longer match the sources."""

    code = "stale_artifacts"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        manifest_fingerprint: str | None = None,
        module_map_fingerprint: str | None = None,
    ) -> None:
        super().__init__(message)
        #: the artifact that is unreadable, when one is
        self.path = path
        #: the two fingerprints, when the manifest and the module map disagree
        self.manifest_fingerprint = manifest_fingerprint
        self.module_map_fingerprint = module_map_fingerprint


class ManifestVersionError(ResolveAgentError):
    """The manifest was written by an eve with another schema version."""

    code = "manifest_version"

    def __init__(self, message: str, *, found: int, expected: int) -> None:
        super().__init__(message)
        #: the schema version of the artifacts, and the one this eve reads
        self.found = found
        self.expected = expected


class MissingCompiledModuleNamespace(ResolveAgentError):
    """The module map has no loader for a source the manifest declares.

    Attributes:
        kind: what the source is (``tool``, ``hook`` …).
        source_id: the stable id of the source (``tools/get_weather.py``).
        logical_path: the path of the source under the app root.
        node_id: the agent node that was searched.
    """

    code = "missing_module_namespace"

    def __init__(self, *, kind: str, source_id: str, logical_path: str, node_id: str) -> None:
        super().__init__(
            f'Missing compiled module namespace for {kind} source "{source_id}" in node '
            f'"{node_id}" ({logical_path}). The compiled artifacts are stale: run `eve compile`.',
            node_id=node_id,
        )
        self.kind = kind
        self.source_id = source_id
        self.logical_path = logical_path


class InvalidModuleExport(ResolveAgentError):
    """A module's export is not the kind of definition the manifest declares."""

    code = "invalid_module_export"

    def __init__(self, message: str, *, source_id: str, logical_path: str) -> None:
        super().__init__(message)
        self.source_id = source_id
        self.logical_path = logical_path


class PluginLoadError(ResolveAgentError):
    """An ``eve.plugins`` entry point failed to import or does not match the hook specs."""

    code = "plugin_load_error"

    def __init__(self, message: str, *, plugin: str) -> None:
        super().__init__(message)
        #: the entry point's name
        self.plugin = plugin


class PluginConflict(PluginLoadError):
    """Two ``eve.plugins`` entry points, or one and eve itself, provide the same name.

    Attributes:
        kind: what is claimed twice (``model provider``, ``tool set``).
        name: the claimed name (a model prefix, a tool set name).
        plugins: the entry points claiming it (``eve`` for a built-in).
    """

    code = "plugin_conflict"

    def __init__(
        self, message: str, *, plugin: str, kind: str, name: str, plugins: list[str]
    ) -> None:
        super().__init__(message, plugin=plugin)
        self.kind = kind
        self.name = name
        self.plugins = plugins


class ContextError(EveError):
    """Misuse of context keys or state."""

    code = "context_error"


class ContextKeyCollision(ContextError):
    """A context key name was registered again with a different codec presence."""

    code = "context_key_collision"

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class NoActiveContext(ContextError):
    """State or a context key was used outside an active eve context."""

    code = "no_active_context"


class DepsTypeMismatch(ContextError):
    """``current_deps(T)`` found the turn's deps to be of another type than ``T``."""

    code = "deps_type_mismatch"

    def __init__(self, message: str, *, expected: str, actual: str) -> None:
        super().__init__(message)
        #: the type asked for, and the type the deps are
        self.expected = expected
        self.actual = actual


class ModelError(EveError):
    """A model provider call failed. Messages never contain credentials."""

    code = "model_error"

    def __init__(self, message: str, *, provider: str | None = None) -> None:
        super().__init__(message)
        #: the provider prefix (``anthropic``, ``openai`` …), when one is concerned
        self.provider = provider


class ModelSettingUnsupported(ModelError):
    """``define_agent(model_settings=...)`` sets what the provider's API has no parameter
    for (a seed on Anthropic's Messages API): refused, not silently dropped."""

    code = "model_setting_unsupported"

    def __init__(self, message: str, *, provider: str, setting: str) -> None:
        super().__init__(message, provider=provider)
        #: the ``model_settings`` field (``seed``, ``stop_sequences``)
        self.setting = setting


class ModelCredentialsMissing(ModelError):
    """No API key for the configured provider (for ``bedrock/``: no AWS credentials or region)."""

    code = "model_credentials_missing"

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message)
        #: the environment variable that should hold the key (never its value)
        self.variable = variable


class ModelSDKMissing(ModelError):
    """The configured provider's SDK is not installed (it comes with an eve extra)."""

    code = "model_sdk_missing"

    def __init__(self, message: str, *, package: str, extra: str) -> None:
        super().__init__(message)
        #: the missing distribution (``google-genai``)
        self.package = package
        #: the eve extra that installs it (``google``)
        self.extra = extra


class UnknownModel(ModelError):
    """A model id whose provider prefix eve does not know."""

    code = "unknown_model"

    def __init__(self, message: str, *, model_id: str) -> None:
        super().__init__(message)
        self.model_id = model_id


class ModelProtocolError(ModelError):
    """The provider's stream broke the protocol (bad index, unclosed block, bad JSON …)."""

    code = "model_protocol_error"


class ModelHTTPError(ModelError):
    """The provider answered with an error status; ``status`` is the HTTP status."""

    code = "model_http_error"

    def __init__(
        self, message: str, *, provider: str, status: int, retry_after: float | None = None
    ) -> None:
        super().__init__(message, provider=provider)
        self.status = status
        #: seconds the provider asked to wait before trying again (``retry-after``), if any
        self.retry_after = retry_after


class ModelContextWindowExceeded(ModelHTTPError):
    """The request did not fit the model's context window (the provider said so): the
    message says to declare the window, so eve compacts and bounds output before it."""

    code = "model_context_window_exceeded"


class ModelAuthError(ModelHTTPError):
    """401/403: the API key was refused."""

    code = "model_auth_error"


class ModelRateLimited(ModelHTTPError):
    """429: slow down or raise the provider's limits."""

    code = "model_rate_limited"


class ModelConnectionError(ModelError):
    """The provider could not be reached or the stream was cut off."""

    code = "model_connection_error"


class ModelRetriesExhausted(ModelError):
    """A model call kept failing in a way worth retrying (``define_agent(retries=...)``)
    and eve stopped trying; the message lists every try and why it stopped."""

    code = "model_retries_exhausted"

    def __init__(
        self, message: str, *, provider: str | None, attempts: int, failures: list[str]
    ) -> None:
        super().__init__(message, provider=provider)
        #: how many times the call was made
        self.attempts = attempts
        #: why each try failed, in order (redacted messages; the last one is the cause)
        self.failures = failures


class MessageInvalid(EveError, ValueError):
    """A message or content part that cannot be valid (an image with neither data nor URL, a
    part of an unknown type). A ``ValueError`` too, so decoding a stored message reports it
    with the record and path it was found at."""

    code = "message_invalid"
    http_status = 400


class AttachmentError(EveError):
    """An image or document that eve will not send to a model; nothing was sent."""

    code = "attachment_error"
    http_status = 400


class AttachmentUnsupported(AttachmentError):
    """An attachment of a media type no provider takes (``media_type``), or a URL that is
    not ``http(s)``; ``source`` is the file or the JSON path it came from."""

    code = "attachment_unsupported"

    def __init__(self, message: str, *, media_type: str, source: str) -> None:
        super().__init__(message)
        self.media_type = media_type
        self.source = source


class AttachmentTooLarge(AttachmentError):
    """An attachment of ``size`` bytes over the ``limit`` for one, or a message whose
    attachments together are."""

    code = "attachment_too_large"
    http_status = 413

    def __init__(self, message: str, *, limit: int, size: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.size = size


class ToolInputInvalid(EveError):
    """A tool call's input does not match the tool's schema; the model sees the message."""

    code = "tool_input_invalid"
    http_status = 400


class AgentMemoryError(EveError):
    """A memory slot (``define_memory``) could not do what was asked; in a tool call the
    model reads the message as a failed result."""

    code = "memory_error"
    http_status = 500


class MemoryNotFound(AgentMemoryError):
    """No entry ``memory_id`` in ``slot`` within the scope asked from (another scope's entry
    is not found either: a scope never reveals another's)."""

    code = "memory_not_found"
    http_status = 404

    def __init__(self, message: str, *, slot: str, memory_id: str) -> None:
        super().__init__(message)
        self.slot = slot
        self.memory_id = memory_id


class MemorySlotUnknown(AgentMemoryError):
    """A memory slot name the agent does not declare (``memory.py``, ``memory/<name>.py``)."""

    code = "memory_slot_unknown"
    http_status = 404

    def __init__(self, message: str, *, slot: str) -> None:
        super().__init__(message)
        self.slot = slot


class MemoryUnavailable(AgentMemoryError):
    """A slot's store cannot be opened or written (no session database in this process, an
    unreachable database, an unreadable memory file); the URL is never shown."""

    code = "memory_unavailable"
    http_status = 503


class MemorySearchUnavailable(AgentMemoryError):
    """A slot searches by meaning (``search="semantic"``) and the local embedding model is
    not installed: ``pip install 'eve-durable[memory-semantic]'``."""

    code = "memory_search_unavailable"
    http_status = 503


class MCPConnectionError(EveError):
    """An MCP server of ``connections/`` failed; a tool call's failure is its ``is_error``
    result, so the model reads the message and the event log names the error."""

    code = "mcp_connection_error"
    http_status = 502

    def __init__(self, message: str, *, connection: str) -> None:
        super().__init__(message)
        #: the connection's name (its file name under ``connections/``)
        self.connection = connection


class MCPSdkMissing(MCPConnectionError):
    """The agent has connections and the ``mcp`` package is not installed."""

    code = "mcp_sdk_missing"


class MCPServerUnavailable(MCPConnectionError):
    """The server could not be started or reached, or it went away and a reconnect failed."""

    code = "mcp_server_unavailable"
    http_status = 503


class MCPUnauthorized(MCPConnectionError):
    """The server answered 401 (or 403) and the connection declares no OAuth that could
    answer it (or its ``get_token``/header credentials were refused)."""

    code = "mcp_unauthorized"
    http_status = 502

    def __init__(
        self, message: str, *, connection: str, status: int, www_authenticate: str | None
    ) -> None:
        super().__init__(message, connection=connection)
        #: the HTTP status the server answered (401 or 403)
        self.status = status
        #: its ``WWW-Authenticate`` header (the scheme, ``resource_metadata``, ``scope``)
        self.www_authenticate = www_authenticate


class MCPAuthorizationRequired(MCPConnectionError):
    """An OAuth connection needs a person to sign in: no one did within the connection's
    ``authorization_timeout_seconds``, or the call runs where no one can be asked."""

    code = "mcp_authorization_required"
    http_status = 401


class MCPAuthorizationFailed(MCPConnectionError):
    """The OAuth flow failed: discovery, client registration, the person refused, or the
    authorization server refused the code or the client (``invalid_grant``,
    ``invalid_client``)."""

    code = "mcp_authorization_failed"
    http_status = 502


class MCPCallTimedOut(MCPConnectionError):
    """A tool call got no answer within the connection's ``call_timeout_seconds``."""

    code = "mcp_call_timed_out"
    http_status = 504

    def __init__(self, message: str, *, connection: str, tool: str, seconds: float) -> None:
        super().__init__(message, connection=connection)
        #: the server's name of the tool
        self.tool = tool
        self.seconds = seconds


class MCPToolFailed(MCPConnectionError):
    """The server answered a tool call with an error (``isError``)."""

    code = "mcp_tool_failed"

    def __init__(self, message: str, *, connection: str, tool: str) -> None:
        super().__init__(message, connection=connection)
        #: the server's name of the tool
        self.tool = tool


class MCPServerError(MCPConnectionError):
    """The server answered a request with a JSON-RPC error (any code, -32000 and -32001
    too: an error the server sent is the server's, never taken for a dropped connection or
    a timeout, so nothing is retried)."""

    code = "mcp_server_error"

    def __init__(self, message: str, *, connection: str, rpc_code: int) -> None:
        super().__init__(message, connection=connection)
        #: the JSON-RPC error code the server sent
        self.rpc_code = rpc_code


class MCPCallInterrupted(MCPConnectionError):
    """The connection dropped after a tool call was sent: the server may have run it, so it
    is not called again (at most once); the next call reconnects."""

    code = "mcp_call_interrupted"
    http_status = 503

    def __init__(self, message: str, *, connection: str, tool: str) -> None:
        super().__init__(message, connection=connection)
        #: the server's name of the tool
        self.tool = tool


class MCPTaskCancelled(MCPConnectionError):
    """A tool call running as an MCP task was cancelled on the server because its turn
    was cancelled."""

    code = "mcp_task_cancelled"
    http_status = 409

    def __init__(self, message: str, *, connection: str, tool: str, task_id: str) -> None:
        super().__init__(message, connection=connection)
        #: the server's name of the tool, and the task's id on the server
        self.tool = tool
        self.task_id = task_id


class MCPToolsChanged(MCPConnectionError):
    """The server ended the session, and the new session lists the called tool differently
    (gone, or another input schema): the call is not sent against the old listing."""

    code = "mcp_tools_changed"
    http_status = 409

    def __init__(self, message: str, *, connection: str, tool: str) -> None:
        super().__init__(message, connection=connection)
        #: the server's name of the tool
        self.tool = tool


class MCPResultMalformed(MCPConnectionError):
    """The server answered a call with something that is no valid tool result."""

    code = "mcp_result_malformed"

    def __init__(self, message: str, *, connection: str, tool: str) -> None:
        super().__init__(message, connection=connection)
        #: the server's name of the tool
        self.tool = tool


class MCPToolNameClash(MCPConnectionError):
    """Two of a server's tools map to one name the model would call."""

    code = "mcp_tool_name_clash"

    def __init__(self, message: str, *, connection: str, name: str) -> None:
        super().__init__(message, connection=connection)
        #: the model-visible name both would take
        self.name = name


class WorkspaceViolation(EveError):
    """A built-in file tool was asked for a path outside its workspace."""

    code = "workspace_violation"
    http_status = 403

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        #: the path the tool was asked for, as given
        self.path = path


class FileToolLimit(EveError):
    """A built-in file tool was asked to read or write past one of its caps (the model sees
    the message, which says what to do instead)."""

    code = "file_tool_limit"
    http_status = 413

    def __init__(self, message: str, *, path: str, limit: int) -> None:
        super().__init__(message)
        #: the path the tool was asked for, as given
        self.path = path
        #: the cap in bytes
        self.limit = limit


class ReadOffsetTooFar(FileToolLimit):
    """``read_file``'s ``offset_line`` was not reached within the ``limit`` bytes it scans
    per call to find a line: a call never reads a whole huge file to show a slice of it."""

    code = "read_offset_too_far"

    def __init__(
        self, message: str, *, path: str, limit: int, offset_line: int, lines: int
    ) -> None:
        super().__init__(message, path=path, limit=limit)
        self.offset_line = offset_line
        #: the lines passed within the scanned bytes
        self.lines = lines


class WriteTooLarge(FileToolLimit):
    """``write_file``'s content is ``size`` bytes, over its ``limit``; nothing was written."""

    code = "write_too_large"

    def __init__(self, message: str, *, path: str, limit: int, size: int) -> None:
        super().__init__(message, path=path, limit=limit)
        self.size = size


class WorkspaceUnsafe(EveError):
    """The configured workspace overlaps eve's own files: ``eve run``, ``dev`` and ``serve``
    refuse to start, since the file tools could read other sessions or plant code."""

    code = "workspace_unsafe"
    exit_code = 2

    def __init__(self, message: str, *, workspace: str, conflict: str) -> None:
        super().__init__(message)
        #: the workspace directory, as configured
        self.workspace = workspace
        #: the protected path it overlaps (``.eve``, ``agent``, a session database)
        self.conflict = conflict


class SandboxError(EveError):
    """The sandbox (``agent/sandbox.py``) could not run commands as declared."""

    code = "sandbox_error"


class SandboxUnavailable(SandboxError):
    """The declared provider cannot run here (no ``bwrap``, or no user namespaces): ``eve
    run``, ``dev`` and ``serve`` refuse to start rather than run commands unconfined."""

    code = "sandbox_unavailable"
    exit_code = 2
    http_status = 503

    def __init__(self, message: str, *, provider: str) -> None:
        super().__init__(message)
        #: the provider that cannot run (``bubblewrap``)
        self.provider = provider


class WorkspaceTooLarge(SandboxError):
    """A session's workspace holds more than its cap (``SandboxLimits(workspace_mb=...)``)
    at a step boundary; the step's record is not written, so the turn fails."""

    code = "workspace_too_large"
    http_status = 413

    def __init__(self, message: str, *, session_id: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.session_id = session_id
        #: the workspace's size in bytes
        self.size = size
        #: the cap in bytes
        self.limit = limit


class ChannelHandlerInvalid(EveError):
    """A ``define_channel`` handler returned something other than a Starlette ``Response``
    (the client gets a 500; the server log names the channel)."""

    code = "channel_handler_invalid"
    http_status = 500

    def __init__(self, message: str, *, channel: str) -> None:
        super().__init__(message)
        self.channel = channel


class ScaffoldConflict(EveError):
    """``eve init`` would overwrite files that exist; it wrote nothing."""

    code = "scaffold_conflict"
    exit_code = 2

    def __init__(self, message: str, *, directory: str, existing: list[str]) -> None:
        super().__init__(message)
        #: the directory the app was to be written into
        self.directory = directory
        #: the template's paths (relative to it) that exist there already
        self.existing = existing


class TracingSetupError(EveError):
    """``eve run``, ``dev`` or ``serve`` was asked for traces (``OTEL_*``) it cannot export:
    the ``eve-durable[otel]`` extra is not installed, or the exporter or protocol named is not one
    eve sets up. They refuse to start rather than run untraced when traces were asked for."""

    code = "tracing_setup_error"
    exit_code = 2

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message)
        #: the environment variable that asked (``OTEL_EXPORTER_OTLP_ENDPOINT`` …)
        self.variable = variable


class ExecutionError(EveError):
    """The agent loop could not continue."""

    code = "execution_error"


class EmptyModelResponse(ExecutionError):
    """The model answered with neither text nor tool calls; nothing was recorded."""

    code = "empty_model_response"


class OutputInvalid(ExecutionError):
    """The model's final answer did not match ``output_schema``, even after it was shown
    what is wrong ``output_retries`` times."""

    code = "output_invalid"

    def __init__(self, message: str, *, attempts: int, problem: str) -> None:
        super().__init__(message)
        #: how many invalid answers the model gave
        self.attempts = attempts
        #: what was wrong with the last one
        self.problem = problem


class OutputTruncated(ExecutionError):
    """The model's typed answer (``output_schema``) was cut at the output token limit
    (stop reason ``max_tokens``): asking it to fix the answer would be cut again."""

    code = "output_truncated"

    def __init__(self, message: str, *, model_id: str, max_output_tokens: int) -> None:
        super().__init__(message)
        #: the model that was cut off
        self.model_id = model_id
        #: the output limit the request asked for
        self.max_output_tokens = max_output_tokens


class DepsFactoryFailed(ExecutionError):
    """``define_agent(deps=...)``'s factory raised (or its generator yielded nothing) when a
    turn started: the turn fails before any model call."""

    code = "deps_factory_failed"

    def __init__(self, message: str, *, node_id: str) -> None:
        super().__init__(message)
        #: the node whose turn needed the deps
        self.node_id = node_id


class InstructionsFailed(ExecutionError):
    """A node's ``instructions.py`` raised, or returned something other than a string, when
    a turn started: the turn fails before any model call."""

    code = "instructions_failed"

    def __init__(self, message: str, *, node_id: str, logical_path: str | None) -> None:
        super().__init__(message)
        self.node_id = node_id
        #: the instructions.py file (None for instructions given in code)
        self.logical_path = logical_path


class TaskError(ExecutionError):
    """A task (a subagent call or a workflow tool) could not run; its call fails with this."""

    code = "task_error"


class SubagentConfigError(TaskError):
    """A subagent configured at run time cannot get a valid configuration."""

    code = "subagent_config_error"

    def __init__(self, message: str, *, node_id: str, key: str) -> None:
        super().__init__(message)
        #: the subagent, and the name of the context key its config is read from
        self.node_id = node_id
        self.key = key


class SubagentConfigMissing(SubagentConfigError):
    """A subagent configured at run time was called before anything set its context key."""

    code = "subagent_config_missing"


class SubagentConfigInvalid(SubagentConfigError):
    """The value in a subagent's runtime-config key is not a valid configuration."""

    code = "subagent_config_invalid"


class NoOneToAsk(TaskError):
    """A workflow tool asked a person a question where no one can answer."""

    code = "no_one_to_ask"


class WaitUnavailable(TaskError):
    """A workflow tool waited for an external event outside a durable session."""

    code = "wait_unavailable"


class TaskCancelled(TaskError):
    """The turn was cancelled while a task waited."""

    code = "task_cancelled"


class TranscriptError(EveError):
    """A session transcript could not be read or written."""

    code = "transcript_error"


class TranscriptCorrupt(TranscriptError):
    """A transcript line is not a message; ``path`` and ``line`` say where."""

    code = "transcript_corrupt"

    def __init__(self, message: str, *, path: str, line: int) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class TranscriptWriteFailed(TranscriptError):
    """A message could not be appended; the run stops rather than continue unsaved."""

    code = "transcript_write_failed"

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class OfflineScriptError(ModelError):
    """An ``offline/script:`` file is missing, malformed or has no response left."""

    code = "offline_script_error"


class SessionError(EveError):
    """A durable-session operation could not be done."""

    code = "session_error"
    http_status = 409


class SessionNotFound(SessionError):
    """No session has this id (``session_id`` says which)."""

    code = "session_not_found"
    http_status = 404

    def __init__(self, message: str, *, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id


class SessionNotActive(SessionError):
    """The session ended (``reason`` says why); start a new session to go on."""

    code = "session_not_active"
    http_status = 409

    def __init__(self, message: str, *, session_id: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.session_id = session_id
        #: why it ended (``ended``, ``session_timeout`` …), ``unknown`` for no such session
        self.reason = reason


class SessionLimitReached(SessionError):
    """A session limit was crossed where no person can raise it (``eve run``, a subagent):
    ``limit`` names it, ``used`` is the session's total, ``allowed`` what it may use."""

    code = "session_limit_reached"
    http_status = 409
    exit_code = 3

    def __init__(
        self, message: str, *, limit: str, used: int | Decimal, allowed: int | Decimal
    ) -> None:
        super().__init__(message)
        #: ``max_input_tokens_per_session``, ``max_output_tokens_per_session`` or
        #: ``max_cost_usd_per_session``
        self.limit = limit
        #: tokens, or USD for the cost limit
        self.used = used
        self.allowed = allowed


class InputRequestNotPending(SessionError):
    """An input response names a request that is not waiting in this session."""

    code = "input_request_not_pending"
    http_status = 409

    def __init__(self, message: str, *, request_id: str) -> None:
        super().__init__(message)
        self.request_id = request_id


class InputOptionUnknown(SessionError):
    """An input response picks an option its request does not offer (``options`` lists them)."""

    code = "input_option_unknown"
    http_status = 400

    def __init__(self, message: str, *, option_id: str, options: list[str]) -> None:
        super().__init__(message)
        self.option_id = option_id
        self.options = options


class FormAnswerInvalid(SessionError):
    """An answer to a form request (an MCP server's elicitation) whose ``values`` do not
    match the form's fields; nothing is answered."""

    code = "form_answer_invalid"
    http_status = 400

    def __init__(self, message: str, *, request_id: str, problems: str) -> None:
        super().__init__(message)
        self.request_id = request_id
        #: what is wrong, field by field
        self.problems = problems


class AnswerNotAllowed(SessionError):
    """An input response from a principal who may see the session but not answer this
    request: only the principal whose message asked it, an operator, or a holder of the
    role its tool names (``answer_by``, e.g. ``role:finance``) may."""

    code = "answer_not_allowed"
    http_status = 403

    def __init__(self, message: str, *, request_id: str, answer_by: str | None) -> None:
        super().__init__(message)
        self.request_id = request_id
        self.answer_by = answer_by


class QueueFull(SessionError):
    """More turns wait in the durable queue than the server takes (``limit``,
    ``EVE_MAX_QUEUED_TURNS``): nothing was accepted; retry after ``retry_after`` seconds."""

    code = "queue_full"
    http_status = 503

    def __init__(self, message: str, *, queued: int, limit: int, retry_after: int) -> None:
        super().__init__(message)
        self.queued = queued
        self.limit = limit
        self.retry_after = retry_after


class DatabaseUnavailable(SessionError):
    """The session database could not be opened or reached; the URL is never shown."""

    code = "database_unavailable"
    http_status = 503


class StorageFailed(DatabaseUnavailable):
    """A write to the session storage failed (``kind``: ``disk_full``, ``io_error``,
    ``read_only`` or ``locked``); the turn it ends is resumed once writes succeed again."""

    code = "storage_failed"
    http_status = 503

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class DatabaseTooNew(SessionError):
    """The session database's tables are at a version newer than this eve knows (a newer
    eve made or upgraded them): it refuses to start on them rather than write rows the
    newer eve would misread (``eve/sessions/schema_record.py``)."""

    code = "database_too_new"
    exit_code = 2
    http_status = 503

    def __init__(self, message: str, *, part: str, found: int, supported: int) -> None:
        super().__init__(message)
        #: which of eve's sets of tables (``tables``)
        self.part = part
        #: the version the database records, and the newest this eve knows
        self.found = found
        self.supported = supported


class ServerConfigError(SessionError):
    """``eve serve`` refuses to start as configured (e.g. public bind without a token)."""

    code = "server_config_error"
    exit_code = 2


class ServedModelUnavailable(ServerConfigError):
    """``eve serve`` or an embedded eve app has no credentials for the agent's model (or
    the agent names none): it refuses to start rather than answer with the offline model
    while its health check says ready. ``--model offline/test`` serves that on purpose."""

    code = "served_model_unavailable"

    def __init__(self, message: str, *, model_id: str | None, variable: str | None) -> None:
        super().__init__(message)
        #: the model that would have been served (``None``: agent.py names none)
        self.model_id = model_id
        #: the environment variable that should hold its key (never its value)
        self.variable = variable


class EveAppNotStarted(ServerConfigError):
    """An eve app mounted in another ASGI app got a request before its lifespan ran: the
    host did not enter ``EveApp.lifespan`` (Starlette and FastAPI do not run a mounted app's)."""

    code = "eve_app_not_started"
    http_status = 500

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        #: the request's path, as the host received it
        self.path = path


class EveAppAlreadyRunning(ServerConfigError):
    """An eve app's lifespan started while another eve app runs in the same process: the
    durable engine (DBOS) is one per process, so one process serves one eve app."""

    code = "eve_app_already_running"

    def __init__(self, message: str, *, app_root: str, running_app_root: str) -> None:
        super().__init__(message)
        #: the app root of the app refused, and of the one already running
        self.app_root = app_root
        self.running_app_root = running_app_root


class ChannelKindUnavailable(ServerConfigError):
    """A channel of ``agent/channels/`` has a kind eve cannot load: its module is not part of
    this eve, or the protocol package it needs is not installed (the message names the
    extra to install)."""

    code = "channel_kind_unavailable"

    def __init__(self, message: str, *, kind: str, missing: str, extra: str | None) -> None:
        super().__init__(message)
        self.kind = kind
        #: the module that could not be imported (the kind's, or its protocol package's)
        self.missing = missing
        #: the eve extra that installs it, when one does
        self.extra = extra


class MessageTooLong(SessionError):
    """A message is longer than the server accepts (``limit`` characters)."""

    code = "message_too_long"
    http_status = 413

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class StepRecordCorrupt(SessionError):
    """A durable step's record cannot be read (a malformed message part, an edited record):
    the turn cannot be replayed from it."""

    code = "step_record_corrupt"
    http_status = 500

    def __init__(self, message: str, *, workflow_id: str, step: str) -> None:
        super().__init__(message)
        #: the turn's workflow (``<session>:turn-<n>``) and the step's key (``step:0``)
        self.workflow_id = workflow_id
        self.step = step


class CheckpointMissing(SessionError):
    """The checkpoint version a workflow loaded (the one before its own save, or an older
    eve's recorded ``checkpoint.load`` step) is no longer stored, so it cannot be replayed
    from the history it started with."""

    code = "checkpoint_missing"
    http_status = 500

    def __init__(self, message: str, *, session_id: str, version: int) -> None:
        super().__init__(message)
        self.session_id = session_id
        #: the version the workflow's first run loaded
        self.version = version


class MailboxMessageInvalid(SessionError):
    """A parked workflow received a message on its mailbox topic that is none of eve's
    (``eve.wire.mailbox``): something other than the session service sent it. The turn
    or task fails with it; ``detail`` says what did not fit, never the message itself."""

    code = "mailbox_message_invalid"
    http_status = 500

    def __init__(self, message: str, *, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class RetentionInvalid(SessionError):
    """A retention period is not one eve reads (``--older-than``, ``EVE_RETENTION``): a
    number and a unit, ``30d``, ``12h``, ``90m``, ``45s``, or ``off``."""

    code = "retention_invalid"
    http_status = 400
    exit_code = 2

    def __init__(self, message: str, *, value: str) -> None:
        super().__init__(message)
        #: what was given, as given
        self.value = value


class TurnLost(SessionError):
    """An accepted turn's workflow ended without an outcome in the log (cancelled by hand in
    DBOS, or crashed more often than DBOS retries) and could not run again in its place: the
    session went on without it. Its ``turn.failed`` carries this error."""

    code = "turn_lost"
    http_status = 500

    def __init__(self, message: str, *, session_id: str, turn_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id
        #: ``turn_<n>``, as the 202 that accepted it said
        self.turn_id = turn_id


class ScheduleError(SessionError):
    """A schedule of ``agent/schedules/`` could not do what was asked (``name`` says which)."""

    code = "schedule_error"

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


class ScheduleNotFound(ScheduleError):
    """A name that names no schedule of the compiled agent (``eve schedules list``)."""

    code = "schedule_not_found"
    http_status = 404


class ScheduleRunFailed(ScheduleError):
    """A ``.py`` schedule's ``run(ctx)`` raised, or returned something that is neither text
    nor None: its tick sends nothing (the workflow records this error)."""

    code = "schedule_run_failed"
    http_status = 500


class ScheduleDeliveryFailed(ScheduleError):
    """A run's answer could not be posted to its webhook (``status``: the last HTTP status,
    None when the URL's variable is unset or nothing answered); the URL is never shown."""

    code = "schedule_delivery_failed"
    http_status = 502

    def __init__(self, message: str, *, name: str, status: int | None) -> None:
        super().__init__(message, name=name)
        self.status = status


class WebhookDeliveryGaveUp(ScheduleDeliveryFailed):
    """Every try of a run's webhook POST met no answer or a "not now" (408, 429, 5xx):
    delivery stopped. ``webhook_id`` is the message's id, the same on every try, for
    finding it in the receiver's logs; ``status`` the last try's (None: no answer)."""

    code = "webhook_delivery_gave_up"

    def __init__(
        self, message: str, *, name: str, status: int | None, webhook_id: str, attempts: int
    ) -> None:
        super().__init__(message, name=name, status=status)
        self.webhook_id = webhook_id
        self.attempts = attempts


class TaskNotWaiting(SessionError):
    """An event was sent to a task that is not a running task of this session."""

    code = "task_not_waiting"
    http_status = 409

    def __init__(self, message: str, *, task_id: str) -> None:
        super().__init__(message)
        self.task_id = task_id


class AuthConfigInvalid(ServerConfigError):
    """The auth settings cannot work: an issuer without an audience (or the reverse), an
    issuer that is not an ``https`` URL (``http`` only on loopback), an empty roles claim."""

    code = "auth_config_invalid"

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


class WorkerIdInUse(ServerConfigError):
    """Another live process holds this process's worker id (its DBOS executor id) on the
    same database: started, each would run the other's unfinished turns as its own
    (``eve/sessions/worker_identity.py``). ``EVE_WORKER_ID`` gives each its own."""

    code = "worker_id_in_use"
    http_status = 503

    def __init__(self, message: str, *, executor_id: str, host: str, pid: int) -> None:
        super().__init__(message)
        self.executor_id = executor_id
        #: where the process holding it runs
        self.host = host
        self.pid = pid


class TurnNotFound(SessionError):
    """A turn id names no turn of this session (a channel reads turns by id: an MCP
    ``agent_get``); a turn accepted and not started yet is not this, it is queued."""

    code = "turn_not_found"
    http_status = 404

    def __init__(self, message: str, *, session_id: str, turn_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.turn_id = turn_id


class SessionBusy(SessionError):
    """A session was asked to fork while a turn, reset or compaction of it runs, waits on a
    person or is queued: a fork copies a session between its turns (``sessions.forking``)."""

    code = "session_busy"
    http_status = 409

    def __init__(self, message: str, *, session_id: str, place: str) -> None:
        super().__init__(message)
        self.session_id = session_id
        #: what holds the session: ``turn_<n>``, ``reset`` or ``compaction``
        self.place = place


class RequestError(EveError):
    """The HTTP server refuses a request as it was sent; nothing was changed."""

    code = "invalid_request"
    http_status = 400


class Unauthorized(RequestError):
    """The request has no bearer token or the wrong one (every route but health needs it)."""

    code = "unauthorized"
    http_status = 401


class InvalidToken(Unauthorized):
    """The bearer token is a JWT eve does not accept: expired or not yet valid, for another
    audience or issuer, signed by an unknown key or not signed right, or not a JWT at all.
    The answer's ``WWW-Authenticate`` says ``error="invalid_token"``; neither the token nor
    its claims are ever shown."""

    code = "invalid_token"


class InvalidBody(RequestError):
    """The body is not JSON, has unknown fields or wrong types, or breaks a rule of its route."""

    code = "invalid_body"
    http_status = 400


class InvalidPart(RequestError):
    """A content part of a body's ``message`` is not valid (an unknown ``type``, no
    ``media_type``, bad base64, neither or both of ``data`` and ``url``); ``path`` is its
    JSON path (``$.message[1].data``)."""

    code = "invalid_part"
    http_status = 400

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class BodyTooLarge(RequestError):
    """The body is over the server's limit (``limit`` bytes)."""

    code = "body_too_large"
    http_status = 413

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class BodyTooDeep(RequestError):
    """The JSON body nests arrays and objects deeper than ``limit`` levels."""

    code = "body_too_deep"
    http_status = 400

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class IdempotencyKeyInvalid(RequestError):
    """The ``Idempotency-Key`` header is empty, over ``limit`` characters or not printable
    ASCII."""

    code = "idempotency_key_invalid"
    http_status = 400

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class IdempotencyKeyReused(RequestError):
    """The ``Idempotency-Key`` was already used on this route (and session) for a request
    with another body; nothing was done."""

    code = "idempotency_key_reused"
    http_status = 422

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class IdempotencyKeyInProgress(RequestError):
    """A repeated create found its first request (``key``) still opening ``session_id``
    after waiting for it; nothing was done twice. Send the request again in a moment."""

    code = "idempotency_key_in_progress"
    http_status = 409

    def __init__(self, message: str, *, key: str | None, session_id: str) -> None:
        super().__init__(message)
        self.key = key
        self.session_id = session_id


class InvalidStartIndex(RequestError):
    """A stream's ``startIndex`` is not a whole number in range, in ASCII digits."""

    code = "invalid_start_index"
    http_status = 400


class InvalidListQuery(RequestError):
    """``GET /sessions``: ``limit`` is not a whole number in range, or ``cursor`` is not one
    this server gave out."""

    code = "invalid_list_query"
    http_status = 400


class HostNotAllowed(RequestError):
    """The request's ``Host`` header names a host the server does not answer to (a page
    reaching a loopback server through a DNS name that points there: DNS rebinding).
    ``host`` is the header as sent, cut to 100 characters; nothing was done."""

    code = "host_not_allowed"
    http_status = 400

    def __init__(self, message: str, *, host: str) -> None:
        super().__init__(message)
        self.host = host


class OAuthCallbackInvalid(RequestError):
    """An OAuth callback (``/eve/v1/oauth/callback``) that no authorization waits for: an
    unknown or used ``state``, or neither ``code`` nor ``error``."""

    code = "oauth_callback_invalid"
    http_status = 400


class CrossOriginRefused(RequestError):
    """A state-changing request (POST, PUT, PATCH, DELETE) came from a page of another
    origin: its ``Origin`` is not the server's, or ``Sec-Fetch-Site`` says another site.
    ``origin`` is what the request named (the ``Origin``, else ``Sec-Fetch-Site``); nothing
    was done."""

    code = "cross_origin_refused"
    http_status = 403

    def __init__(self, message: str, *, origin: str) -> None:
        super().__init__(message)
        self.origin = origin


class UnsupportedContentType(RequestError):
    """A state-changing request has a body that is not declared ``application/json`` (a
    form or ``text/plain`` post, which a page of any origin can send); nothing was done."""

    code = "unsupported_content_type"
    http_status = 415

    def __init__(self, message: str, *, content_type: str) -> None:
        super().__init__(message)
        self.content_type = content_type


class AuthError(EveError):
    """The server could not establish who asks, through no fault of the request."""

    code = "auth_error"
    http_status = 500


class IdentityProviderUnavailable(AuthError):
    """The OIDC issuer's discovery document or keys cannot be fetched (``url``): at start
    ``eve serve`` stops with it (exit code 2); a request that needed fresh keys gets 503."""

    code = "identity_provider_unavailable"
    http_status = 503
    exit_code = 2

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class AuthHookFailed(AuthError):
    """``agent/auth.py``'s ``authenticate`` raised, or returned something that is neither a
    ``Principal`` nor None. Its message names the file and the exception's type, never the
    exception's text (which may quote a credential)."""

    code = "auth_hook_failed"
    http_status = 500

    def __init__(self, message: str, *, source: str) -> None:
        super().__init__(message)
        self.source = source


class ChannelRequestInvalid(RequestError):
    """A channel's protocol refuses the request as sent (``eve/channels/kinds/``): ``param``
    is the field at fault in the protocol's own terms (``messages[0].content``), or None.
    Nothing was stored."""

    code = "invalid_request"
    http_status = 400

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ChannelModelUnknown(ChannelRequestInvalid):
    """An OpenAI-compatible request names a ``model`` the channel does not serve."""

    code = "model_not_found"
    http_status = 404

    def __init__(self, message: str, *, param: str | None = "model", model: str) -> None:
        super().__init__(message, param=param)
        self.model = model


class ChannelResponseUnknown(ChannelRequestInvalid):
    """A response id (``previous_response_id``, a retrieve or cancel) that is not one the
    channel gave out, or whose session is gone."""

    code = "response_not_found"
    http_status = 404

    def __init__(self, message: str, *, param: str | None = None, response_id: str) -> None:
        super().__init__(message, param=param)
        self.response_id = response_id


class ChannelAnswerExpected(ChannelRequestInvalid):
    """The session's turn waits on a person (an approval, a question) and the request is
    not an answer to it: ``options`` are what it accepts."""

    code = "answer_expected"
    http_status = 409

    def __init__(self, message: str, *, param: str | None = None, options: list[str]) -> None:
        super().__init__(message, param=param)
        self.options = options


class SlackSignatureInvalid(ChannelRequestInvalid):
    """A request to a Slack channel has no ``X-Slack-Signature``, a wrong one, or a
    timestamp outside Slack's five-minute window; nothing was done."""

    code = "invalid_signature"
    http_status = 401


class ClientError(EveError):
    """``eve.client`` could not complete a call to an eve server."""

    code = "client_error"


class APIError(ClientError):
    """The server refused the request: ``status`` is the HTTP status and ``code`` the error
    code of its ``{ok: false, code, error}`` body (see docs/http-api.md for each)."""

    #: the class's default; each instance's ``code`` is the one the server answered with
    code = "api_error"

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class ServerUnreachable(ClientError):
    """The server did not answer (not running, wrong URL, or down longer than the client's
    ``reconnect_timeout``); check the URL and that ``eve serve`` is up."""

    code = "server_unreachable"


class ServerNotTrusted(ServerUnreachable):
    """The server's TLS certificate was not trusted (signed by no CA the client knows, for
    another name, or expired); trying again would not change that, so it is raised at once.
    A certificate of your own CA: set ``SSL_CERT_FILE`` to its bundle."""

    code = "server_not_trusted"


class EvalError(EveError):
    """``eve eval`` could not run the evals (as opposed to a case failing: exit code 1)."""

    code = "eval_error"
    exit_code = 2


class EvalLoadError(EvalError):
    """An eval file under ``agent/evals/`` failed to import, or defines no eval."""

    code = "eval_load_error"

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        super().__init__(message)
        #: the eval file, relative to the app root, and the line that failed when known
        self.path = path
        self.line = line


class EvalNotFound(EvalError):
    """``eve eval NAME`` names no eval of the agent."""

    code = "eval_not_found"

    def __init__(self, message: str, *, name: str, known: list[str]) -> None:
        super().__init__(message)
        #: the name asked for, and the evals there are
        self.name = name
        self.known = known


class JudgeAnswerInvalid(EvalError):
    """A judge model answered something that is not a score from 0 to 1; the case fails
    with it."""

    code = "judge_answer_invalid"

    def __init__(self, message: str, *, model: str, answer: str) -> None:
        super().__init__(message)
        #: the judge's model id, and (the start of) what it answered
        self.model = model
        self.answer = answer
