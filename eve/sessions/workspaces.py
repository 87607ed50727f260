"""Durable workspaces: a sandboxed session's files, checkpointed at every step boundary.

Each durable step part records, beside its value and state, the id of the tree its
session's workspace held after it (``eve.sandbox.snapshot``); the tree and the bytes of its
files go to the session store (``eve_workspace_trees``, ``eve_workspace_blobs``: each file
content once, however many steps and sessions hold it) and the session's head moves to it
(``eve_workspace_heads``), and the workflow the step ran in is noted as naming the tree
(``eve_workspace_refs``: what retention's sweep keeps a tree for, ``workspace_sweep``). So:

- a turn resumed after a crash puts the workspace back as each replayed step left it, and
  what the crashed attempt wrote after its last record is gone before the step runs again;
- a worker without the directory (another machine, a restart on a fresh disk) restores it
  from the head when the session's next turn starts;
- a reset puts back the seed files (``sandbox/workspace/``), and a fork starts a session
  from another's head.

The workspace may hold at most ``SandboxLimits.workspace_mb``; past it the step fails with
``WorkspaceTooLarge``, before anything of it is stored.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from eve.errors import WorkspaceTooLarge
from eve.sandbox.bindings import (
    SESSIONS_DIR,
    SandboxBinding,
    binding_of,
    hand_over,
    seed_workspace,
    session_directory,
)
from eve.sandbox.snapshot import Tree, decode_tree, encode_tree, read_blob, restore, scan, tree_id
from eve.sessions.store import SessionStore
from eve.sessions.tables import workspace_blobs, workspace_heads, workspace_refs, workspace_trees

_MIB = 1024 * 1024


@dataclass(kw_only=True)
class WorkspaceKeeper:
    """One session's workspace and its records in the store."""

    store: SessionStore
    session_id: str
    directory: Path
    binding: SandboxBinding
    #: the tree the directory holds as far as this process knows (None: unknown)
    current: str | None = field(default=None)
    #: the (workflow, tree) pair last noted in ``eve_workspace_refs`` by this process
    noted: tuple[str, str] | None = field(default=None)
    #: one checkpoint at a time: the calls of a parallel batch each record a step, and
    #: ``current``/``noted`` must move with the tree each one stored
    _saving: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def open(self) -> None:
        """Before a turn: the directory as the session last left it (its head: another
        worker may have run its last turn, or this one removed it as unused), or the seed
        files for a new session."""
        with workspace_lock(self.directory.parent.parent, exclusive=False):
            head = self.store.run(lambda c: _head(c, self.session_id))
            if head is not None:
                self.restore(head)
            elif not self.directory.is_dir():
                seed_workspace(self.directory, self.binding, self.session_id)
            self.touch()

    def touch(self) -> None:
        """Mark the directory used now: a worker removes one unused for long
        (``workspace_disk``)."""
        with contextlib.suppress(FileNotFoundError):
            os.utime(self.directory)

    def checkpoint(self, workflow_id: str | None = None) -> str:
        """Store the directory's tree (and the files the store lacks); its id. With
        ``workflow_id`` (a durable step's), note that this workflow's records name it."""
        with self._saving:
            return self._checkpoint(workflow_id)

    def _checkpoint(self, workflow_id: str | None) -> str:
        tree = scan(self.directory)
        limit = self.binding.entry.limits.workspace_mb * _MIB
        if tree.size > limit:
            raise WorkspaceTooLarge(
                f"the workspace of session {self.session_id} holds {tree.size:,} bytes, over "
                f"its cap of {limit:,} (SandboxLimits(workspace_mb=...) in sandbox.py): "
                "delete files there, or raise the cap",
                session_id=self.session_id,
                size=tree.size,
                limit=limit,
            )
        self.touch()
        identity = tree_id(tree)
        note = None if workflow_id is None else (workflow_id, identity)
        if identity != self.current or (note is not None and note != self.noted):
            try:
                self.store.run(lambda c: self._save(c, tree, identity, note))
            except sa.exc.IntegrityError:
                # another session stored one of the same blobs meanwhile: now it is there
                self.store.run(lambda c: self._save(c, tree, identity, note))
            self.current, self.noted = identity, note or self.noted
        return identity

    def restore(self, identity: str) -> None:
        """Make the directory hold the tree ``identity`` (a replayed step's): always a
        fresh comparison, since anything may have written there since it was recorded."""
        data = self.store.run(
            lambda c: c.execute(
                sa.select(workspace_trees.c.tree).where(workspace_trees.c.tree_id == identity)
            ).scalar()
        )
        if data is None:
            raise KeyError(f"workspace tree {identity} is not in the session store")
        restore(self.directory, decode_tree(data), self._blob)
        hand_over(self.directory, self.binding.provider, self.session_id)
        self.store.run(lambda c: _set_head(c, self.session_id, identity))
        self.current = identity

    def reset(self) -> None:
        """Back to the seed files (``POST …/reset``)."""
        with workspace_lock(self.directory.parent.parent, exclusive=False):
            shutil.rmtree(self.directory, ignore_errors=True)
            self.current = None
            seed_workspace(self.directory, self.binding, self.session_id)
            self.checkpoint()

    def _blob(self, sha: str) -> bytes:
        data: bytes | None = self.store.run(
            lambda c: c.execute(
                sa.select(workspace_blobs.c.data).where(workspace_blobs.c.sha256 == sha)
            ).scalar()
        )
        if data is None:
            raise KeyError(f"workspace blob {sha} is not in the session store")
        return data

    def _save(self, c: Connection, tree: Tree, identity: str, note: tuple[str, str] | None) -> None:
        # the head first: its write lock is what the sweep waits on (and takes first), so
        # the tree and blob checks below see what a sweep left (``workspace_sweep``)
        _set_head(c, self.session_id, identity)
        if note is not None:
            noted = sa.select(workspace_refs.c.workflow_id).where(
                workspace_refs.c.workflow_id == note[0], workspace_refs.c.tree_id == note[1]
            )
            if c.execute(noted).first() is None:
                c.execute(sa.insert(workspace_refs).values(workflow_id=note[0], tree_id=note[1]))
        known = c.execute(
            sa.select(workspace_trees.c.tree_id).where(workspace_trees.c.tree_id == identity)
        ).first()
        if known is None:
            wanted = tree.blobs()
            have = set(
                c.execute(
                    sa.select(workspace_blobs.c.sha256).where(workspace_blobs.c.sha256.in_(wanted))
                ).scalars()
            )
            for sha in sorted(wanted - have):
                data = read_blob(self.directory, tree, sha)
                c.execute(sa.insert(workspace_blobs).values(sha256=sha, data=data))
            c.execute(
                sa.insert(workspace_trees).values(tree_id=identity, tree=encode_tree(tree).decode())
            )


