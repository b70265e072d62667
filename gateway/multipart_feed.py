"""Feeding a multipart body to python-multipart's parser with the tolerance of Werkzeug's, which the
upload endpoint had: a preamble before the first delimiter (RFC 2046 allows one), and an empty part
whose delimiter follows its headers' blank line without a CRLF of its own (Werkzeug's test client
sends an empty file so)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from python_multipart.multipart import MultipartParser, MultipartState

MAX_PREAMBLE_BYTES = 64 * 1024


class NoDelimiterError(Exception):
    """The body has no delimiter of its boundary where one must be."""


def feed(
    parser: MultipartParser,
    stream: Callable[[int], bytes],
    boundary: bytes,
    *,
    read_bytes: int,
    part_is_fresh: Callable[[], bool],
) -> None:
    """Write the body read from `stream` to `parser`. Where the parser has just read a part's
    headers (`part_is_fresh()`: no byte of its data yet) and the body goes on with the delimiter at
    once, the CRLF the delimiter lacks is given to the parser, so the part is empty, as in Werkzeug."""
    pattern = b"\r\n\r\n--" + boundary
    carry = b""
    for piece in _after_preamble(stream, b"--" + boundary, read_bytes):
        data, start = (carry + piece if carry else piece), 0
        while (at := data.find(pattern, start)) >= 0:
            parser.write(data[start : at + 4])
            if parser.state == MultipartState.PART_DATA and parser.index == 0 and part_is_fresh():
                parser.write(b"\r\n")
            start = at + 4
        # The piece may end with the start of the pattern: that is kept for the next piece (rarely:
        # the usual piece is written as it came, without a copy).
        cut = _pattern_start(data, pattern, max(start, len(data) - len(pattern) + 1))
        if start == 0 and cut == len(data):
            parser.write(data)
        elif cut > start:
            parser.write(data[start:cut])
        carry = data[cut:]
    if carry:
        parser.write(carry)


def _pattern_start(data: bytes, pattern: bytes, start: int) -> int:
    """Where, from `start` on, `data` ends with the beginning of `pattern` (else its length)."""
    at = data.find(pattern[:1], start)
    while at >= 0 and not pattern.startswith(data[at:]):
        at = data.find(pattern[:1], at + 1)
    return at if at >= 0 else len(data)


def _after_preamble(stream: Callable[[int], bytes], delimiter: bytes, read_bytes: int) -> Iterator[bytes]:
    """The body's pieces from its first delimiter on (python-multipart refuses a preamble)."""
    head: bytes | None = b""
    while chunk := stream(read_bytes):
        if head is not None:
            head += chunk
            at = head.find(delimiter)
            if at < 0:
                if len(head) > MAX_PREAMBLE_BYTES:
                    raise NoDelimiterError()
                continue
            chunk, head = head[at:], None
        yield chunk
    if head:
        raise NoDelimiterError()
