"""Encrypted PDFs whose encryption dictionary is broken: key lengths no cipher takes, revisions and crypt
filters that do not exist, truncated keys and entries of the wrong type."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from tests.support.hostile_pdfs.encryption import encrypted_with, with_trailer_encrypt

_ZEROS_32 = b"<" + b"00" * 32 + b">"
_SHORT = b"<" + b"00" * 10 + b">"


def patched_encryption(algorithm: str, entry: bytes, value: bytes, *, user_password: str = "") -> bytes:
    """A file pypdf's writer encrypted with `algorithm`, then the first `entry` (e.g. b"/Length") of its
    encryption dictionary given `value` in place: padded with spaces so no offset moves, so the file
    stays whole but for the entry."""
    data = encrypted_with(algorithm, user_password=user_password)
    start = data.rindex(b"/Filter /Standard")
    start = data.rindex(b" obj", 0, start)
    found = re.compile(re.escape(entry) + rb"\s+(<[0-9a-f]*>|-?\d+)").search(data, start)
    assert found is not None, f"{entry!r} is not in the {algorithm} encryption dictionary"
    old = found.group(1)
    assert len(value) <= len(old), f"{value!r} is longer than {old!r}"
    return data[: found.start(1)] + value.ljust(len(old)) + data[found.end(1) :]


def standard_encrypt(v: bytes, r: bytes, length: bytes, extra: bytes = b"", **entries: bytes) -> bytes:
    """A page behind a hand-written standard security handler: `v`, `r` and `length` as given, `extra`
    appended, and /O, /U and /P from `entries` (o, u, p) or well-formed defaults."""
    o, u, p = entries.get("o", _ZEROS_32), entries.get("u", _ZEROS_32), entries.get("p", b"-4")
    return with_trailer_encrypt(
        b"<< /Filter /Standard /V %s /R %s /Length %s /O %s /U %s /P %s%s >>" % (v, r, length, o, u, p, extra)
    )


def _crypt_filter(cfm: bytes, length: bytes) -> bytes:
    return b" /CF << /StdCF << /CFM %s /Length %s /AuthEvent /DocOpen >> >> /StmF /StdCF /StrF /StdCF" % (
        cfm,
        length,
    )


_AESV3 = _crypt_filter(b"/AESV3", b"32")

# Each broken encryption by name, as the hostile sweep runs them: the writer's files with one entry
# changed (they open with an empty user password but for the change), then hand-written dictionaries.
BROKEN_ENCRYPTION: dict[str, Callable[[], bytes]] = {
    **{
        f"{algorithm} with /Length {length.decode()}": partial(
            patched_encryption, algorithm, b"/Length", length
        )
        for algorithm, lengths in (
            ("RC4-40", (b"7", b"0", b"41")),
            ("RC4-128", (b"7", b"0", b"300", b"41", b"-40")),
        )
        for length in lengths
    },
    "AES-128 with a 5-byte crypt filter key": partial(
        patched_encryption, "AES-128", b"/CFM /AESV2\n/Length", b"5"
    ),
    "AES-256 with a truncated /UE": partial(patched_encryption, "AES-256", b"/UE", _SHORT),
    "AES-256 with a truncated /OE": partial(patched_encryption, "AES-256", b"/OE", _SHORT),
    "AES-256 with a truncated /Perms": partial(patched_encryption, "AES-256", b"/Perms", b"<0011>"),
    "AES-256 with a truncated /U": partial(patched_encryption, "AES-256", b"/U", _SHORT),
    "AES-256 with a truncated /O": partial(patched_encryption, "AES-256", b"/O", _SHORT),
    "AES-256 with an empty /UE": partial(patched_encryption, "AES-256", b"/UE", b"<>"),
    "AES-256 with a revision 2": partial(patched_encryption, "AES-256", b"/R", b"2"),
    "RC4-128 with version 5": partial(patched_encryption, "RC4-128", b"/V", b"5"),
    **{
        f"version {v.decode()} revision {r.decode()}": partial(standard_encrypt, v, r, b"128")
        for v, r in ((b"1", b"5"), (b"5", b"2"), (b"3", b"3"), (b"4", b"2"), (b"0", b"2"), (b"2", b"7"))
    },
    "a string for /V": partial(standard_encrypt, b"(two)", b"3", b"128"),
    "a name for /R": partial(standard_encrypt, b"2", b"/Six", b"128"),
    "a string for /Length": partial(standard_encrypt, b"2", b"3", b"(forty)"),
    "a fractional /Length": partial(standard_encrypt, b"2", b"3", b"40.5"),
    "a crypt filter of unknown /CFM": partial(
        standard_encrypt, b"4", b"4", b"128", _crypt_filter(b"/Bogus", b"16")
    ),
    "an AESV2 crypt filter of 5 bytes": partial(
        standard_encrypt, b"4", b"4", b"128", _crypt_filter(b"/AESV2", b"5")
    ),
    "a V2 crypt filter of 300 bytes": partial(
        standard_encrypt, b"4", b"4", b"128", _crypt_filter(b"/V2", b"300")
    ),
    "a number for /CF": partial(standard_encrypt, b"4", b"4", b"128", b" /CF 5 /StmF /StdCF /StrF /StdCF"),
    "a missing named crypt filter": partial(
        standard_encrypt, b"4", b"4", b"128", b" /StmF /Nope /StrF /Nope"
    ),
    "AESV3 with truncated keys": partial(
        standard_encrypt,
        b"5",
        b"6",
        b"256",
        _AESV3 + b" /OE %s /UE %s /Perms <00>" % (_SHORT, _SHORT),
        o=_SHORT,
        u=_SHORT,
    ),
    "AESV3 without /OE and /UE": partial(
        standard_encrypt, b"5", b"6", b"256", _AESV3, o=_ZEROS_32 * 2, u=_ZEROS_32 * 2
    ),
    "AESV3 with numbers for its keys": partial(
        standard_encrypt, b"5", b"6", b"256", _AESV3 + b" /OE 1 /UE 2 /Perms 3", o=b"4", u=b"5"
    ),
    "a string for /P": partial(standard_encrypt, b"2", b"3", b"128", p=b"(all)"),
    "a name for /P": partial(standard_encrypt, b"2", b"3", b"128", p=b"/All"),
    "a fractional /P": partial(standard_encrypt, b"2", b"3", b"128", p=b"1.5"),
    "an out-of-range /P": partial(standard_encrypt, b"2", b"3", b"128", p=b"99999999999999999999"),
    "a number for /O": partial(standard_encrypt, b"2", b"3", b"128", o=b"5"),
    "a name for /U": partial(standard_encrypt, b"2", b"3", b"128", u=b"/U"),
}
