"""The per-tenant cap holds across worker processes on RabbitMQ: its slots are in Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import redis

from shared.queue import make_broker
from shared.settings import Settings, child_environment
from tests.conftest import ROOT
from tests.support.cap_probe import PROBE_QUEUE

pytestmark = [pytest.mark.rabbitmq, pytest.mark.redis, pytest.mark.slow]

MESSAGES = 16
CAP = 2


def start_pool(settings: Settings, log: Path, probe_key: str, redis_url: str) -> subprocess.Popen[bytes]:
    env = child_environment(
        {**settings.to_env(), "PYTHONPATH": str(ROOT), "PROBE_REDIS_URL": redis_url, "PROBE_KEY": probe_key}
    )
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dramatiq",
                "tests.support.cap_probe",
                "-p",
                "1",
                "-t",
                "4",
                "-Q",
                PROBE_QUEUE,
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_two_worker_processes_on_rabbitmq_never_exceed_a_tenants_cap(
    settings: Settings, rabbitmq_url: str, redis_url: str, broker_namespace: str, tmp_path: Path
) -> None:
    settings = settings.replace(
        broker_url=rabbitmq_url,
        broker_namespace=broker_namespace,
        tenant_slots_redis_url=redis_url,
        tenant_max_concurrency=CAP,
    )
    counters = redis.Redis.from_url(redis_url)
    key = f"{broker_namespace}:probe"
    # Given two worker processes of four threads each on RabbitMQ, and a cap of two per tenant
    pools = [start_pool(settings, tmp_path / f"worker-{n}.log", key, redis_url) for n in range(2)]
    broker = make_broker(settings)
    broker.declare_queue(PROBE_QUEUE)
    try:
        # When one tenant sends a burst that would keep all eight threads busy
        for n in range(MESSAGES):
            options = {"tenant_id": "acme"}
            message: dramatiq.Message[Any] = dramatiq.Message(
                queue_name=PROBE_QUEUE, actor_name="probe", args=(n,), kwargs={}, options=options
            )
            broker.enqueue(message)
        deadline = time.monotonic() + 90
        while int(counters.get(f"{key}:done") or 0) < MESSAGES and time.monotonic() < deadline:
            for pool in pools:
                assert pool.poll() is None, (tmp_path / "worker-0.log").read_text()[-3000:]
            time.sleep(0.2)
        # Then every message ran, never more than the cap at once, and the cap was reached
        assert int(counters.get(f"{key}:done") or 0) == MESSAGES
        assert int(counters.get(f"{key}:max") or 0) == CAP
    finally:
        for pool in pools:
            if pool.poll() is None:
                os.killpg(pool.pid, signal.SIGTERM)
                pool.wait(timeout=30)
        broker.close()
        counters.delete(f"{key}:now", f"{key}:max", f"{key}:done")
        counters.close()
