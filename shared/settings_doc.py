"""docs/configuration.md, generated from the `Settings` dataclass and the comments above its fields.

    python -m shared.settings_doc            # rewrite docs/configuration.md (`make docs`)
    python -m shared.settings_doc --check    # exit 1 when the file is out of date

A field's comment is the block of `#` lines directly above it; a block followed by a blank line is the
heading of the fields after it. Units come from the name's suffix (`_s`, `_mb`, ...).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from shared.settings import Settings
from shared.settings_env import PREFIX

SOURCE = Path(__file__).with_name("settings.py")
OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
COMMAND = "make docs"

# Name suffix -> unit, longest first where one suffix ends another.
UNITS = {
    "_ms": "milliseconds",
    "_s": "seconds",
    "_h": "hours",
    "_mb": "MiB",
    "_pages": "pages",
    "_tokens": "tokens",
    "_chance": "per million",
}


@dataclass(frozen=True)
class FieldDoc:
    """One setting as documented: its variable, default, unit, comment and section."""

    name: str
    variable: str
    default: str
    unit: str
    comment: str
    section: str


def unit_of(name: str) -> str:
    """The unit a field's name carries in its suffix, or an empty string."""
    for suffix, unit in UNITS.items():
        if name.endswith(suffix):
            return unit
    return ""


def _comments_by_line(source: str) -> dict[int, str]:
    """Line number -> text of a line that holds only a comment."""
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and not token.line[: token.start[1]].strip():
            comments[token.start[0]] = token.string.lstrip("#").strip()
    return comments


def _field_lines(source: str) -> dict[str, int]:
    """Field name -> the line of its annotated assignment in the `Settings` class body."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == Settings.__name__:
            return {
                item.target.id: item.lineno
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    raise LookupError(f"no class {Settings.__name__} in {SOURCE}")


def field_docs(source: str | None = None) -> list[FieldDoc]:
    """Every field of `Settings` in source order, with the comment written above it."""
    text = SOURCE.read_text() if source is None else source
    lines = text.splitlines()
    comments = _comments_by_line(text)
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    docs: list[FieldDoc] = []
    section = ""
    previous_field = 0
    for name, line in _field_lines(text).items():
        # Headings: comment blocks followed by a blank line, between the previous field and this one.
        block: list[str] = []
        for number in range(previous_field + 1, line):
            if number in comments:
                block.append(comments[number])
            elif not lines[number - 1].strip():
                if block:
                    section = " ".join(block)
                block = []
            else:
                block = []
        previous_field = line
        docs.append(
            FieldDoc(
                name=name,
                variable=PREFIX + name.upper(),
                default=_default(fields[name]),
                unit=unit_of(name),
                comment=" ".join(block),
                section=section,
            )
        )
    return docs


def _default(f: dataclasses.Field[object]) -> str:
    value = f.default
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value == "":
        return "(empty)"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(docs: list[FieldDoc] | None = None) -> str:
    """The whole of docs/configuration.md."""
    rows = field_docs() if docs is None else docs
    out = [
        "# Configuration",
        "",
        f"<!-- Generated from shared/settings.py by `{COMMAND}`; edit the comments there, not this file. -->",
        "",
        "Every process builds one frozen `Settings` object (`shared/settings.py`) from environment",
        f"variables at start-up: each field is read from `{PREFIX}<FIELD NAME IN UPPER CASE>`. Booleans take",
        "`true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`). The defaults are the embedded topology's",
        f"(`make run`); {len(rows)} settings in all.",
    ]
    section = None
    for row in rows:
        if row.section != section:
            section = row.section
            title, _, rest = section.partition(". ")
            out += ["", f"## {title.rstrip('.') or 'General'}", ""]
            out += [rest, ""] if rest else []
            out += ["| variable | default | unit | meaning |", "| --- | --- | --- | --- |"]
        out.append(f"| `{row.variable}` | {_cell(row.default)} | {row.unit} | {_cell(row.comment)} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is out of date")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(field_docs())} settings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
