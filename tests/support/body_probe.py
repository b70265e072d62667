"""A raw-socket client that announces a large body (or sends a chunked one) and counts how much of it
a real HTTP server took before it answered, and whether the answer arrived or the connection was reset.

What the server read is what the client sent less what still sits in the two sockets' queues (the
client's unsent bytes and the server's unread ones), which Linux shows in /proc/net/tcp for every
socket on the machine, a server process's too."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

CHUNK = 64 * 1024
MB = 1024 * 1024
ZEROS = bytes(CHUNK)


@dataclass
class ProbeResult:
    status: int | None  # None: no answer (reset or timeout)
    sent_bytes: int  # body bytes the server's socket accepted before the answer
    reset: bool
    elapsed_s: float
    read_bytes: int = 0  # body bytes the server had read from its socket when it answered
    code: str | None = None  # the answer's problem+json code


def _queues(local: tuple[str, int], remote: tuple[str, int]) -> tuple[int, int] | None:
    """(unsent, unread) bytes of the loopback socket `local` → `remote`, from /proc/net/tcp."""

    def hex_address(address: tuple[str, int]) -> str:
        return socket.inet_aton(address[0])[::-1].hex().upper() + f":{address[1]:04X}"

    wanted = (hex_address(local), hex_address(remote))
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if (fields[1], fields[2]) == wanted:
                unsent, unread = fields[4].split(":")
                return int(unsent, 16), int(unread, 16)
    return None


def _read_by_server(mine: tuple[str, int], theirs: tuple[str, int], written: int) -> int | None:
    """How much of the `written` bytes the server's process has taken from its socket (`theirs`),
    if both sockets are still there."""
    client, server = _queues(mine, theirs), _queues(theirs, mine)
    if client is None or server is None:
        return None
    return written - client[0] - server[1]


def _final(data: bytes) -> bytes:
    # The final answer, after any interim ones (100 Continue).
    while data.startswith(b"HTTP/1.1 1") and b"\r\n\r\n" in data:
        _, _, data = data.partition(b"\r\n\r\n")
    return data


def _whole(data: bytes) -> bool:
    """Whether the final answer's head and its Content-Length of body are all in."""
    head, found, body = _final(data).partition(b"\r\n\r\n")
    if not found or _status(data) is None:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


def _code(data: bytes) -> str | None:
    _, _, body = _final(data).partition(b"\r\n\r\n")
    try:
        return str(json.loads(body)["code"])
    except (ValueError, KeyError, TypeError):
        return None


def _status(data: bytes) -> int | None:
    # Skip interim answers (100 Continue) to the final one.
    while data.startswith(b"HTTP/1.1 1"):
        _, _, data = data.partition(b"\r\n\r\n")
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") and b"\r\n" in data else None


def probe(
    port: int,
    announced: int,
    headers: dict[str, str],
    *,
    path: str = "/v1/documents",
    expect_continue: bool = False,
    timeout_s: float = 20.0,
) -> ProbeResult:
    """POST `announced` bytes (sent only as fast as the server reads them) and see what comes back.
    With `expect_continue`, wait up to 1 s for the server's word before sending, as curl does."""
    head = [f"Content-Length: {announced}", *(f"{k}: {v}" for k, v in headers.items())]
    head += ["Expect: 100-continue"] if expect_continue else []
    pieces = (ZEROS[: min(CHUNK, announced - at)] for at in range(0, announced, CHUNK))
    return _exchange(port, path, head, pieces, expect_continue=expect_continue, timeout_s=timeout_s)


def probe_chunked(
    port: int, headers: dict[str, str], *, chunks: int, chunk_bytes: int = MB, timeout_s: float = 20.0
) -> ProbeResult:
    """POST a chunked upload of `chunks` chunks of `chunk_bytes` (the start of a form's file part,
    then zeros), sent only as fast as the server reads it, and see what comes back. `sent_bytes`
    counts the chunks' framing too."""
    head = ["Transfer-Encoding: chunked", *(f"{k}: {v}" for k, v in headers.items())]
    part = b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\n\r\n%PDF-1.4\n'
    body = memoryview(part + bytes(chunk_bytes - len(part)))
    filler = memoryview(bytes(chunk_bytes))

    def pieces() -> Iterator[bytes | memoryview]:
        for number in range(chunks):
            yield f"{chunk_bytes:x}\r\n".encode()
            for at in range(0, chunk_bytes, CHUNK):
                yield (body if number == 0 else filler)[at : at + CHUNK]
            yield b"\r\n"
        yield b"0\r\n\r\n"

    return _exchange(port, "/v1/documents", head, pieces(), timeout_s=timeout_s)


def _exchange(
    port: int,
    path: str,
    head_lines: list[str],
    pieces: Iterator[bytes | memoryview],
    *,
    expect_continue: bool = False,
    timeout_s: float,
) -> ProbeResult:
    """Send a POST's head, then its body's `pieces` as the server's socket takes them, until the
    whole answer is in (or the time is up)."""
    started = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)
    head = [f"POST {path} HTTP/1.1", "Host: probe", "Content-Type: multipart/form-data; boundary=x"]
    request_head = ("\r\n".join(head + head_lines) + "\r\n\r\n").encode()
    sock.sendall(request_head)
    ends = sock.getsockname(), sock.getpeername()
    sent, answer, reset, read = 0, b"", False, 0
    if expect_continue:
        ready, _, _ = select.select([sock], [], [], 1.0)
        if ready:
            answer = sock.recv(65536)
    sock.setblocking(False)
    deadline = started + timeout_s
    pending: bytes | memoryview | None = next(pieces, None)
    try:
        while time.monotonic() < deadline and not _whole(answer):
            read = max(read, _read_by_server(*ends, len(request_head) + sent) or 0)
            readable, writable, _ = select.select([sock], [sock] if pending is not None else [], [], 0.5)
            if readable:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
            elif writable and pending is not None:
                try:
                    taken = sock.send(pending)
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    pending = None  # the server stopped reading: wait for its answer
                    continue
                sent += taken
                pending = pending[taken:] if taken < len(pending) else next(pieces, None)
        # Once more with the answer in: a server reads nothing of this body after answering.
        read = max(read, _read_by_server(*ends, len(request_head) + sent) or 0)
    except ConnectionResetError:
        reset = True
    finally:
        sock.close()
    elapsed = time.monotonic() - started
    body_read = max(0, read - len(request_head))
    return ProbeResult(_status(answer), sent, reset, elapsed, body_read, _code(answer))
