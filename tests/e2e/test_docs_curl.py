"""Every `curl` line of README.md and docs/api.md, run as written against a live embedded service.

The documents' ```sh blocks are user sessions: run in order in one bash, after `make run`, from the
repository's root. Each `curl` line ends with a comment that gives the HTTP status(es) it answers. The
test starts `deploy/embedded.py` the way `make run` does (a demo tenant first, then the service), in a
folder that looks like the repository's root (its code linked in, a fresh `var/` as the data dir, the
two PDFs the examples name), rewrites only the port numbers, and wraps `curl` in a shell function that
reports each call's status and exit code. Blocks that must not run here (`make run` itself) are
```shell blocks, and no `curl` line may hide in one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import MODEL_CACHE_DIR, missing_service
from tests.support.forkserver import spawn
from tests.support.pdfs import text_pdf
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", "docs/api.md"]
DOC_PORT = "8000"
DOC_RECEIVER_PORT = "9000"
# What a checkout's root holds that the commands in the documents use.
LINKED = ["Makefile", ".venv", "gateway", "ingest_worker", "shared", "deploy", "pyproject.toml"]
LINKED += ["requirements.txt", "requirements-model.txt", "requirements-dev.txt", "constraints.txt"]
FENCE = re.compile(r"^```(\S*)\s*$")
CURL = re.compile(r"(?<![\w.-])curl ")
STATUS = re.compile(r"\b([1-5]\d\d)\b")
SESSION_TIMEOUT_S = 300


@dataclass(frozen=True)
class Command:
    """One logical shell command of a document (continuation lines joined)."""

    lineno: int
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def is_curl(self) -> bool:
        return bool(CURL.search(self.text))

    @property
    def statuses(self) -> set[int]:
        """The statuses the comment at the end of the command documents."""
        last = self.lines[-1]
        comment = last.rsplit(" # ", 1)[1] if " # " in last else ""
        return {int(code) for code in STATUS.findall(comment)}


def fenced_blocks(text: str) -> Iterator[tuple[str, int, list[str]]]:
    """(info string, line number of the first line, lines) of each fenced code block."""
    info, start, body = None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if info is None and match:
            info, start, body = match.group(1), number + 1, []
        elif info is not None and line.strip() == "```":
            yield info, start, body
            info = None
        elif info is not None:
            body.append(line)


def commands(path: Path) -> list[Command]:
    """The commands of every ```sh block of a document, in order."""
    found: list[Command] = []
    for info, start, body in fenced_blocks(path.read_text()):
        if info != "sh":
            continue
        pending: list[str] = []
        for offset, line in enumerate(body):
            pending.append(line)
            if not line.endswith("\\"):
                found.append(Command(start + offset - len(pending) + 1, pending))
                pending = []
    return found


def script(cmds: list[Command], *, port: int, receiver_port: int) -> str:
    """The session as bash: ports rewritten, each `curl` reporting its status and exit code."""
    out = [
        "set -eo pipefail",
        "_curl() {",
        "  local n=$1; shift; local rc=0",
        '  command curl -w "%{stderr}@@status $n %{http_code}\\n" "$@" || rc=$?',
        '  echo "@@rc $n $rc" >&2; return $rc',
        "}",
    ]
    for cmd in cmds:
        text = cmd.text.replace(f"127.0.0.1:{DOC_PORT}", f"127.0.0.1:{port}")
        text = text.replace(f"127.0.0.1:{DOC_RECEIVER_PORT}", f"127.0.0.1:{receiver_port}")
        text = text.replace(f"--port {DOC_RECEIVER_PORT}", f"--port {receiver_port}")
        out.append(CURL.sub(f"_curl {cmd.lineno} ", text) if cmd.is_curl else text)
    return "\n".join(out) + "\n"


def service_environment(port: int) -> dict[str, str]:
    """This environment without INGEST_* variables, plus what the documents ask of `make run`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INGEST_")}
    env.update(
        PYTHONPATH=str(ROOT),
        INGEST_PORT=str(port),
        INGEST_MODEL_CACHE_DIR=MODEL_CACHE_DIR,
        # Needed by the webhook examples, whose receiver listens on this machine.
        INGEST_WEBHOOK_ALLOW_HTTP="true",
        INGEST_WEBHOOK_ALLOW_PRIVATE="true",
    )
    return env


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder that looks like the repository's root to the documents' commands."""
    for tool in ("curl", "jq", "make"):
        if shutil.which(tool) is None:
            missing_service(f"the `{tool}` command the documents use")
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "report.pdf").write_bytes(
        text_pdf(["Quarterly revenue grew by twelve percent.", "Payment terms are thirty days net."])
    )
    (tmp_path / "other.pdf").write_bytes(text_pdf(["Shipping schedule for the spring season."]))
    return tmp_path


@pytest.fixture
def service(checkout: Path) -> Iterator[int]:
    """`make run` in `checkout`: the demo tenant, then deploy/embedded.py on a free port."""
    port = free_port()
    env = service_environment(port)
    demo = spawn(["-m", "ingest_worker.cli", "demo"], env=env, cwd=checkout, log=checkout / "demo.log")
    assert demo.wait(90) == 0, (checkout / "demo.log").read_text()
    proc = spawn(["deploy/embedded.py"], env=env, cwd=checkout, log=checkout / "service.log")
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the service did not start:\n{(checkout / 'service.log').read_text()}")
                time.sleep(0.3)
        yield port
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Session:
    returncode: int
    stdout: str
    statuses: dict[int, list[int]]
    exit_codes: dict[int, list[int]]


def run_session(cmds: list[Command], checkout: Path, port: int) -> Session:
    """Run the commands in one bash in `checkout`; stop whatever the session left in the background."""
    (checkout / "session.sh").write_text(script(cmds, port=port, receiver_port=free_port()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("INGEST_")}
    with (checkout / "session.out").open("w") as out, (checkout / "session.err").open("w") as err:
        proc = subprocess.Popen(
            ["bash", "session.sh"], cwd=checkout, env=env, stdout=out, stderr=err, start_new_session=True
        )
        try:
            returncode = proc.wait(timeout=SESSION_TIMEOUT_S)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # the receiver the session started, if any
            proc.wait()
    statuses: dict[int, list[int]] = {}
    exit_codes: dict[int, list[int]] = {}
    for line in (checkout / "session.err").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in {"@@status", "@@rc"}:
            table = statuses if parts[0] == "@@status" else exit_codes
            table.setdefault(int(parts[1]), []).append(int(parts[2]))
    return Session(returncode, (checkout / "session.out").read_text(), statuses, exit_codes)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_curl_line_documents_its_status_and_runs_in_a_sh_block(document: str) -> None:
    # Given a document with curl examples
    path = ROOT / document
    # Then every curl command in it says which status it answers
    curls = [c for c in commands(path) if c.is_curl]
    assert curls, f"{document} has no curl examples in ```sh blocks"
    assert [c.lineno for c in curls if not c.statuses] == [], "end these curl lines with `# <status>`"
    # And no curl line sits in a block the test does not run
    hidden = [
        start + i
        for info, start, body in fenced_blocks(path.read_text())
        if info != "sh"
        for i, line in enumerate(body)
        if CURL.search(line)
    ]
    assert hidden == [], f"{document}: curl lines outside ```sh blocks"


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_curl_line_works_as_written(document: str, checkout: Path, service: int) -> None:
    # Given the document's receiver (when it has one) saved where its commands expect it
    path = ROOT / document
    receivers = [body for info, _, body in fenced_blocks(path.read_text()) if info == "python"]
    if receivers:
        (checkout / "receiver.py").write_text("\n".join(receivers[-1]) + "\n")
    cmds = commands(path)
    # When its ```sh blocks run in order against the service
    session = run_session(cmds, checkout, service)
    # Then the session succeeds, and every curl line ran, exited 0 and answered its documented status
    err = (checkout / "session.err").read_text()[-3000:]
    assert session.returncode == 0, f"the session failed:\n{err}"
    for cmd in (c for c in cmds if c.is_curl):
        where = f"{document}:{cmd.lineno}: {cmd.lines[0][:100]}"
        assert cmd.lineno in session.statuses, f"never ran: {where}"
        assert set(session.exit_codes[cmd.lineno]) == {0}, f"curl failed: {where}"
        assert set(session.statuses[cmd.lineno]) <= cmd.statuses, (
            f"{where} answered {session.statuses[cmd.lineno]}, documented {sorted(cmd.statuses)}"
        )
    # And the webhook receiver verified and printed the job's final event
    if receivers:
        assert "received job.completed completed" in session.stdout
