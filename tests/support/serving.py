"""The gateway as each topology serves it, for tests over real sockets: `make gateway`'s gunicorn
(deploy/gunicorn.conf.py) as a server process, and `make run`'s waitress server with its upload gate
(deploy/embedded.py) in this process. Each yields its base URL."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import update

from deploy.embedded import gateway_server
from gateway.app import create_app
from shared.db import Database
from shared.models import Tenant
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.ports import free_port


@contextlib.contextmanager
def gunicorn_gateway(db: Database, folder: Path, **env: str) -> Iterator[str]:
    """`make gateway`'s gunicorn on `db`, with these INGEST_ settings (names without the prefix)."""
    port = free_port()
    environ = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "INGEST_DATABASE_URL": db.engine.url.render_as_string(hide_password=False),
        "INGEST_DATA_DIR": str(folder / "data"),
        "INGEST_EMBEDDER": "fake",
        "INGEST_PORT": str(port),
        **{f"INGEST_{name.upper()}": value for name, value in env.items()},
    }
    command = [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "gateway.wsgi:app"]
    log = (folder / "gunicorn.log").open("wb")
    process = subprocess.Popen(command, env=environ, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(30)
        log.close()


@contextlib.contextmanager
def embedded_gateway(settings: Settings, db: Database) -> Iterator[str]:
    """`make run`'s gateway server (deploy/embedded.py's gateway_server) on `db`, in a thread."""
    app = create_app(settings, publisher=Publisher(make_broker(settings)), db=db)
    server = gateway_server(app, settings, host="127.0.0.1", port=0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.effective_port}"
    finally:
        server.close()
        thread.join(5)


def new_tenant(db: Database, name: str, **limits: Any) -> str:
    """A new tenant's API key, with these tenant limits (max_upload_mb...)."""
    with db.transaction() as session:
        key = create_tenant(session, name)[1]
        if limits:
            session.execute(update(Tenant).where(Tenant.name == name).values(**limits))
    return key
