"""A `/healthz` prober in a process of its own: it asks every 10 ms and, when told to stop (SIGTERM),
writes each request's start time and latency as JSON, so a stall of the served process (a call that
holds the GIL) shows as one long request.

    python -m tests.bench.healthz_probe URL OUT
"""

from __future__ import annotations

import json
import signal
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType


def main(url: str, out: str) -> None:
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    samples: list[tuple[float, float]] = []
    while not stopping:
        began = time.time()
        try:
            with urllib.request.urlopen(url, timeout=60) as answer:
                answer.read()
        except OSError:
            pass
        samples.append((began, time.time() - began))
        time.sleep(0.01)
    Path(out).write_text(json.dumps(samples))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
