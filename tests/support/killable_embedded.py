"""Test-only: `deploy/embedded.py` whose index stage can be SIGKILLed in the middle.

Points are written in batches of 16 (each one acknowledged by the store before the next). The first time
a job indexes, a marker file is made once its first batch is acknowledged, each further batch waits
50 ms, and after the last the stage is held open for a minute, so a kill at any moment after the
marker falls after an acknowledged batch and before the stage is recorded. A restarted process runs
at full speed.

    KILL_MARKERS=<folder> python tests/support/killable_embedded.py
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shared.vectorstores.edge_store import EdgeStore

MARKERS = Path(os.environ["KILL_MARKERS"])
BATCH = 16
_upsert = EdgeStore.upsert


def _first_to_claim(marker: Path) -> bool:
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def upsert_slowly(
    self: EdgeStore,
    name: str,
    ids: Sequence[str],
    vectors: Sequence[Sequence[float]],
    payloads: Sequence[dict[str, Any]],
    sparse: Sequence[Any] | None = None,
) -> None:
    job = payloads[0]["job_id"] if payloads else ""
    first = _first_to_claim(MARKERS / f"{job}-index")
    for start in range(0, len(ids), BATCH):
        end = start + BATCH
        _upsert(
            self, name, ids[start:end], vectors[start:end], payloads[start:end], sparse and sparse[start:end]
        )
        if first:
            (MARKERS / f"{job}-acked").touch()
            time.sleep(0.05)
    if first:
        time.sleep(60)


EdgeStore.upsert = upsert_slowly  # type: ignore[method-assign]

if __name__ == "__main__":
    from deploy.embedded import main

    main()
