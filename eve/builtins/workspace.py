"""Confine the built-in tools to their workspace: walk what the model asked for, or refuse.

The model names files with strings it chose, and another process (a ``bash`` command the
person approved, say) may be changing the tree while a tool runs. So a path is never
resolved to a string and then opened — a directory swapped for a symlink between the two
steps would lead anywhere. Instead ``_Walker`` opens it one component at a time, each
relative to the descriptor of the directory before it and without following symlinks
(``O_NOFOLLOW``): a symlink is read (``readlink``) and its target walked the same way, from
the directory that holds it, and ``..`` pops the walker's own stack instead of asking the
kernel. Nothing above the workspace's descriptor is ever named, whatever changes meanwhile.

A regular file with more than one hard link is refused: the other link may be outside the
workspace, and nothing in the file says where.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from eve.errors import WorkspaceViolation

#: as many symlinks as Linux follows in one path (MAXSYMLINKS) before saying ELOOP
_MAX_LINKS = 40
#: how every directory on a walk is opened: never through a symlink
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
#: what a missing directory on the way means: an error, create it (write_file), or go on
#: by name alone (``resolve_in_workspace``, which answers where a path *would* lead)
Missing = Literal["error", "create", "virtual"]


class _Walker:
    """One walk below the workspace; holds a descriptor for every directory on its stack."""

    def __init__(self, workspace: Path, path: str, *, missing: Missing) -> None:
        if "\0" in path:
            raise WorkspaceViolation(f"{path!r} contains a NUL byte", path=path)
        self.path = path
        self.missing: Missing = missing
        self.root = workspace.resolve()
        self._spellings = (str(self.root), os.path.abspath(workspace))
        self.root_fd = os.open(self.root, DIRECTORY_FLAGS)
        #: the directories below the root, by name; ``None`` for one that does not exist
        self.dirs: list[tuple[str, int | None]] = []
        self.links = 0
        self.pending: list[str] = []
        self._push(path)

    def close(self) -> None:
        self._drop(len(self.dirs))
        os.close(self.root_fd)

    @property
    def here(self) -> int | None:
        return self.dirs[-1][1] if self.dirs else self.root_fd

    def relative(self, last: str | None = None) -> str:
        names = [name for name, _ in self.dirs] + ([last] if last else [])
        return "/".join(names) or "."

    def last(self) -> str | None:
        """Walk to the last component and return its name (a symlink there is followed).

        ``None`` when the path ends at a directory on the stack (``.``, ``a/..``): ``here``.
        """
        while self.pending:
            name = self.pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                self._up()
            elif not self.pending:
                if not self.is_link(name):
                    return name
                self.follow(name)
            else:
                self._enter(name)
        return None

    def is_link(self, name: str) -> bool:
        here = self.here
        if here is None:
            return False
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=here, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    def follow(self, name: str) -> None:
        """Walk on into the target of the symlink ``name`` in ``here``."""
        self.links += 1
        if self.links > _MAX_LINKS:
            raise WorkspaceViolation(
                f"{self.path!r} cannot be resolved (a symlink loop?)", path=self.path
            )
        here = self.here
        assert here is not None  # only a link that exists is followed
        self._push(os.readlink(name, dir_fd=here))

    def violation(self, how: str) -> WorkspaceViolation:
        # Tell the model *why*, so it does not retry the same thing in another spelling.
        if self.links:
            how = "leads outside the workspace through a symlink"
        return WorkspaceViolation(f"{self.path!r} {how}", path=self.path)

    def _push(self, text: str) -> None:
        if os.path.isabs(text):
            inside = next(
                (os.path.relpath(text, s) for s in self._spellings if _under(text, s)), None
            )
            if inside is None:
                raise self.violation("is an absolute path outside the workspace")
            self._drop(len(self.dirs))  # an absolute target starts again at the root
            text = inside
        self.pending.extend(reversed(text.split("/")))

    def _up(self) -> None:
        if not self.dirs:
            raise self.violation("climbs with '..' outside the workspace")
        self._drop(1)

    def _drop(self, count: int) -> None:
        for _ in range(count):
            _, fd = self.dirs.pop()
            if fd is not None:
                os.close(fd)

    def _enter(self, name: str) -> None:
        here = self.here
        if here is None:
            self.dirs.append((name, None))
            return
        try:
            fd = os.open(name, DIRECTORY_FLAGS, dir_fd=here)
        except FileNotFoundError:
            if self.missing == "error":
                raise
            if self.missing == "virtual":
                self.dirs.append((name, None))
                return
            # made meanwhile by someone else: fine, it is opened next
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=here)
                take_owner(here, name)
            self.pending.append(name)  # open what is there now, by the same rules
            return
        except OSError as error:
            # ELOOP (or ENOTDIR) for a symlink under O_NOFOLLOW: walk its target instead
            if error.errno in (errno.ELOOP, errno.ENOTDIR) and self.is_link(name):
                self.follow(name)
                return
            raise
        self.dirs.append((name, fd))


def take_owner(dir_fd: int, name: str) -> None:
    """Give what eve just made at ``name`` the owner of the directory it is in, when eve is
    root and that is someone else: a sandbox that runs a session's commands as a user of
    the session's own (``eve.sandbox.bubblewrap.command_user``, who owns the workspace:
    ``eve.sandbox.bindings.hand_over``) must be able to change what the file tools wrote."""
    if os.geteuid() != 0:
        return
    owner = os.fstat(dir_fd)
    if owner.st_uid != 0:
        os.chown(name, owner.st_uid, owner.st_gid, dir_fd=dir_fd, follow_symlinks=False)


def _under(path: str, root: str) -> bool:
    normal = os.path.normpath(path)
    return normal == root or normal.startswith(root.rstrip("/") + "/")


@contextmanager
def _walk(workspace: Path, path: str, *, missing: Missing) -> Iterator[_Walker]:
    walker = _Walker(workspace, path, missing=missing)
    try:
        yield walker
    finally:
        walker.close()


def _refuse_hardlinks(info: os.stat_result, path: str) -> None:
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise WorkspaceViolation(
            f"{path!r} has {info.st_nlink} hard links; the file tools refuse such a file "
            "because another link to it may lie outside the workspace",
            path=path,
        )


@dataclass(frozen=True, kw_only=True)
class Opened:
    """A file or directory opened inside the workspace; the caller closes ``fd``."""

    fd: int
    #: where it is, relative to the workspace (POSIX, ``.`` for the root)
    relative: str


def open_for_reading(workspace: Path, path: str, *, directory: bool = False) -> Opened:
    """Open what ``path`` names inside ``workspace`` for reading, or refuse.

    A regular file with several hard links is refused (``WorkspaceViolation``); so is
    anything that is not a regular file (a FIFO, a device) unless ``directory`` asks for one.
    """
    with _walk(workspace, path, missing="error") as walker:
        while True:
            name = walker.last()
            here = walker.here
            assert here is not None  # missing="error" walks real directories only
            try:
                fd = os.open(
                    name or ".", DIRECTORY_FLAGS if directory else _READ_FLAGS, dir_fd=here
                )
            except OSError as error:
                if name and error.errno in (errno.ELOOP, errno.ENOTDIR) and walker.is_link(name):
                    walker.follow(name)  # swapped for a symlink since ``last``: walk it
                    continue
                raise
            break
        try:
            _check_opened(fd, path, directory=directory)
        except BaseException:
            os.close(fd)
            raise
        return Opened(fd=fd, relative=walker.relative(name))


def _check_opened(fd: int, path: str, *, directory: bool) -> None:
    info = os.fstat(fd)
    if directory:
        return  # O_DIRECTORY already refused anything else
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{path} is a directory; list it with list_files")
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{path} is not a regular file")  # a FIFO or device would never end
    _refuse_hardlinks(info, path)
    os.set_blocking(fd, True)


@dataclass(frozen=True, kw_only=True)
class Slot:
    """Where a file is to be written: its directory, open, and its name in it."""

    dir_fd: int
    name: str
    #: the file's path relative to the workspace
    relative: str
    #: the permission bits of the file it replaces, ``None`` for a new file
    mode: int | None


@contextmanager
def slot_for_writing(workspace: Path, path: str) -> Iterator[Slot]:
    """The directory and name ``path`` names inside ``workspace``, creating missing parents.

    A symlink in the last place is followed (and refused if it leads out); a directory or a
    file with several hard links there is refused. What is written at the slot replaces the
    name itself (``rename``), so a symlink swapped in afterwards is replaced, not followed.
    """
    with _walk(workspace, path, missing="create") as walker:
        while True:
            name = walker.last()
            here = walker.here
            assert here is not None  # missing="create" makes every directory real
            if name is None:
                raise IsADirectoryError(f"{path} is a directory")
            try:
                info = os.stat(name, dir_fd=here, follow_symlinks=False)
            except FileNotFoundError:
                mode = None
                break
            if stat.S_ISLNK(info.st_mode):
                walker.follow(name)
                continue
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(f"{path} is a directory")
            _refuse_hardlinks(info, path)
            mode = stat.S_IMODE(info.st_mode)
            break
        yield Slot(dir_fd=here, name=name, relative=walker.relative(name), mode=mode)


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """Where ``path`` leads inside ``workspace`` (the resolved root joined with the names
    walked); ``WorkspaceViolation`` if it leads out.

    ``path`` is relative to the workspace, or absolute if it lies within it. Symlinks along
    it are followed — dangling ones too, to where they would lead. This answers *where*; the
    tools themselves open through ``open_for_reading`` and ``slot_for_writing``, never
    through the returned path.
    """
    with _walk(workspace, path, missing="virtual") as walker:
        name = walker.last()
        relative = walker.relative(name)
        return walker.root if relative == "." else walker.root / relative


def workspace_relative(workspace: Path, resolved: Path) -> str:
    """How a path returned by ``resolve_in_workspace`` is shown: POSIX, relative, ``.`` for root."""
    return resolved.relative_to(workspace.resolve()).as_posix()


@contextmanager
def workspace_errors(path: str) -> Iterator[None]:
    """Re-raise OS errors naming ``path`` as the model wrote it, not the host's absolute path.

    The loop shows a tool's exception text to the model; the absolute path would leak where
    the workspace lives and would not be a path the model can use.
    """
    try:
        yield
    except OSError as error:
        if error.strerror is None:  # raised with our own message, which already names it
            raise
        raise type(error)(f"{path}: {error.strerror}") from None
