"""A short description of the machine a benchmark ran on: cores, memory, CPU model, Python and libraries."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

LIBRARIES = (
    "pypdf",
    "pypdfium2",
    "pytesseract",
    "pillow",
    "onnxruntime",
    "tokenizers",
    "numpy",
    "qdrant-client",
    "dramatiq",
    "flask",
    "waitress",
    "gunicorn",
    "sqlalchemy",
)


def describe_machine() -> list[tuple[str, str]]:
    """(what, value) pairs describing this machine and the software the benchmarks exercise."""
    return [
        ("CPUs (nproc)", str(len(os.sched_getaffinity(0)))),
        ("CPU model", _cpu_model()),
        ("memory", f"{_memory_gib():.1f} GiB"),
        ("kernel", f"{platform.system()} {platform.release()}"),
        ("Python", platform.python_version()),
        ("tesseract", _tesseract_version()),
        ("OMP_THREAD_LIMIT", os.environ.get("OMP_THREAD_LIMIT", "unset")),
        ("libraries", ", ".join(f"{name} {_version(name)}" for name in LIBRARIES)),
    ]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    return 0.0


def _tesseract_version() -> str:
    try:
        out = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "not installed"
    return out.splitlines()[0].removeprefix("tesseract ").strip()


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"
