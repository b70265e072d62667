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


def run_time_imports(path: Path, name: str) -> set[str]:
    """The project modules `path` (module `name`) imports when it runs, at its top or inside a
    function; imports only for type checkers are left out."""
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name_of for imported in found if (name_of := _module_of(imported)) and name_of != name}


def _module_of(imported: str) -> str | None:
    while imported and imported not in PROJECT_MODULES:
        imported = imported.rpartition(".")[0]
    return imported or None


PROJECT_MODULES = {
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
    for package in ("gateway", "ingest_worker", "shared", "deploy")
    for path in modules(package)
    if "migrations" not in path.parts
}


def test_no_module_imports_itself_round_a_cycle() -> None:
    graph = {name: run_time_imports(path, name) for name, path in PROJECT_MODULES.items()}
    cycles = []
    for start in graph:
        # A path from one of `start`'s imports back to `start` is a cycle through it.
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    cycles.append(" -> ".join([*trail, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    assert not cycles, "\n".join(sorted(set(cycles)))
    assert "shared.storage.local" in graph["shared.storage"]  # the walk sees real imports
