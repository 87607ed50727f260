"""The checkpoint a turn ended with, kept decoded in this worker for the session's next turn.

Every turn starts from its session's checkpoint: the whole history, read with the body's
progress (``store.turn_progress``) and decoded, every message and part a new object. The
turn before built that checkpoint itself in this worker and saved it, so the next turn here
takes the object it saved instead of decoding the text back: a cost that grows with the
session's history, paid once a turn (in a ``--gil`` profile of ``sqlite-1w-1000``, where
sessions hold a few turns, ``decode_checkpoint`` was 4 % of the interpreter's lock).

A kept checkpoint stands for exactly the text the store holds: it is taken only for the
version it was saved as, and only while the text the turn read is the text that was saved.
The text was not redacted (it holds no ``[redacted]`` mark, which every redaction leaves),
so it is the kept object's own encoding. Anything else (another worker's save, a reset, a
replay that starts from the version before its own save, a redacted secret) decodes as
before. An entry is taken out as it is used, so a turn that fails leaves nothing behind
that it may have changed; the next turn decodes. What is kept is bounded by the stored
text's length (``MOST_CHARS``, the oldest entries going first).
"""

from __future__ import annotations

from dataclasses import dataclass

from eve._redact import REDACTED
from eve.sessions.checkpoint import SessionCheckpoint
from eve.sessions.store import CheckpointSave, StartingCheckpoint

#: the stored text the kept checkpoints stand for, at most, all sessions together (their
#: objects take a few times as much memory)
MOST_CHARS = 16_000_000


@dataclass(frozen=True, slots=True)
class _Kept:
    version: int
    data: str
    checkpoint: SessionCheckpoint


class CarriedCheckpoints:
    """The checkpoints this worker's turns saved last, by session, until the next loads one."""

    def __init__(self, *, most_chars: int = MOST_CHARS) -> None:
        self.most_chars = most_chars
        self._kept: dict[str, _Kept] = {}
        self._chars = 0
        #: loads that took a kept checkpoint, and loads that decoded (for tests and the bench)
        self.taken = 0
        self.decoded = 0

    def keep(self, save: CheckpointSave, checkpoint: SessionCheckpoint) -> None:
        """``checkpoint``, committed as ``save``, for the session's next turn here."""
        self._drop(save.session_id)
        data = save.data
        if data is None or REDACTED in data or len(data) > self.most_chars:
            return
        self._kept[save.session_id] = _Kept(save.version, data, checkpoint)
        self._chars += len(data)
        while self._chars > self.most_chars:
            self._drop(next(iter(self._kept)))

    def take(self, session_id: str, start: StartingCheckpoint) -> SessionCheckpoint | None:
        """The kept checkpoint that ``start`` (read from the store) is, taken out; None when
        none is kept or it is not that one."""
        kept = self._drop(session_id)
        if kept is None or kept.version != start.version or kept.data != start.data:
            self.decoded += 1
            return None
        self.taken += 1
        return kept.checkpoint

    def _drop(self, session_id: str) -> _Kept | None:
        kept = self._kept.pop(session_id, None)
        if kept is not None:
            self._chars -= len(kept.data)
        return kept
