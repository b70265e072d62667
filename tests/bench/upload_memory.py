"""Peak memory of the production gateway (gunicorn) while a large upload streams through it.

    python -m tests.bench.upload_memory [--mb 200]

Starts `gunicorn gateway.wsgi:app` (one worker) on SQLite and a local object store, with Redis as
the broker (no worker consumes: only the accept path is measured), uploads a file of the given
size with curl, and samples the gunicorn worker's resident memory every 20 ms until the answer.
`measure_upload_memory` returns the numbers (`make bench` uses it); `main` prints them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@dataclass(frozen=True)
class UploadMemory:
    """One upload through the gateway: its answer, duration and the worker's resident memory."""

    mb: int
    status: str
    seconds: float
    baseline_mb: float
    peak_mb: float

    @property
    def growth_mb(self) -> float:
        return self.peak_mb - self.baseline_mb

    @property
    def mb_per_s(self) -> float:
        return self.mb / self.seconds


TABLE_HEADER = (
    "| upload | status | seconds | MB/s | gateway RSS before | peak | growth |\n"
    "| --- | --- | --- | --- | --- | --- | --- |"
)


def table_row(result: UploadMemory) -> str:
    return (
        f"| {result.mb} MB | {result.status} | {result.seconds:.1f} | {result.mb_per_s:.0f} "
        f"| {result.baseline_mb:.0f} MB | {result.peak_mb:.0f} MB | {result.growth_mb:.0f} MB |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    print(TABLE_HEADER)
    print(table_row(measure_upload_memory(args.mb)))


def measure_upload_memory(mb: int = 200) -> UploadMemory:
    """Upload an `mb` megabyte file through a private gunicorn gateway and sample its memory.

    Leaves nothing behind: the gateway is stopped, its folder removed and its Redis keys deleted.
    """
    work = Path(tempfile.mkdtemp(prefix="upload-bench-"))
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "INGEST_DATA_DIR": str(work / "data"),
        "INGEST_MAX_UPLOAD_MB": str(mb + 10),
        "INGEST_BROKER_URL": os.environ.get("INGEST_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "INGEST_BROKER_NAMESPACE": f"upload-bench-{port}",
        "INGEST_PORT": str(port),
        "INGEST_GATEWAY_WORKERS": "1",
    }
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [sys.executable, "-m", "ingest_worker.cli", "migrate"], env=env, check=True, capture_output=True
        )
        key = subprocess.run(
            [sys.executable, "-m", "ingest_worker.cli", "tenant", "bench"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()[-1]
        big = work / "big.pdf"
        with big.open("wb") as f:
            f.write(b"%PDF-1.7\n")
            block = os.urandom(1024 * 1024)
            for _ in range(mb):
                f.write(block)
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "-c",
                str(ROOT / "deploy/gunicorn.conf.py"),
                "gateway.wsgi:app",
            ],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_listening(port)
        (worker,) = children(server.pid)
        # One small upload first: the baseline is then the worker's as it serves (app imported, its
        # connections open), and the growth is what the large upload adds.
        small = work / "small.pdf"
        small.write_bytes(b"%PDF-1.7\n" + os.urandom(64 * 1024))
        post_file(port, key, small)
        return upload_sampled(worker, port, key, big, mb)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(work, ignore_errors=True)
        client = redis.Redis.from_url(env["INGEST_BROKER_URL"])
        for name in client.scan_iter(f"{env['INGEST_BROKER_NAMESPACE']}*"):
            client.delete(name)
        client.close()


def wait_listening(port: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    # gunicorn's master listens before its worker has imported the app.
    time.sleep(1)


def upload_sampled(worker: int, port: int, key: str, big: Path, mb: int) -> UploadMemory:
    """Upload `big` with curl while a thread samples the worker's resident memory every 20 ms."""
    baseline = rss_mb(worker)
    peak = baseline
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mb(worker))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        started = time.monotonic()
        status = post_file(port, key, big)
        elapsed = time.monotonic() - started
    finally:
        done.set()
        sampler.join()
    return UploadMemory(mb, status, elapsed, baseline, peak)


def post_file(port: int, key: str, path: Path) -> str:
    """Upload `path` with curl; the HTTP status."""
    result = subprocess.run(
        [
            "curl",
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            f"Authorization: Bearer {key}",
            "-F",
            f"file=@{path}",
            f"http://127.0.0.1:{port}/v1/documents",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


if __name__ == "__main__":
    main()
