"""The gateway's allocator keeps freed upload buffers: a request reuses the pages the last one freed
instead of having the kernel fault in and zero new ones."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# A request's buffers as an upload of a few MiB leaves them: several held at once, then all freed.
ROUNDS = """
import resource, sys
from deploy.malloc_tuning import keep_freed_buffers
tuned = keep_freed_buffers() if sys.argv[1] == "tuned" else False
def request():
    held = [bytearray(1024 * 1024) for _ in range(4)]
    for buffer in held:
        buffer[::4096] = b"x" * len(buffer[::4096])  # touch every page
    del held
request()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    request()
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


def page_faults(mode: str, **env: str) -> tuple[bool, int]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS, mode],
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0] == "True", int(out[1])


@glibc_only
def test_freed_buffers_are_reused_without_new_page_faults() -> None:
    # Given a process that frees 4 MiB of buffers after each of 50 requests
    # When its allocator is tuned, then it is tuned, and the requests fault in almost no new pages
    tuned, faults = page_faults("tuned")
    assert tuned
    assert faults < 500
    # While untuned, glibc gives the memory back and every request faults its pages in again
    _, untuned_faults = page_faults("plain")
    assert untuned_faults > 10 * max(faults, 100)


@glibc_only
def test_an_operators_own_allocator_settings_win() -> None:
    # Given glibc's own variable set by an operator, the service changes nothing
    tuned, _ = page_faults("tuned", MALLOC_TRIM_THRESHOLD_="131072")
    assert not tuned
