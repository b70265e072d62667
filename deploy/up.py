"""`make up` / `make down`: the production topology as separate processes on one machine, no containers.

`start` checks PostgreSQL and Redis, then launches a supervisor in the background and waits for the
gateway's /readyz. The supervisor starts a `weed mini` S3 server of its own, migrates the database
and runs every process of deploy/topology.py, starting again any that dies; `stop` asks it to shut
everything down gracefully. State, pid files and logs live under var/up/.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import redis
import sqlalchemy as sa

from deploy.supervisor import Topology
from deploy.topology import ROOT, process_specs
from deploy.weed import free_ports, remove_stray_sockets, weed_binary, weed_command, write_identities
from shared.settings import Settings, child_environment

logger = logging.getLogger("up")

STATE_DIR = ROOT / "var" / "up"
DEFAULT_SERVER_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/"
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"
BUCKET = "ingest"


def checkout_name(root: Path = ROOT) -> str:
    """`ingest_<8 hex>` from the checkout's path: the database and Redis namespace of this checkout,
    so that two checkouts on one host never share a database or queues."""
    return f"ingest_{hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:8]}"


def up_settings(environ: Mapping[str, str] | None = None, root: Path = ROOT) -> Settings:
    """The operator's INGEST_* variables, with this machine's servers and this checkout's own database
    and namespace where they say nothing."""
    base = Settings.from_env(environ)
    name = checkout_name(root)
    return base.replace(
        data_dir=str(STATE_DIR / "data") if base.data_dir == "var" else base.data_dir,
        database_url=base.database_url or DEFAULT_SERVER_URL + name,
        broker_url=base.broker_url or DEFAULT_BROKER_URL,
        broker_namespace=name if base.broker_namespace == "dramatiq" else base.broker_namespace,
        metrics_port=base.metrics_port or 9191,
        metrics_dir=base.metrics_dir or str(STATE_DIR / "metrics"),
    )


def check_servers(settings: Settings) -> list[str]:
    """What is missing: PostgreSQL (the database is created when the server answers) and Redis."""
    problems = []
    url = sa.engine.make_url(settings.database_url)
    admin = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": url.database}
            )
            if exists.first() is None:
                conn.execute(sa.text(f'CREATE DATABASE "{url.database}"'))
    except sa.exc.SQLAlchemyError as exc:
        problems.append(f"PostgreSQL at {url.render_as_string()} is not reachable ({type(exc).__name__})")
    finally:
        admin.dispose()
    try:
        redis.Redis.from_url(settings.broker_url, socket_connect_timeout=2).ping()
    except redis.RedisError:
        problems.append(f"Redis at {settings.broker_url} is not reachable")
    return problems


class LocalS3:
    """A `weed mini` server under var/up/s3 that keeps its ports and key from one run to the next."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.process: subprocess.Popen[bytes] | None = None
        state = run_dir / "server.json"
        if state.exists():
            self.state = json.loads(state.read_text())
        else:
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "data").mkdir(exist_ok=True)
            self.state = {
                "ports": free_ports(),
                "access_key_id": "AK" + secrets.token_hex(8).upper(),
                "secret_access_key": secrets.token_urlsafe(30),
            }
            state.write_text(json.dumps(self.state))
            state.chmod(0o600)
        self.identities = run_dir / "identities.json"
        write_identities(self.identities, self.state["access_key_id"], self.state["secret_access_key"])

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.state['ports']['s3.port']}"

    def start(self) -> None:
        command = weed_command(weed_binary(), self.run_dir, self.identities, self.state["ports"])
        log = (STATE_DIR / "s3.log").open("ab")
        self.process = subprocess.Popen(
            command, cwd=self.run_dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
        (STATE_DIR / "s3.pid").write_text(f"{self.process.pid}\n")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        remove_stray_sockets(self.state["ports"])
        (STATE_DIR / "s3.pid").unlink(missing_ok=True)


def wait_for_bucket(settings: Settings, timeout_s: float = 30) -> None:
    from shared.storage import make_storage

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            make_storage(settings).check()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def supervise() -> int:
    """The resident part of `make up`: S3 server, migrations, then every process of the topology."""
    from shared.db import migrate
    from shared.logging import setup_logging

    settings = up_settings()
    setup_logging(settings)
    s3 = LocalS3(STATE_DIR / "s3")
    settings = settings.replace(
        storage_backend="s3",
        s3_endpoint_url=s3.endpoint_url,
        s3_bucket=BUCKET,
        s3_access_key_id=s3.state["access_key_id"],
        s3_secret_access_key=s3.state["secret_access_key"],
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    s3.start()
    topology = Topology(process_specs(settings), STATE_DIR / "logs", restart_on_death=True)
    try:
        wait_for_bucket(settings)
        migrate(settings.database_url)
        topology.start()
        (STATE_DIR / "settings.env").write_text(
            "".join(f"{k}={v}\n" for k, v in sorted(settings.to_env().items()) if "SECRET" not in k)
        )
        urls = {spec.name: spec.metrics_url for spec in topology.specs.values() if spec.metrics_url}
        (STATE_DIR / "urls.json").write_text(json.dumps(urls, indent=2))
        logger.info("topology running: %s", ", ".join(topology.specs))
        stopping.wait()
        logger.info("stopping the topology")
    finally:
        topology.stop(timeout_s=settings.gateway_graceful_timeout_s + 5)
        s3.stop()
    return 0


def _read_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def start() -> int:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    pid_file = STATE_DIR / "supervisor.pid"
    if _read_pid(pid_file):
        print(f"already up (supervisor pid {pid_file.read_text().strip()}); `make down` stops it")
        return 0
    settings = up_settings()
    problems = check_servers(settings)
    if problems:
        print("make up needs these servers:\n  " + "\n  ".join(problems), file=sys.stderr)
        print("Set INGEST_DATABASE_URL / INGEST_BROKER_URL to use others.", file=sys.stderr)
        return 1
    (STATE_DIR / "urls.json").unlink(missing_ok=True)
    log = (STATE_DIR / "supervisor.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.up", "supervise"],
        env=child_environment({"PYTHONPATH": str(ROOT), **settings.to_env()}),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    pid_file.write_text(f"{proc.pid}\n")
    ready = f"http://{settings.host}:{settings.port}/readyz"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            print(f"the supervisor exited; see {STATE_DIR / 'supervisor.log'}", file=sys.stderr)
            return 1
        try:
            with urllib.request.urlopen(ready, timeout=5):
                break
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    else:
        print(f"{ready} did not answer within 120 s; see {STATE_DIR}/logs", file=sys.stderr)
        return 1
    urls = json.loads((STATE_DIR / "urls.json").read_text()) if (STATE_DIR / "urls.json").exists() else {}
    demo = subprocess.run(
        [sys.executable, "-m", "ingest_worker.cli", "demo"],
        env=child_environment({"PYTHONPATH": str(ROOT), **settings.to_env()}),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    key = demo.stdout.strip().splitlines()[-1]
    gateway = f"http://{settings.host}:{settings.port}"
    print(f"up: gateway {gateway} (readyz ok); logs in {STATE_DIR / 'logs'}")
    database = sa.engine.make_url(settings.database_url).database
    print(f"  database {database}, Redis namespace {settings.broker_namespace}")
    for name, url in urls.items():
        print(f"  metrics {name}: {url}")
    print(f"Demo tenant API key: {key}")
    print(f"  curl -s -H 'Authorization: Bearer {key}' -F file=@your.pdf {gateway}/v1/documents")
    print("make down stops everything.")
    return 0


def stop() -> int:
    pid_file = STATE_DIR / "supervisor.pid"
    pid = _read_pid(pid_file)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _read_pid(pid_file):
            time.sleep(0.3)
    pid_file.unlink(missing_ok=True)
    leftovers = _stop_leftovers()
    print("down" if pid is not None or leftovers else "not up")
    return 0


def _stop_leftovers() -> int:
    """Processes whose supervisor died without stopping them (killed with SIGKILL, say): SIGTERM,
    then SIGKILL to each one's process group."""
    found = [
        (path, pid)
        for path in [*STATE_DIR.glob("logs/*.pid"), STATE_DIR / "s3.pid"]
        if (pid := _read_pid(path))
    ]
    for _, pid in found:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_read_pid(path) for path, _ in found):
        time.sleep(0.3)
    for path, pid in found:
        if _read_pid(path):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        path.unlink(missing_ok=True)
    return len(found)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.up", description=__doc__)
    parser.add_argument("command", choices=["start", "stop", "supervise"])
    command = parser.parse_args().command
    return {"start": start, "stop": stop, "supervise": supervise}[command]()


if __name__ == "__main__":
    sys.exit(main())
