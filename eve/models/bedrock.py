"""Stream models on Amazon Bedrock through ``boto3``'s ConverseStream as eve model events.

``BedrockModel`` serves ``bedrock/<model id>`` (``bedrock/anthropic.claude-sonnet-4-5-…``,
``bedrock/us.amazon.nova-pro-v1:0``, an inference profile's ARN). It builds each request
(``bedrock_request``), streams it, and translates the events (``bedrock_stream``).

``boto3`` is synchronous, so the call and each read of its event stream run on a thread pool
of the model's own (a read waits for the model's next event: sharing asyncio's default pool,
a few slow streams would hold every thread). Credentials and region come from the AWS
standard chain (environment, profile, SSO, container or instance role); the credentials are
resolved on that thread, before the first call, so a missing one is a named error and their
secret parts are redacted from everything eve prints or stores from then on. The SDK's own
retries are off: eve retries (``_streaming``) throttling and unavailability as it does for
every provider.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache, partial
from typing import Any

import boto3
import urllib3.exceptions
from botocore import exceptions as boto_errors
from botocore.config import Config
from botocore.eventstream import ParserError

from eve._redact import RedactingFilter, add_secret, redact
from eve.errors import (
    ModelAuthError,
    ModelConnectionError,
    ModelContextWindowExceeded,
    ModelCredentialsMissing,
)
from eve.models._guarded import GuardedTranslator
from eve.models._http_errors import WINDOW_HINT, connection_error, provider_error, status_error
from eve.models._streaming import SDKModel
from eve.models._tool_input import protocol_error
from eve.models.base import ModelRequest
from eve.models.bedrock_request import PROVIDER, request_params
from eve.models.bedrock_stream import BedrockTranslator, translate_bedrock_events

__all__ = ["BedrockModel", "BedrockTranslator", "bedrock_model", "translate_bedrock_events"]

#: streams one model reads at once (each holds a thread and a pooled connection while open)
MAX_STREAMS = 32
#: how the ValidationException of a request over the window reads (besides the words every
#: provider's window error is matched by, in ``_http_errors``)
_TOO_LONG = ("input is too long", "too many input tokens", "context length")
#: the chain found none, half of a pair, or a source that failed (an expired SSO token)
_NO_CREDENTIALS = (
    boto_errors.NoCredentialsError,
    boto_errors.PartialCredentialsError,
    boto_errors.CredentialRetrievalError,
    boto_errors.TokenRetrievalError,
)
_CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run `aws configure` / "
    "`aws sso login` (any source of the AWS standard credential chain)"
)


#: the SDK's loggers whose DEBUG records quote a request or a response (a logger's filter sees
#: only its own records, not its children's): the prepared request's headers, with a session
#: token, the canonical request that is signed, and the model's answers
_SDK_LOGGERS = ("botocore.endpoint", "botocore.auth", "botocore.parsers", "botocore.httpsession")
for _name in _SDK_LOGGERS:
    logging.getLogger(_name).addFilter(RedactingFilter())


@cache
def _pool() -> ThreadPoolExecutor:
    """The threads every Bedrock model's calls and reads run on, made on first use (one pool
    per process: a client is made per agent node and run, its pool would outlive it)."""
    return ThreadPoolExecutor(MAX_STREAMS, thread_name_prefix="eve-bedrock")


class _Events:
    """The SDK's event stream, each event read on the pool; closable as the pump needs
    (closing drops the connection, which ends a read still waiting on it)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        loop = asyncio.get_running_loop()
        events: Iterator[dict[str, Any]] = iter(self._stream)
        # None ends it: every event is a dict
        while (event := await loop.run_in_executor(_pool(), next, events, None)) is not None:
            yield event

    async def close(self) -> None:
        self._stream.close()


class BedrockModel(SDKModel[Any]):
    """A ``ModelClient`` for ``bedrock/<model id>``."""

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        session: boto3.Session,
        region: str,
        endpoint_url: str | None = None,
        bearer_token: str | None = None,
    ) -> None:
        self._session = session
        self._region = region
        #: a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``, which botocore sends instead of
        #: signing): no AWS credentials are needed then
        self._bearer_token = bearer_token
        # a boto3 session is not thread-safe: clients and credentials are made under this
        self._lock = threading.Lock()
        self._client: Any = None
        super().__init__(model, api_key="", base_url=endpoint_url, max_retries=0)

    def __repr__(self) -> str:
        return f"BedrockModel({self._model!r}, region={self._region!r})"

    def _new_client(self) -> Any:
        """The boto3 client, made once on the pool (loading its service model blocks) and
        shared by every event loop: unlike the async SDKs' clients, it holds no loop-bound
        connections. ``total_max_attempts=1``: the SDK tries once and eve retries
        (``SDKModel.stream``)."""
        config = Config(
            retries={"total_max_attempts": 1},
            max_pool_connections=MAX_STREAMS,
            user_agent_extra="eve",
        )
        return self._session.client(
            "bedrock-runtime",
            region_name=self._region,
            endpoint_url=self._base_url,
            config=config,
        )

    def _translator(self) -> GuardedTranslator:
        return GuardedTranslator(PROVIDER, BedrockTranslator())

    async def _start(self, request: ModelRequest) -> _Events:
        params = request_params(self._model, request)
        loop = asyncio.get_running_loop()
        response = await loop.run_in_executor(_pool(), partial(self._open, params))
        return _Events(response["stream"])

    def _open(self, params: dict[str, Any]) -> Any:
        """The call, on the pool: credentials first (a missing one names the fix)."""
        with self._lock:
            self._learn_secrets()
            if self._client is None:
                self._client = self._new_client()
        return self._client.converse_stream(**params)

    def _learn_secrets(self) -> None:
        if self._bearer_token:
            add_secret(self._bearer_token)
            return
        # resolved once by the session, refreshed by it when temporary credentials expire
        credentials = self._session.get_credentials()
        if credentials is None:
            raise boto_errors.NoCredentialsError()
        frozen = credentials.get_frozen_credentials()
        for secret in (frozen.secret_key, frozen.token):
            if secret:
                add_secret(secret)

    @contextmanager
    def _sdk_errors(self) -> Iterator[None]:
        try:
            yield
        except boto_errors.EventStreamError as error:
            raise _stream_error(error) from error
        except boto_errors.ClientError as error:
            raise _client_error(error) from error
        except _NO_CREDENTIALS as error:
            raise _credentials_missing(str(error)) from error
        except (boto_errors.HTTPClientError, urllib3.exceptions.HTTPError) as error:
            raise connection_error(
                PROVIDER, str(error) or type(error).__name__, secret=None
            ) from error
        except ParserError as error:
            detail = f"the event stream is malformed ({type(error).__name__}: {error})"
            raise protocol_error(PROVIDER, detail) from error
        except boto_errors.ParamValidationError as error:
            # a field the SDK does not take (in model_settings.extra): it fails the same way again
            detail = f"the SDK cannot build the request: {error}"
            raise provider_error(PROVIDER, detail, secret=None) from error
        except boto_errors.BotoCoreError as error:
            raise provider_error(PROVIDER, str(error), secret=None) from error


