"""Every test that needs a real server carries the marker naming it, so a subset can be chosen by marker
(`make test PYTEST_ARGS="-m 'not browser'"`); the markers are declared, and `--strict-markers` is on."""

from __future__ import annotations

import tomllib

import pytest

from tests.support.markers import SERVER_FIXTURES, SERVER_MARKERS, server_markers
from tests.test_import_rules import ROOT


def test_a_server_fixture_or_a_parameter_naming_a_server_gives_its_marker() -> None:
    # Given the fixtures a test requests and its parameters, then the markers name the servers it needs
    assert server_markers(["tmp_path", "pg_server_url", "redis_url"], []) == {"postgres", "redis"}
    assert server_markers(["any_db"], ["postgres"]) == {"postgres"}
    assert server_markers(["any_db"], ["sqlite"]) == set()
    assert server_markers(["console"], [3]) == {"browser"}


def test_every_collected_test_using_a_server_carries_its_marker(request: pytest.FixtureRequest) -> None:
    # Given every test of this run, then each one that requests a server's fixture carries its marker
    lacking = [
        f"{item.nodeid}: {marker}"
        for item in request.session.items
        for fixture, marker in SERVER_FIXTURES.items()
        if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None
    ]
    assert lacking == []


def test_the_server_markers_are_declared_and_strict() -> None:
    # Given the pytest configuration, then every server marker is declared and undeclared ones are errors
    options = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]
    declared = {line.split(":")[0] for line in options["markers"]}
    assert SERVER_MARKERS | {"ocr", "slow"} <= declared
    assert "--strict-markers" in options["addopts"]
