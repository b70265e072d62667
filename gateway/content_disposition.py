"""`Content-Disposition: attachment` for a filename a client chose (RFC 6266, RFC 5987): an ASCII
fallback any client can read and the exact name percent-encoded, neither able to break the header."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

FALLBACK_NAME = "document.pdf"
MAX_NAME_CHARS = 200
# Control characters (CR and LF above all), path separators and the characters that would end or
# escape a quoted-string: none may reach the header.
UNSAFE = re.compile(r'[\x00-\x1f\x7f-\x9f/\\"]')
# Control characters and the bidirectional marks, embeddings, overrides and isolates, which can make
# "report\u202efdp.exe" show as "reportexe.pdf": none may reach a stored or downloaded name.
CONTROLS = re.compile(r"[\x01-\x1f\x7f-\x9f]")
BIDI = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def display_name(filename: str) -> str:
    """The name as stored and shown: control characters replaced, bidirectional controls dropped
    (from `filename` and RFC 5987 `filename*` alike; a NUL is refused before this)."""
    return CONTROLS.sub("_", BIDI.sub("", filename))


def safe_name(filename: str) -> str:
    """The filename's last path component without control characters, trimmed; a default if nothing
    is left (or only dots)."""
    name = UNSAFE.sub("_", BIDI.sub("", filename).replace("\\", "/").rsplit("/", 1)[-1]).strip().strip(".")
    return name[:MAX_NAME_CHARS] or FALLBACK_NAME


def ascii_name(name: str) -> str:
    """`name` with accents dropped and every other non-ASCII or risky character replaced; a stem with
    no letter or digit left becomes "document"."""
    stem, _, extension = name.rpartition(".") if "." in name else (name, "", "")
    ascii_stem, ascii_extension = _ascii(stem), _ascii(extension)
    if not re.search(r"[A-Za-z0-9]", ascii_stem):
        ascii_stem = "document"
    return f"{ascii_stem}.{ascii_extension}" if ascii_extension else ascii_stem


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^A-Za-z0-9._ ()\[\]+-]", "_", folded).strip(" ._")


def attachment(filename: str) -> str:
    """The header value: `attachment; filename="<ascii>"; filename*=UTF-8''<percent-encoded>`."""
    name = safe_name(filename)
    return f"attachment; filename=\"{ascii_name(name)}\"; filename*=UTF-8''{quote(name, safe='')}"