@contextlib.contextmanager
def workspace_lock(workspace_root: Path, *, exclusive: bool) -> Iterator[None]:
    """The ``flock`` on ``workspace_root``'s ``sessions`` directory: shared while a
    workspace is opened or reset, exclusive while a worker removes an unused one
    (``workspace_disk``), so a removal never lands in a turn's opening."""
    sessions = workspace_root.resolve() / SESSIONS_DIR
    sessions.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(sessions, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _head(c: Connection, session_id: str) -> str | None:
    return c.execute(
        sa.select(workspace_heads.c.tree_id).where(workspace_heads.c.session_id == session_id)
    ).scalar()


def _set_head(c: Connection, session_id: str, identity: str) -> None:
    c.execute(sa.delete(workspace_heads).where(workspace_heads.c.session_id == session_id))
    c.execute(sa.insert(workspace_heads).values(session_id=session_id, tree_id=identity))


def keeper_for(
    store: SessionStore, workspace_root: Path, node_id: str, session_id: str
) -> WorkspaceKeeper | None:
    """The keeper of ``session_id``'s workspace; None when its node has no sandbox."""
    binding = binding_of(workspace_root, node_id)
    if binding is None:
        return None
    directory = session_directory(workspace_root, session_id)
    return WorkspaceKeeper(store=store, session_id=session_id, directory=directory, binding=binding)


def copy_head(c: Connection, source: str, target: str) -> bool:
    """Start ``target``'s workspace where ``source``'s is now (its head), in the caller's
    transaction (a session's fork); False when ``source`` has none. The files follow when
    ``target``'s first turn opens it."""
    head = _head(c, source)
    if head is not None:
        _set_head(c, target, head)
    return head is not None
