"""The documents against the code: the generated configuration reference is current, and no document
names a setting that does not exist."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from shared import settings_doc
from shared.settings import PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
SETTING_NAMES = {PREFIX + f.name.upper() for f in dataclasses.fields(Settings)}
# A setting's name, or a family of them when followed by `*` (`INGEST_S3_*`).
SETTING_MENTION = re.compile(r"\bINGEST_[A-Z0-9][A-Z0-9_]*(\*?)")


def markdown_documents() -> list[Path]:
    """The README and everything under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def documents() -> list[Path]:
    """Every file a user reads for settings: the README, docs/, and the deployment examples."""
    files = markdown_documents()
    files += [ROOT / "deploy" / ".env.example", ROOT / "deploy" / "docker-compose.yml"]
    files += sorted((ROOT / "deploy" / "k8s").glob("*.yaml"))
    return files


def unknown_settings(text: str) -> set[str]:
    """The `INGEST_*` names in `text` that no field of `Settings` is read from."""
    unknown = set()
    for match in SETTING_MENTION.finditer(text):
        name, family = match.group(0).rstrip("*"), match.group(1)
        known = any(n.startswith(name) for n in SETTING_NAMES) if family else name in SETTING_NAMES
        if not known:
            unknown.add(match.group(0))
    return unknown


def test_configuration_reference_is_current() -> None:
    # Given the Settings dataclass and the comments above its fields
    expected = settings_doc.render()
    # When docs/configuration.md is read
    current = settings_doc.OUTPUT.read_text() if settings_doc.OUTPUT.exists() else ""
    # Then it is what the generator writes today
    assert current == expected, f"docs/configuration.md is out of date: run `{settings_doc.COMMAND}`"


def test_every_setting_is_documented_with_default_unit_and_comment() -> None:
    # Given every field of Settings
    docs = {d.name: d for d in settings_doc.field_docs()}
    fields = dataclasses.fields(Settings)
    # Then each has its own comment in shared/settings.py, and a row in the reference
    assert set(docs) == {f.name for f in fields}
    assert [name for name, d in docs.items() if not d.comment] == [], "add a comment above these fields"
    text = settings_doc.OUTPUT.read_text()
    for f in fields:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{PREFIX}{f.name.upper()}` |"))
        assert docs[f.name].default in row
    # And units come from the names
    assert docs["lease_s"].unit == "seconds" and docs["redis_poll_max_ms"].unit == "milliseconds"
    assert docs["max_upload_mb"].unit == "MiB" and docs["ocr_range_pages"].unit == "pages"
    assert docs["port"].unit == ""


def test_comments_are_read_from_the_source_not_duplicated() -> None:
    # Given a source where a heading stands apart and a comment sits right above its field
    source = (
        "class Settings:\n"
        "    # Heading. More words.\n"
        "\n"
        "    # The first line\n"
        "    # and the second.\n"
        "    data_dir: str = 'var'\n"
        "    database_url: str = ''\n"
    )
    # When its fields are read (those two lead Settings as well)
    docs = settings_doc.field_docs(source)
    # Then the comment directly above is the field's, the standalone block its section
    assert docs[0].comment == "The first line and the second."
    assert docs[0].section == "Heading. More words."
    assert docs[1].comment == "" and docs[1].section == "Heading. More words."


def test_check_mode_names_the_command_that_fixes_the_file(tmp_path: Path, capsys) -> None:
    # Given a stale copy of the reference
    stale = tmp_path / "configuration.md"
    stale.write_text("# Configuration\n")
    # When the generator checks it
    status = settings_doc.main(["--check", "--out", str(stale)])
    # Then it fails and says how to fix it
    assert status == 1
    assert "make docs" in capsys.readouterr().err


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_name_only_existing_settings(path: Path) -> None:
    # Given a document a user configures the service from
    text = path.read_text()
    # Then every INGEST_* name in it is a field of Settings
    assert unknown_settings(text) == set(), f"{path.relative_to(ROOT)} names settings that do not exist"


def test_the_name_check_catches_a_wrong_name() -> None:
    # Given names that are right, a family, and one that nothing reads
    text = "INGEST_GATEWAY_THREADS, INGEST_S3_*, INGEST_<FIELD>, INGEST_GUNICORN_THREADS"
    # Then only the last is reported
    assert unknown_settings(text) == {"INGEST_GUNICORN_THREADS"}


README_MAX_LINES = 250
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_readme_stays_a_door() -> None:
    # Given the README, which sends readers on to docs/
    lines = (ROOT / "README.md").read_text().splitlines()
    # Then it stays short
    assert len(lines) <= README_MAX_LINES, "move detail into docs/ and link to it"


@pytest.mark.parametrize("path", markdown_documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_that_exist(path: Path) -> None:
    # Given the links of a document
    targets = [m.group(1) for m in LINK.finditer(path.read_text()) if "://" not in m.group(1)]
    # Then each relative one names a file of the repository
    assert [t for t in targets if not (path.parent / t).exists()] == []


def test_the_walk_through_names_at_most_35_modules_that_exist() -> None:
    # Given the walk-through of one upload in docs/architecture.md
    text = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    start = text.index("The walk-through follows one upload")
    end = text.index("That is ", start)
    stated = int(re.match(r"That is (\d+) modules", text[end:]).group(1))  # type: ignore[union-attr]

    # When the module paths it names are counted, each once
    named = list(
        dict.fromkeys(re.findall(r"`((?:gateway|ingest_worker|shared)/[\w/]+\.py)`", text[start:end]))
    )

    # Then there are at most 35, the text states their number, and each one exists
    assert len(named) <= 35
    assert stated == len(named)
    assert [m for m in named if not (ROOT / m).is_file()] == []
