"""A throwaway PostgreSQL server for the tests: ``initdb`` in a temp dir, a free port, trust auth.

``PostgresServer.start()`` finds the newest server binaries (``/usr/lib/postgresql/<n>/bin``,
then ``PATH``), copies a data directory ``initdb`` made into a fresh temporary directory
(the first start on a machine runs ``initdb``; see ``_template``) and starts ``postgres`` as a
child process listening on 127.0.0.1 with its unix socket inside that directory, so nothing
outside it (and the template beside it) is touched. ``database()`` creates an empty database and returns its URL;
``stop()`` shuts the server down (by its pid) and deletes the directory.

``initdb`` and ``postgres`` refuse to run as root. As root both run as the ``postgres``
system user (which Debian's package creates) or, failing that, as ``nobody``: the data
directory is handed to that user and the processes drop to it with ``setuid`` before
``exec``, so neither ``su`` nor ``sudo`` is needed.

``find_bindir()`` returns ``None`` when there are no server binaries; the fixture in
``tests/sessions/conftest.py`` then skips, unless ``EVE_REQUIRE_POSTGRES=1`` (``make test``
sets it once ``scripts/ensure-postgres`` succeeded), in which case it fails.

``pgserver_bindir()`` is the PostgreSQL 16 with pgvector built in that the ``pgserver`` wheel
ships (the dev extra installs it where it has wheels: ``pgserver_expected()``); the memory
tests start it the same way for pgvector (``tests/memory/conftest.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import importlib.util
import os
import platform
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.ports import free_port

if TYPE_CHECKING:
    import psycopg

#: the database superuser ``initdb`` creates; every URL connects as it, with trust auth
SUPERUSER = "postgres"
REQUIRE_ENV = "EVE_REQUIRE_POSTGRES"
#: system users, in order of preference, that the server runs as when we are root
RUN_AS_CANDIDATES = ("postgres", "nobody")
#: how every test cluster is made (part of the template's name: a change makes a new one)
INITDB_OPTIONS = ("-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")


class PostgresUnavailable(RuntimeError):
    """The binaries are there but no server could be started; the message says why."""


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0", "false", "no")


def find_bindir() -> Path | None:
    """The directory holding ``initdb``, ``postgres`` and ``pg_ctl``, newest version first."""

    def version(initdb: Path) -> int:
        name = initdb.parent.parent.name
        return int(name) if name.isdigit() else 0

    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=version)
    for initdb in reversed(candidates):
        if (initdb.parent / "postgres").exists():
            return initdb.parent
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(found).resolve().parent
    return None


def pgserver_bindir() -> Path | None:
    """pgserver's server binaries (PostgreSQL 16, pgvector built in), or None when it is not
    installed; found without importing it (its import sets up directories of its own)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    bindir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bindir / "postgres").exists():
        return None
    if os.geteuid() == 0 and not _searchable_by_all(bindir):
        return _reachable_copy(bindir.parent) / "bin"
    return bindir


def _searchable_by_all(path: Path) -> bool:
    return all(d.stat().st_mode & 0o001 for d in (path, *path.parents))


