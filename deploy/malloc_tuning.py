"""The C allocator of a process that handles uploads: freed buffers are kept for the next request.

An upload of 1 MB passes through several buffers of up to 1 MiB (the socket read, the server's
body buffer, the parser's pieces). glibc serves a block that large with `mmap` and gives it back
with `munmap`, or takes it from the top of the heap and trims the heap again once it is freed; in
both cases every page of the next buffer is faulted in and zeroed anew by the kernel. Measured on
the gateway (2 gevent workers, 1 MB uploads): about 4 ms of CPU per upload in page faults and
`brk`, a third of the gateway's whole cost.

`keep_freed_buffers()` serves blocks up to `MMAP_THRESHOLD_BYTES` from the heap and lets the heap
keep up to `TRIM_THRESHOLD_BYTES` of free memory at its top, so a request reuses the pages the last
one freed. A process pays for it with at most that much resident memory it does not use. Setting
either threshold by hand turns off glibc's own adaptive thresholds, which is why both are set.
An operator's own `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_` (glibc's environment
variables) wins: then nothing is changed. Other C libraries (musl) are left as they are.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform

logger = logging.getLogger(__name__)

# glibc's mallopt() parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 4 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 32 * 1024 * 1024
OPERATOR_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_buffers() -> bool:
    """Tune glibc's allocator for this process (and the processes it forks later); whether it did.
    Call early, before the process forks its workers."""
    if platform.libc_ver()[0] != "glibc" or any(name in os.environ for name in OPERATOR_SETTINGS):
        return False
    try:
        libc = ctypes.CDLL(None)
        done = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        done = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and done
    except (OSError, AttributeError):
        done = False
    if not done:
        logger.warning("could not tune the C allocator; uploads cost more CPU")
    return done
