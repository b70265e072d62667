"""The layering rules of the design: who may import whom (walked statically over the source)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (package whose modules are checked, forbidden import prefixes, why)
RULES = [
    ("gateway", ("ingest_worker",), "the gateway enqueues by name through shared"),
    ("ingest_worker", ("gateway",), "the worker never imports the gateway"),
    ("shared", ("gateway", "ingest_worker", "flask", "werkzeug"), "shared is imported by both sides"),
    (
        "ingest_worker/stages",
        ("dramatiq", "flask", "sqlalchemy", "shared.settings", "shared.db", "shared.models", "os.environ"),
        "stages are pure functions over values",
    ),
]


def imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) == ("os", "environ")
        ):
            # `os.environ` is read only by shared.settings.
            names.add("os.environ")
    return names


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize(("package", "forbidden", "why"), RULES, ids=[r[0] for r in RULES])
def test_layering(package: str, forbidden: tuple[str, ...], why: str) -> None:
    violations = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules(package)
        for name in sorted(imported_names(path))
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]
    assert not violations, f"{why}:\n" + "\n".join(violations)


def test_only_settings_reads_the_environment() -> None:
    readers = [
        str(path.relative_to(ROOT))
        for package in ("gateway", "ingest_worker", "shared")
        for path in modules(package)
        if "os.environ" in imported_names(path) and path.name != "settings.py"
    ]
    assert readers == []


def test_the_rules_see_real_imports() -> None:
    # The walker itself works: the gateway does import shared, the worker dramatiq.
    assert any("shared.jobs" in imported_names(p) for p in modules("gateway"))
    assert any("dramatiq" in imported_names(p) for p in modules("ingest_worker"))
