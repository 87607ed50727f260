"""A workspace's state as a content-addressed tree, and making a directory match one.

``scan`` reads a directory into a ``Tree``: every regular file by its path, with the sha256
of its bytes and its mode, every symlink with its target, every directory. The tree's own
id (``tree_id``) is the sha256 of its canonical JSON, so equal states have equal ids and a
store keeps each file's bytes once however many steps and sessions hold it (a diff between
two steps is the blobs one has and the other lacks). ``restore`` makes a directory equal to
a tree: it writes the files whose content differs, removes what the tree does not hold,
and leaves the rest alone.

Scanning hashes only files whose size, mtime or inode changed since the last scan of the
same path in this process: a step that touched one file rehashes one file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Literal, assert_never

import msgspec

_BLOCK = 1024 * 1024


class Node(msgspec.Struct, frozen=True, array_like=True):
    """One path of a workspace."""

    kind: Literal["file", "link", "dir"]
    #: a file's sha256, a link's target, "" for a directory
    ref: str = ""
    mode: int = 0o644
    size: int = 0


class Tree(msgspec.Struct, frozen=True):
    """A workspace: its paths (POSIX, relative) in sorted order."""

    nodes: dict[str, Node] = {}

    @property
    def size(self) -> int:
        return sum(node.size for node in self.nodes.values())

    def blobs(self) -> set[str]:
        return {node.ref for node in self.nodes.values() if node.kind == "file"}


_encoder = msgspec.json.Encoder(order="sorted")
_decoder = msgspec.json.Decoder(Tree)
#: (path, size, mtime_ns, inode) → sha256 of the files scanned in this process
_hashed: dict[tuple[str, int, int, int], str] = {}


def encode_tree(tree: Tree) -> bytes:
    return _encoder.encode(tree)


def decode_tree(data: bytes | str) -> Tree:
    return _decoder.decode(data)


def tree_id(tree: Tree) -> str:
    return hashlib.sha256(encode_tree(tree)).hexdigest()


def scan(directory: Path) -> Tree:
    """The tree of ``directory`` (missing: empty). Symlinks are recorded, never followed;
    sockets, FIFOs and devices are left out (no bytes to keep), and so is a file with more
    than one hard link, as the file tools refuse it: the other link may be outside, and
    its bytes are not the session's to store."""
    nodes: dict[str, Node] = {}
    if not directory.is_dir():
        return Tree()
    for root, dirs, files in os.walk(directory):
        base = Path(root)
        for name in sorted(dirs + files):
            path = base / name
            relative = path.relative_to(directory).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                nodes[relative] = Node(kind="link", ref=os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                nodes[relative] = Node(kind="dir", mode=stat.S_IMODE(info.st_mode))
            elif stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                digest = _digest(path, info)
                mode = stat.S_IMODE(info.st_mode)
                nodes[relative] = Node(kind="file", ref=digest, mode=mode, size=info.st_size)
    return Tree(nodes=dict(sorted(nodes.items())))


def _digest(path: Path, info: os.stat_result) -> str:
    key = (str(path), info.st_size, info.st_mtime_ns, info.st_ino)
    known = _hashed.get(key)
    if known is not None:
        return known
    sha = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(_BLOCK):
            sha.update(block)
    _hashed[key] = sha.hexdigest()
    return _hashed[key]


def read_blob(directory: Path, tree: Tree, sha: str) -> bytes:
    """The bytes of the file of ``tree`` whose content is ``sha``, read from ``directory``."""
    path = next(p for p, node in tree.nodes.items() if node.kind == "file" and node.ref == sha)
    return (directory / path).read_bytes()


def restore(directory: Path, tree: Tree, blob: Callable[[str], bytes]) -> None:
    """Make ``directory`` hold exactly ``tree``; ``blob(sha)`` gives a file's bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    now = scan(directory)
    for path, node in now.nodes.items():
        if path not in tree.nodes or tree.nodes[path].kind != node.kind:
            _remove(directory / path)
    for path, node in tree.nodes.items():
        target = directory / path
        if now.nodes.get(path) == node and (target.exists() or target.is_symlink()):
            continue
        match node.kind:
            case "dir":
                target.mkdir(parents=True, exist_ok=True)
                os.chmod(target, node.mode)
            case "link":
                _remove(target)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(node.ref, target)
            case "file":
                _remove(target)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(blob(node.ref))
                os.chmod(target, node.mode)
            case _:
                assert_never(node.kind)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
