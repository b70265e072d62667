"""House rule: no Python module outside the migrations is over 300 lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 300


def _tracked_modules() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if "/migrations/" not in f"/{name}" and (ROOT / name).exists()]


def test_every_module_outside_migrations_is_at_most_300_lines() -> None:
    # Given every Python module of the project (git's view: tracked, or new and not ignored)
    modules = _tracked_modules()
    assert len(modules) > 100

    # When their lines are counted
    too_long = {
        str(path.relative_to(ROOT)): n
        for path in modules
        if (n := len(path.read_text("utf-8").splitlines())) > MAX_LINES
    }

    # Then none is over the limit
    assert too_long == {}, f"split these modules (lines over {MAX_LINES}): {too_long}"
