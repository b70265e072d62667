"""The objects every hand-written hostile PDF shares: its catalog, its page size and a blank page."""

from __future__ import annotations

CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
MEDIA_BOX = b"/MediaBox [0 0 595 842]"


def leaf_page(parent: int, extra: bytes = b"") -> bytes:
    """A blank page dictionary whose /Parent is object `parent`."""
    return b"<< /Type /Page /Parent %d 0 R " % parent + MEDIA_BOX + extra + b" >>"
