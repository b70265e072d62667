"""A private RabbitMQ node on free local ports, for tests: its own name, cookie, files and ports.

Debian's `/usr/sbin/rabbitmq-server` switches to the `rabbitmq` user and drops the environment, so
the node is started through the script it wraps. Every path the node would share with the machine's
own node (configuration, environment file, database, logs, plugins, PID file, Erlang cookie) is
pointed into a fresh directory, so the machine's node on 5672 is never touched. The node can be
restarted on the same database (`restart`), as a broker restart in production would.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pika

from tests.support.ports import free_port
from tests.support.s3_server import _die_with_parent, _log_tail

SERVER_SCRIPT = "/usr/lib/rabbitmq/bin/rabbitmq-server"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
HOST = "127.0.0.1"


def server_script() -> str | None:
    """The node's start script, or None when RabbitMQ is not installed."""
    if os.path.exists(SERVER_SCRIPT):
        return SERVER_SCRIPT
    # Elsewhere (Homebrew, a tarball) the script on PATH is the node's own, without a user switch.
    found = shutil.which("rabbitmq-server")
    return found if found and not found.startswith("/usr/sbin/") else None


@dataclass
class RabbitNode:
    """A private node: `url` reaches its default virtual host."""

    run_dir: Path
    name: str
    amqp_port: int
    dist_port: int
    conf: str = ""
    advanced: str = "[]"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    startup_s: float = 0.0

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{HOST}:{self.amqp_port}/%2F"

    @property
    def log_path(self) -> Path:
        return self.run_dir / "startup.log"

    def node_log(self) -> str:
        """The node's own log so far."""
        path = self.run_dir / "log" / f"{self.name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def environment(self) -> dict[str, str]:
        base = self.run_dir
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
        env.update(
            HOME=str(base),  # the Erlang cookie lives in $HOME
            RABBITMQ_NODENAME=self.name,
            RABBITMQ_NODE_IP_ADDRESS=HOST,
            RABBITMQ_NODE_PORT=str(self.amqp_port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_CONFIG_FILE=str(base / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(base / "advanced.config"),
            RABBITMQ_CONF_ENV_FILE=str(base / "rabbitmq-env.conf"),
            RABBITMQ_MNESIA_BASE=str(base / "mnesia"),
            RABBITMQ_LOG_BASE=str(base / "log"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(base / "enabled_plugins"),
            RABBITMQ_PID_FILE=str(base / "node.pid"),
            # Erlang's schedulers spin while idle by default, taking CPU from the main suite beside
            # them on two cores: without the spinning the RabbitMQ suite used 183 s of CPU, not 198 s.
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+sbwt none +sbwtdcpu none +sbwtdio none",
        )
        return env

    def write_files(self) -> None:
        base = self.run_dir
        (base / "mnesia").mkdir(exist_ok=True)
        (base / "log").mkdir(exist_ok=True)
        (base / "rabbitmq-env.conf").write_text("")
        (base / "enabled_plugins").write_text("[].\n")
        (base / "advanced.config").write_text(self.advanced + ".\n")
        (base / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = {HOST}:{self.amqp_port}\n"
            "loopback_users.guest = true\n"
            # A developer's disk may be nearly full; the node must not block publishers for that.
            "disk_free_limit.absolute = 1MB\n" + self.conf
        )
        cookie = base / ".erlang.cookie"
        if not cookie.exists():
            cookie.write_text(secrets.token_hex(16).upper())
            cookie.chmod(0o400)

    def start(self) -> None:
        """Start the node and wait until it accepts AMQP connections."""
        script = server_script()
        if script is None:
            raise RuntimeError("rabbitmq-server is not installed (make test-debs installs it)")
        self.write_files()
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [script],
                cwd=self.run_dir,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        deadline = started + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"RabbitMQ node {self.name} exited with {self.process.returncode}:\n"
                    f"{_log_tail(self.log_path)}"
                )
            try:
                pika.BlockingConnection(pika.URLParameters(self.url + "?connection_attempts=1")).close()
                break
            except pika.exceptions.AMQPError as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"RabbitMQ node {self.name} did not start:\n{_log_tail(self.log_path)}"
                    ) from exc
                time.sleep(0.2)
        self.startup_s = time.monotonic() - started

    def stop(self) -> None:
        """Stop the node (its own process group only), killing it if it does not stop in time."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_TIMEOUT_S)
        # The Erlang VM may outlive the script that started it by a moment; wait for the port.
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex((HOST, self.amqp_port)) != 0:
                    return
            time.sleep(0.1)

    def restart(self) -> None:
        """Stop the node and start it again on the same database (durable queues and messages)."""
        self.stop()
        self.start()

    def delete_queues(self, names: set[str]) -> None:
        """Delete these queues with their delay and dead-letter queues (between tests)."""
        connection = pika.BlockingConnection(pika.URLParameters(self.url))
        try:
            channel = connection.channel()
            for name in names:
                for queue in (name, f"{name}.DQ", f"{name}.XQ"):
                    channel.queue_delete(queue)
        finally:
            connection.close()


@contextlib.contextmanager
def running_rabbitmq(tmpdir: str | Path, *, conf: str = "", advanced: str = "[]") -> Iterator[RabbitNode]:
    """A private node under a fresh directory in `tmpdir`, stopped on exit; `conf` adds
    rabbitmq.conf lines (a short `consumer_timeout`, say), `advanced` is advanced.config's term."""
    run_dir = Path(tempfile.mkdtemp(prefix="rabbit-", dir=tmpdir))
    node = RabbitNode(
        run_dir=run_dir,
        name=f"ingest-test-{secrets.token_hex(4)}@localhost",
        amqp_port=free_port(),
        dist_port=free_port(),
        conf=conf,
        advanced=advanced,
    )
    try:
        node.start()
        yield node
    finally:
        node.stop()