def _credentials_missing(detail: str) -> ModelCredentialsMissing:
    return ModelCredentialsMissing(
        redact(f"{PROVIDER}: no usable AWS credentials ({detail}): {_CREDENTIALS_HINT}"),
        variable="AWS_ACCESS_KEY_ID",
    )


def _client_error(error: boto_errors.ClientError) -> Exception:
    """An error response: its status and the exception type the API named."""
    details = error.response.get("Error") or {}
    code, message = str(details.get("Code") or ""), str(details.get("Message") or "")
    status = int((error.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 500)
    return _status(code, message, status)


def _status(code: str, message: str, status: int) -> Exception:
    detail = f"{code}: {message}" if code and message else message or code or "no detail"
    if status in (401, 403):
        # AccessDeniedException is also "no access to this model" (Bedrock's Model access)
        return ModelAuthError(
            redact(
                f"{PROVIDER}: HTTP {status}: {detail} (check the AWS credentials, and that "
                "the account has been granted access to the model in this region)"
            ),
            status=status,
            provider=PROVIDER,
        )
    if status == 400 and any(words in message.lower() for words in _TOO_LONG):
        return ModelContextWindowExceeded(
            redact(f"{PROVIDER}: HTTP 400: {detail}") + WINDOW_HINT, status=400, provider=PROVIDER
        )
    return status_error(PROVIDER, status, detail, secret=None)


def _stream_error(error: boto_errors.EventStreamError) -> Exception:
    """An exception event inside a 200 stream: judged like the same exception sent as a
    response (its documented status), except ``modelStreamErrorException``, which says the
    model's stream broke ("Retry your request", API reference): a cut stream, tried again."""
    details = error.response.get("Error") or {}
    code, message = str(details.get("Code") or ""), str(details.get("Message") or "")
    if code == "modelStreamErrorException":
        return ModelConnectionError(
            redact(f"{PROVIDER}: the model's stream failed ({code}: {message})"),
            provider=PROVIDER,
        )
    return _status(code, message, _documented_status(code))


def _documented_status(code: str) -> int:
    """The HTTP status the service model gives the exception named ``code`` (500 unknown)."""
    from botocore.session import get_session

    shape_name = code[:1].upper() + code[1:]
    try:
        shape = get_session().get_service_model("bedrock-runtime").shape_for(shape_name)
    except boto_errors.BotoCoreError:
        return 500
    return int((shape.metadata.get("error") or {}).get("httpStatusCode") or 500)


def bedrock_model(name: str, env: Mapping[str, str]) -> BedrockModel:
    """The client for ``bedrock/<name>`` from the environment.

    Region: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, else the profile's (``AWS_PROFILE``).
    Credentials: the standard chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
    ``AWS_SESSION_TOKEN`` when ``env`` holds them, else profiles, SSO, roles). Endpoint:
    ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, else ``AWS_ENDPOINT_URL``, else AWS's.
    """
    keys: dict[str, str] = {}
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        keys = {
            "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        }
        if env.get("AWS_SESSION_TOKEN"):
            keys["aws_session_token"] = env["AWS_SESSION_TOKEN"]
    try:
        session = boto3.Session(profile_name=env.get("AWS_PROFILE") or None, **keys)
    except boto_errors.ProfileNotFound as error:
        raise ModelCredentialsMissing(
            f"{PROVIDER}: {error}: set AWS_PROFILE to a profile of the AWS config",
            variable="AWS_PROFILE",
        ) from error
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or session.region_name
    if not region:
        raise ModelCredentialsMissing(
            f"AWS_REGION is not set: export it (or set a region in the AWS profile) to use "
            f"bedrock/{name}",
            variable="AWS_REGION",
        )
    endpoint = env.get("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or env.get("AWS_ENDPOINT_URL")
    return BedrockModel(
        name,
        session=session,
        region=region,
        endpoint_url=endpoint or None,
        bearer_token=env.get("AWS_BEARER_TOKEN_BEDROCK") or None,
    )
