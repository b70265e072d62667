"""A private SeaweedFS S3 server (`weed mini`) on free local ports, with authentication on, for tests.

`weed mini` listens on every interface with authentication off unless told otherwise, re-applies the
flags it saved in `DIR/mini.options`, and opens a dozen ports; so each run gets a fresh directory, an
identities file with a random key, 127.0.0.1 only, and a free port for everything it opens.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from deploy.weed import HOST, free_ports, weed_binary, weed_command
from deploy.weed import remove_stray_sockets as _remove_stray_sockets
from deploy.weed import write_identities as _write_identities

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
START_ATTEMPTS = 3


@dataclass(frozen=True)
class S3ServerInfo:
    """How to reach a running server; `bucket` exists already.

    `startup_s` is the time from spawning weed until its S3 port answered a signed request.
    """

    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    bucket: str
    startup_s: float = 0.0
    command: tuple[str, ...] = ()
    log_path: str = ""


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM the server if the test process dies without stopping it."""
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def _log_tail(path: Path, head: int = 5, tail: int = 40) -> str:
    """The start of the log (a usage error is its first line) and its end."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    if len(lines) <= head + tail:
        return "\n".join(lines)
    return "\n".join([*lines[:head], "[...]", *lines[-tail:]])


def _client(endpoint_url: str, access_key_id: str, secret_access_key: str) -> Any:
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        config=Config(
            connect_timeout=0.5,
            read_timeout=5,
            retries={"mode": "standard", "max_attempts": 1},
            s3={"addressing_style": "path"},
        ),
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate the server, then kill it if it does not exit in time."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


def _wait_ready(process: subprocess.Popen[bytes], client: Any, log_path: Path, started: float) -> float:
    """Poll until the S3 port answers a signed request; return the seconds that took."""
    deadline = started + START_TIMEOUT_S
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise _StartFailedError(
                f"weed mini exited with status {process.returncode}; log:\n{_log_tail(log_path)}"
            )
        try:
            client.list_buckets()
            return time.monotonic() - started
        except (BotoCoreError, ClientError) as exc:
            last_error = exc
            time.sleep(0.05)
    raise RuntimeError(
        f"weed mini did not answer S3 requests within {START_TIMEOUT_S:.0f} s "
        f"(last error: {last_error!r}); log:\n{_log_tail(log_path)}"
    )


class _StartFailedError(RuntimeError):
    """The server exited while starting (a port taken between choosing and binding, say)."""


@contextlib.contextmanager
def running_s3_server(tmpdir: str | Path, *, bucket: str = "ingest-tests") -> Iterator[S3ServerInfo]:
    """Start a private `weed mini` S3 server under a fresh directory in `tmpdir`; stop it on exit."""
    binary = weed_binary()
    for attempt in range(1, START_ATTEMPTS + 1):
        run_dir = Path(tempfile.mkdtemp(prefix="weed-", dir=tmpdir))
        data_dir = run_dir / "data"
        data_dir.mkdir()
        access_key_id = "AK" + secrets.token_hex(8).upper()
        secret_access_key = secrets.token_urlsafe(30)
        identities = run_dir / "identities.json"
        _write_identities(identities, access_key_id, secret_access_key)
        ports = free_ports()
        command = weed_command(binary, run_dir, identities, ports)
        endpoint_url = f"http://{HOST}:{ports['s3.port']}"
        log_path = run_dir / "weed.log"
        with log_path.open("wb") as log:
            started = time.monotonic()
            process = subprocess.Popen(
                command,
                cwd=run_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        try:
            try:
                client = _client(endpoint_url, access_key_id, secret_access_key)
                startup_s = _wait_ready(process, client, log_path, started)
            except _StartFailedError:
                if attempt == START_ATTEMPTS:
                    raise
                continue
            client.create_bucket(Bucket=bucket)
            yield S3ServerInfo(
                endpoint_url=endpoint_url,
                access_key_id=access_key_id,
                secret_access_key=secret_access_key,
                bucket=bucket,
                startup_s=startup_s,
                command=tuple(command),
                log_path=str(log_path),
            )
            return
        finally:
            stop(process)
            _remove_stray_sockets(ports)
