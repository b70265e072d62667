"""Private, restartable PostgreSQL, Redis and S3 servers on free local ports, for the failure matrix.

Each keeps its data directory across a restart (PostgreSQL and S3 keep their data, Redis keeps none,
as the machine's own Redis does), so a scenario can stop, flush or restart one under a running service
without touching the machine's shared servers.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis
import sqlalchemy as sa

from tests.support.ports import free_port
from tests.support.s3_server import (
    _client,
    _remove_stray_sockets,
    _wait_ready,
    _write_identities,
    free_ports,
    weed_binary,
    weed_command,
)
from tests.support.s3_server import stop as stop_weed

HOST = "127.0.0.1"


def wait_until(predicate: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if predicate():  # type: ignore[operator]
                return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def _postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl:
        return Path(pg_ctl).parent
    raise RuntimeError("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")


class PrivatePostgres:
    """`initdb` in a temporary folder and `pg_ctl` on a free port; trust authentication, 127.0.0.1 only.

    PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user.
    """

    def __init__(self, workdir: Path) -> None:
        self.bin = _postgres_bin()
        self.dir = workdir / "pg"
        self.port = free_port()
        self.url = f"postgresql+psycopg2://postgres@{HOST}:{self.port}/ingest"
        self._owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else None

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        def drop_privileges() -> None:
            if self._owner is not None:
                os.setgid(self._owner.pw_gid)
                os.setuid(self._owner.pw_uid)

        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            preexec_fn=drop_privileges,
            capture_output=True,
            text=True,
            check=check,
            cwd="/",
        )

    def init(self) -> None:
        self.dir.mkdir(parents=True)
        if self._owner is not None:
            os.chown(self.dir, self._owner.pw_uid, self._owner.pw_gid)
            # The folder above must be traversable by that user.
            os.chmod(self.dir.parent, 0o755)
        self._run("initdb", "-D", str(self.dir), "-U", "postgres", "-A", "trust", "--no-sync")
        self.start()
        engine = sa.create_engine(self.url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text("CREATE DATABASE ingest"))
        engine.dispose()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses={HOST} -c fsync=off"
        self._run("pg_ctl", "-D", str(self.dir), "-o", options, "-l", str(self.dir / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir), "-m", "fast", "-w", "stop", check=False)

    def restart(self) -> None:
        """A fast shutdown (every connection cut, open transactions rolled back), then a start."""
        self.stop()
        self.start()


class PrivateRedis:
    """A `redis-server` on a free port that keeps nothing on disk; restarting it empties it."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "redis"
        self.dir.mkdir(parents=True)
        self.port = free_port()
        self.url = f"redis://{HOST}:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("the redis-server binary is not installed")
        argv = [binary, "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no"]
        self._process = subprocess.Popen(
            [*argv, "--dir", str(self.dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        client = redis.Redis.from_url(self.url)
        try:
            wait_until(client.ping, 10, "redis-server to answer")
        finally:
            client.close()

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=10)
        self._process = None

    def flush_and_restart(self) -> None:
        """Lose everything Redis held: FLUSHALL, then a restart without persistence."""
        client = redis.Redis.from_url(self.url)
        try:
            client.flushall()
        finally:
            client.close()
        self.stop()
        self.start()


class RestartableS3:
    """`weed mini` on fixed free ports and one data folder, so it can be stopped and started again
    with the objects it held (tests/support/s3_server.py starts a fresh one per run instead)."""

    bucket = "ingest-chaos"

    def __init__(self, workdir: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="weed-", dir=workdir))
        (self.dir / "data").mkdir()
        self.access_key_id = "AK" + secrets.token_hex(8).upper()
        self.secret_access_key = secrets.token_urlsafe(30)
        identities = self.dir / "identities.json"
        _write_identities(identities, self.access_key_id, self.secret_access_key)
        self.ports = free_ports()
        self.command = weed_command(weed_binary(), self.dir, identities, self.ports)
        self.endpoint_url = f"http://{HOST}:{self.ports['s3.port']}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.dir / "weed.log").open("ab")
        started = time.monotonic()
        self._process = subprocess.Popen(
            self.command, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        client = _client(self.endpoint_url, self.access_key_id, self.secret_access_key)
        _wait_ready(self._process, client, self.dir / "weed.log", started)
        with contextlib.suppress(Exception):
            client.create_bucket(Bucket=self.bucket)

    def stop(self) -> None:
        if self._process is not None:
            stop_weed(self._process)
            self._process = None
            _remove_stray_sockets(self.ports)