def _reachable_copy(install: Path) -> Path:
    """A copy of pgserver's install tree the server's user can run (about 40 MB, made once
    per machine), as ``<copy>/pgserver/pginstall``: as root the server runs as ``postgres``,
    which cannot enter a venv under a private directory (a fresh clone in a 0700 ``mktemp
    -d``). The binaries find their libraries at ``$ORIGIN/../../../pgserver.libs`` (their
    RPATH), so that directory is copied beside. Made under a lock, renamed into place whole."""
    postgres = install / "bin" / "postgres"
    key = hashlib.sha256(repr((postgres.resolve(), postgres.stat().st_mtime_ns)).encode())
    copy = Path("/tmp") / f"eve-test-pgserver-{key.hexdigest()[:16]}"
    libs = install.parent.parent / "pgserver.libs"
    with Path(f"{copy}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (copy / "pgserver" / "pginstall" / "bin" / "postgres").exists():
            shutil.rmtree(copy, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(prefix=f"{copy.name}-", dir="/tmp"))
            os.chmod(staging, 0o755)
            shutil.copytree(install, staging / "pgserver" / "pginstall", symlinks=True)
            if libs.is_dir():
                shutil.copytree(libs, staging / "pgserver.libs", symlinks=True)
            os.rename(staging, copy)
    return copy / "pgserver" / "pginstall"


def pgserver_expected() -> bool:
    """Whether pgserver ships a wheel here (0.1.4: CPython 3.9-3.12 on Linux x86_64 and macOS),
    so the dev extra installs it (pyproject.toml's marker)."""
    linux = sys.platform == "linux" and platform.machine() == "x86_64"
    return (linux or sys.platform == "darwin") and sys.version_info < (3, 13)


def _run_as_user() -> pwd.struct_passwd | None:
    """Who the server runs as: ourselves (``None``) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in RUN_AS_CANDIDATES:
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable(
        "running as root, and initdb refuses root, but there is no "
        f"{' or '.join(map(repr, RUN_AS_CANDIDATES))} user to run it as"
    )


def _reachable_tmp(user: pwd.struct_passwd | None) -> str | None:
    """A temp dir the server's user can reach: not pytest's (private to root, 0700)."""
    if user is None:
        return None
    base = Path(tempfile.gettempdir()).resolve()
    if all(d.stat().st_mode & 0o001 for d in (base, *base.parents)):
        return str(base)
    return "/tmp"  # TMPDIR is private to root; /tmp is world-searchable


def _die_with_parent() -> None:
    """In the server's child, before exec: SIGINT (a fast shutdown) when pytest dies."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG


@dataclass
class PostgresServer:
    bindir: Path
    directory: Path
    port: int
    user: pwd.struct_passwd | None
    proc: subprocess.Popen[bytes] | None = None
    version: str = ""
    databases: list[str] = field(default_factory=list)
    #: PostgreSQL's own defaults (fsync on) instead of the test suite's fast settings
    durable: bool = False
    #: addresses to listen on besides 127.0.0.1 (a bridge other network namespaces reach)
    also_listen: tuple[str, ...] = ()
    #: the connection ``_admin`` keeps for creating and dropping databases
    _admin_connection: psycopg.Connection[Any] | None = None

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    def url_of(self, database: str, *, host: str = "127.0.0.1") -> str:
        return f"postgresql://{SUPERUSER}@{host}:{self.port}/{database}"

    # --- lifecycle ---------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        bindir: Path,
        *,
        timeout: float = 60.0,
        durable: bool = False,
        also_listen: tuple[str, ...] = (),
    ) -> PostgresServer:
        user = _run_as_user()
        directory = Path(tempfile.mkdtemp(prefix="eve-test-pg-", dir=_reachable_tmp(user)))
        server = cls(
            bindir=bindir,
            directory=directory,
            port=free_port(),
            user=user,
            durable=durable,
            also_listen=also_listen,
        )
        try:
            server._start(timeout)
        except BaseException:
            server.stop()
            raise
        return server

    def _as_user(self) -> dict[str, Any]:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        if self.user is not None:
            env["HOME"] = str(self.directory)
            env["USER"] = env["LOGNAME"] = self.user.pw_name
        return env

    def _start(self, timeout: float) -> None:
        self._initdb()
        self.launch(timeout)

    def _initdb(self) -> None:
        if self.user is not None:
            os.chown(self.directory, self.user.pw_uid, self.user.pw_gid)
        template = self._template()
        # a copy of a cluster initdb made and shut down is a cluster of its own; cp -a as the
        # server's user keeps the modes postgres checks (0700) and gives it the files
        copied = subprocess.run(
            ["cp", "-a", str(template / "data"), str(self.data)],
            env=self._env(),
            capture_output=True,
            text=True,
            check=False,
            **self._as_user(),
        )
        if copied.returncode != 0:
            raise PostgresUnavailable(f"copying the initdb template failed:\n{copied.stderr}")
        with (self.data / "pg_hba.conf").open("a") as hba:
            # initdb trusts loopback only; the other addresses are private bridges' (/24)
            for address in self.also_listen:
                hba.write(f"host all all {address}/24 trust\n")
        self.version = (template / "version").read_text()

    def _template(self) -> Path:
        """A data directory ``initdb`` made for these binaries and this user, made once per
        machine: initdb costs 0.65 s of CPU and seconds of a loaded machine's time, and the
        suite starts a server in every worker and in the tests that restart theirs. Made
        under a lock (workers start together), in a directory renamed into place when done."""
        initdb = self.bindir / "initdb"
        user = self.user and self.user.pw_name
        made_by = (initdb.resolve(), initdb.stat().st_mtime_ns, INITDB_OPTIONS, user)
        key = hashlib.sha256(repr(made_by).encode()).hexdigest()[:16]
        template = self.directory.parent / f"eve-test-pg-template-{key}"
        with (self.directory.parent / f"{template.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # pg_control too: a cleaner of old files in /tmp would have taken it with the rest
            whole = (template / "version").exists() and (
                template / "data/global/pg_control"
            ).exists()
            if not whole:
                shutil.rmtree(template, ignore_errors=True)
                self._make_template(template)
        return template

    def _make_template(self, template: Path) -> None:
        staging = Path(tempfile.mkdtemp(prefix=f"{template.name}-", dir=template.parent))
        if self.user is not None:
            os.chown(staging, self.user.pw_uid, self.user.pw_gid)
        initdb = subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(staging / "data"), *INITDB_OPTIONS],
            cwd=staging,
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            **self._as_user(),
        )
        if initdb.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise PostgresUnavailable(f"initdb failed:\n{initdb.stdout}\n{initdb.stderr}")
        version = subprocess.run(
            [str(self.bindir / "postgres"), "--version"],
            capture_output=True,
            text=True,
            check=False,
            env=self._env(),
            **self._as_user(),
        ).stdout.strip()
        (staging / "version").write_text(version)
        os.rename(staging, template)

    def launch(self, timeout: float = 60.0) -> None:
        """Start the postmaster on the data directory: at start, and again after ``halt()``
        or in ``restart()`` (same port, same data)."""
        settings = {
            "listen_addresses": ",".join(("127.0.0.1", *self.also_listen)),
            "unix_socket_directories": str(self.directory),
            "max_connections": "400",
            "shared_buffers": "64MB",
        }
        if not self.durable:
            # a test server: durability against power loss is not what is being tested
            settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        argv = [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        log = self.log_path.open("ab")
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=self.directory,
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (no threads started yet)
                **self._as_user(),
            )
        finally:
            log.close()
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise PostgresUnavailable(
                    f"postgres exited with status {self.proc.returncode}:\n{self.server_log()}"
                )
            try:
                with psycopg.connect(self.url_of("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError as error:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable(
                        f"postgres never accepted connections ({error}):\n{self.server_log()}"
                    ) from None
                time.sleep(0.05)

    def server_log(self, tail: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-tail:])

    def halt(self) -> None:
        """Fast shutdown of the postmaster, keeping its data: an outage, which ``launch()``
        ends. Clients see their connections closed and new ones refused."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)

    def stop(self) -> None:
        """Fast shutdown of the postmaster we started (by its pid), then delete everything."""
        self._shut_down()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _shut_down(self) -> None:
        self._close_admin()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGQUIT)  # immediate shutdown
                self.proc.wait(10)

    def restart(self, *, pause: float = 0.0, timeout: float = 60.0) -> None:
        """A fast shutdown (every connection is cut, open transactions roll back), ``pause``
        seconds with no server, then the same data on the same port again."""
        self._shut_down()
        time.sleep(pause)
        self.launch(timeout)

    def terminate_backends(self, url: str) -> int:
        """``pg_terminate_backend`` every connection to ``url``'s database; how many."""
        import psycopg

        name = url.rsplit("/", 1)[-1]
        with psycopg.connect(self.url_of("postgres"), autocommit=True) as connection:
            rows = connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            ).fetchall()
        return len(rows)

    # --- databases ---------------------------------------------------------------------

    def _admin(self, sql: str) -> None:
        """Run ``sql`` on the server's ``postgres`` database over one connection kept for
        it: a new one for each database a test makes and drops was two backends' starts a
        test (about 10 ms of the server's CPU each). One a halt or a restart cut is made
        again."""
        import psycopg

        for attempt in (1, 2):
            if self._admin_connection is None or self._admin_connection.closed:
                self._admin_connection = psycopg.connect(self.url_of("postgres"), autocommit=True)
            try:
                self._admin_connection.execute(sql)  # type: ignore[arg-type]  # names are ours
                return
            except psycopg.OperationalError:
                self._close_admin()
                if attempt == 2:
                    raise

    def _close_admin(self) -> None:
        if self._admin_connection is not None:
            self._admin_connection.close()
            self._admin_connection = None

    def database(self, prefix: str = "eve", *, template: str | None = None) -> str:
        """Create a fresh database, empty or a copy of the database ``template``; its
        ``postgresql://`` URL."""
        name = f"{prefix}_{secrets.token_hex(6)}"
        copy = "" if template is None else f' TEMPLATE "{template}"'
        self._admin(f'CREATE DATABASE "{name}"{copy}')
        self.databases.append(name)
        return self.url_of(name)

    def drop(self, url: str) -> None:
        """Drop a database ``database()`` made, disconnecting anyone still on it."""
        name = url.rsplit("/", 1)[-1]
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        with contextlib.suppress(ValueError):
            self.databases.remove(name)
