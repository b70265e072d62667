"""`make chaos`: the failure matrix, run against real processes on private servers, as one suite.

    python -m tests.chaos.run [--only worker_kills,s3_outage] [--seed 1] [--out docs/chaos.md]

Starts a private PostgreSQL, Redis and S3 server, the gateway, the worker pools and the maintenance
loop (tests/chaos/cluster.py), then runs each scenario (tests/chaos/scenarios.py) with a tenant of
its own and checks what it left (tests/chaos/check.py). Prints a Markdown table, writes it to
`--out` (a run of every scenario only) and exits 1 when a scenario failed.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tests.bench.machine import describe_machine
from tests.chaos.check import Verdict, check
from tests.chaos.cluster import POOLS, running_cluster
from tests.chaos.scenarios import CLEAN_UP, SCENARIOS, Context, Scenario

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    scenario: Scenario
    verdict: Verdict
    seconds: float


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "chaos.md")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {s.name for s in SCENARIOS}
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    rng = random.Random(args.seed)
    started = time.monotonic()
    outcomes: list[Outcome] = []
    for broker in dict.fromkeys(s.broker for s in chosen):
        workdir = Path(tempfile.mkdtemp(prefix=f"ingest-chaos-{broker}-"))
        try:
            run_on(broker, [s for s in chosen if s.broker == broker], workdir, rng, outcomes)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    report = render(outcomes, args.seed, time.monotonic() - started)
    print(report)
    if len(chosen) == len(SCENARIOS):
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)
        print(f"written to {args.out}", file=sys.stderr)
    return 0 if outcomes and all(o.verdict.passed for o in outcomes) else 1


def run_on(
    broker: str, scenarios: list[Scenario], workdir: Path, rng: random.Random, outcomes: list[Outcome]
) -> None:
    """Run `scenarios` on one cluster whose messages travel through `broker`."""
    step(f"starting PostgreSQL, Redis, S3, the broker ({broker}), the gateway, the pools and maintenance")
    with running_cluster(workdir, broker=broker) as (cluster, provider):
        for scenario in scenarios:
            step(scenario.name)
            tenant_id, key = cluster.new_tenant(scenario.name)
            begun = time.monotonic()
            with cluster.client(key) as client:
                ctx = Context(cluster, provider, tenant_id, client, rng)
                try:
                    expected = scenario.run(ctx)
                except Exception:
                    verdict = Verdict(problems=[traceback.format_exc(limit=3).strip().splitlines()[-1]])
                    expected = None
                finally:
                    if scenario.name in CLEAN_UP:
                        CLEAN_UP[scenario.name](ctx)
                if expected is not None:
                    verdict = check(cluster, tenant_id, expected, scenario.timeout_s)
            outcomes.append(Outcome(scenario, verdict, time.monotonic() - begun))
            print(row(outcomes[-1]), file=sys.stderr, flush=True)
            for problem in verdict.problems[:20]:
                print(f"    {problem}", file=sys.stderr)
            if not verdict.passed:
                for name in (*POOLS, "maintenance"):
                    print(f"--- {name} log ---\n{cluster.log_tail(name, 15)}", file=sys.stderr)


HEADER = (
    "| scenario | what breaks | jobs | final states | points (expected / found) | seconds | result |\n"
    "| --- | --- | --- | --- | --- | --- | --- |"
)


def row(outcome: Outcome) -> str:
    v = outcome.verdict
    states = ", ".join(f"{n} {status}" for status, n in sorted(v.final.items())) or "-"
    result = (
        "pass"
        if v.passed
        else f"FAIL: {v.problems[0]}" + (f" (+{len(v.problems) - 1} more)" if len(v.problems) > 1 else "")
    )
    return (
        f"| {outcome.scenario.name} | {outcome.scenario.what} | {v.jobs} | {states} "
        f"| {v.points_expected} / {v.points_found} | {outcome.seconds:.0f} | {result} |"
    )


def render(outcomes: list[Outcome], seed: int, seconds: float) -> str:
    machine = "\n".join(f"| {what} | {value} |" for what, value in describe_machine())
    return (
        "# Failure matrix\n\n"
        f"Run by `make chaos` (`python -m tests.chaos.run --seed {seed}`) on "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}, in {seconds:.0f} s. A private PostgreSQL, "
        "Redis (no persistence) and S3 server (`weed mini`); a gunicorn gateway, the two `dramatiq` pools "
        "of `make worker` (ingest and OCR with 2 threads; index, owning the local Qdrant folder, with 1) "
        "and the maintenance loop, each a process group of its own; the tests' OpenAI-compatible "
        "embeddings server. Recovery is tuned for a test that breaks things every few seconds "
        "(`INGEST_LEASE_S=4`, `INGEST_HANDOFF_STALL_S=5`, `INGEST_REDIS_HEARTBEAT_TIMEOUT_S=5`, "
        "`INGEST_MAINTENANCE_INTERVAL_S=0.5`; `INGEST_MAX_RECOVERIES=20`, as a job hit by several of the "
        "20 kills is the matrix's doing, not a job that kills its worker). Each scenario has a tenant "
        "of its own and states the final "
        "state of every job it submitted (good files `completed`, hostile files `failed` with their code, "
        "cancelled ones `cancelled`); the check waits for every job of the tenant to be final, compares "
        "each with its expectation, and reads the Qdrant folder (the index pool stopped meanwhile): "
        "exactly one point per chunk of each completed job, none of any other job, no chunk of a document "
        "indexed twice. The scenarios marked RabbitMQ run on a second such cluster whose messages travel "
        "through a private RabbitMQ node (the tenant cap's slots still in its Redis).\n\n"
        + "\n".join([HEADER, *(row(o) for o in outcomes)])
        + f"\n\n## Machine\n\n| | |\n| --- | --- |\n{machine}\n"
    )


def step(what: str) -> None:
    print(f"chaos: {what}...", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
