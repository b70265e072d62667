"""The figures of `tests/bench/vector_store.py` and their section of docs/benchmarks.md."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

TARGET_P50_MS, TARGET_P99_MS, TARGET_UPSERTS, TARGET_STALL_MS, TARGET_RECALL = 50, 200, 2_000, 1_000, 0.95


@dataclass(frozen=True)
class Phase:
    """One phase's query latencies (s) per (tenant, mode), its dense recall@10, its (start, end) time."""

    label: str
    latencies_s: dict[tuple[str, str], tuple[float, ...]]
    recall_at_10: float
    window: tuple[float, float]

    def percentile_ms(self, key: tuple[str, str], p: float) -> float:
        ordered = sorted(self.latencies_s[key])
        return 1000 * ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


@dataclass
class StoreRun:
    adapter: str
    points: int
    upserts_per_s: float
    phases: tuple[Phase, ...]
    optimize_s: float | None
    stalls_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorBench:
    large: int
    shared: int
    runs: tuple[StoreRun, ...]


def vector_section(bench: VectorBench) -> str:
    rows = [
        "| Store | Phase | Queries | Large dense p50 / p99 | Large hybrid p50 / p99 | Empty dense p50 / p99 "
        "| Empty hybrid p50 / p99 | Recall@10 | Longest /healthz |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in bench.runs:
        for phase in run.phases:
            keys = [(tenant, mode) for tenant in ("large", "empty") for mode in ("dense", "hybrid")]
            cells = [f"{phase.percentile_ms(k, 50):.1f} / {phase.percentile_ms(k, 99):.1f} ms" for k in keys]
            queries = len(phase.latencies_s[("large", "dense")])
            rows.append(
                f"| {run.adapter} | {phase.label} | {queries} | "
                + " | ".join(cells)
                + f" | {phase.recall_at_10:.3f} | {run.stalls_ms.get(phase.label, 0):.0f} ms |"
            )
    writes = [
        "| Store | Points | Upserts/s (fill) | Longest /healthz: fill | while upserts run | optimize() |"
    ]
    writes.append("|---|---|---|---|---|---|")
    for run in bench.runs:
        optimize = (
            f"{run.stalls_ms.get('optimize()', 0):.0f} ms (it took {run.optimize_s:.2f} s)"
            if run.optimize_s is not None
            else "n/a"
        )
        writes.append(
            f"| {run.adapter} | {run.points:,} | {run.upserts_per_s:,.0f} "
            f"| {run.stalls_ms.get('fill', 0):.0f} ms "
            f"| {run.stalls_ms.get('while upserts run', 0):.0f} ms | {optimize} |"
        )
    return (
        "## Vector store of the embedded topology\n\n"
        "`tests/bench/vector_store.py`: one tenant with "
        f"{bench.large:,} points, nine tenants sharing {bench.shared:,}, and an empty tenant, in one "
        "collection (384-d random unit vectors, 150-word Zipf chunks with their BM25 sparse vectors). "
        "Fresh random queries (top 10) through the adapter's `search`; recall@10 of dense search against "
        "exact numpy search over the large tenant's points. The engine builds no HNSW graph (indexing is "
        "off), so searches are exact scans of the tenant's points found by the payload index; `optimize()` "
        "runs only segment maintenance (merges, vacuum). The longest `/healthz` is the longest answer, "
        "to a prober in another process, "
        "of a server thread in the benchmark's process (a call holding the GIL stalls it). Targets: p50 ≤ "
        f"{TARGET_P50_MS} ms, p99 ≤ {TARGET_P99_MS} ms, ≥ {TARGET_UPSERTS:,} upserts/s, no stall over "
        f"{TARGET_STALL_MS} ms, recall ≥ {TARGET_RECALL}. Local mode runs fewer queries, on its own count "
        "of points (the same proportions).\n\n"
        + "\n".join(rows)
        + "\n\n"
        + "\n".join(writes)
        + f"\n\nOn {os.cpu_count()} cores, shared with other work (figures are noisy)."
    )
