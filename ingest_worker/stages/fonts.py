"""The fonts a page names, as pypdf's text extraction models them: what a code decodes to, how far
a glyph advances, which code draws a space.

The modules that correct pypdf's reading of a page (`pen`, `spacing`) must see the codes exactly as
pypdf does, so they use pypdf's own font model (`pypdf.generic._font.Font`, pinned with pypdf) and its
decoding steps (`get_text_operands`, `get_display_str` in `pypdf._text_extraction`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pypdf import PageObject
from pypdf.generic import DictionaryObject
from pypdf.generic._font import Font

# The advance pypdf gives a font's space when the font declares none (extract_text's space_width).
_PYPDF_DEFAULT_SPACE = 200.0
# Form XObjects nested deeper than this are not searched for fonts.
_MAX_FORM_DEPTH = 8
# A control character that pypdf takes for left-to-right text (it is neither right-to-left nor in
# its neutral ranges) and that normalisation drops: drawn at a word gap of right-to-left text in a
# font without a space glyph, it ends pypdf's right-to-left run, so the space pypdf adds after it
# stays between the words instead of going to the end of the run (see `rtl`).
RUN_BREAK = "\x7f"


@dataclass(frozen=True)
class SpaceGlyph:
    """A code that a font decodes to a space, and its advance in thousandths of an em; with
    `run_break`, a code that decodes to RUN_BREAK instead, after which a space is still to be added."""

    code: bytes
    width: float
    run_break: bool = False


class PageFonts:
    """The fonts of one page by resource name, modelled on demand."""

    def __init__(self, page: PageObject) -> None:
        self._resources = _font_resources(page)
        self._fonts: dict[str, Font | None] = {}

    def get(self, name: str | None) -> Font | None:
        """The font named `name` (a Tf operand), or None when the page has no such font or pypdf
        cannot model it (pypdf then reads its text as it is)."""
        if name is None:
            return None
        if name not in self._fonts:
            resource = self._resources.get(name)
            try:
                self._fonts[name] = Font.from_font_resource(resource) if resource is not None else None
            except MemoryError:
                raise
            except Exception:
                # pypdf reads this font's text by its own means (and raises if it cannot): only the
                # corrections that need the font are left out.
                self._fonts[name] = None
        return self._fonts[name]


def space_glyph(font: Font) -> SpaceGlyph | None:
    """A code that `font` decodes to a space (its own space glyph when it has one), or None."""
    if isinstance(font.encoding, str):
        mapped = [raw for raw, char in font.character_map.items() if char == " "]
        candidates = mapped + ([] if " " in font.character_map else [" "])
        for raw in candidates:
            try:
                code = raw.encode(font.encoding)
            except (UnicodeError, LookupError):
                continue
            if code and decoded(font, code) == " ":
                return SpaceGlyph(code, advance(font, raw))
        return None
    for byte in range(256):
        raw = font.encoding.get(byte, chr(byte))
        if font.character_map.get(raw, raw) == " ":
            return SpaceGlyph(bytes([byte]), advance(font, chr(byte)))
    return None


def run_break(font: Font) -> SpaceGlyph | None:
    """A one-byte code that `font` decodes to RUN_BREAK (a code its encoding leaves unused), or None."""
    if isinstance(font.encoding, str):
        return None
    for byte in range(256):
        if decoded(font, bytes([byte])) == RUN_BREAK:
            return SpaceGlyph(bytes([byte]), advance(font, chr(byte)), run_break=True)
    return None


def decoded(font: Font, code: bytes) -> str:
    """`code` as pypdf's text extraction decodes it in `font` (get_text_operands, get_display_str)."""
    if isinstance(font.encoding, str):
        raw = raw_characters(font, code)
    else:
        raw = "".join(font.encoding.get(byte, chr(byte)) for byte in code)
    return "".join(font.character_map.get(char, char) for char in raw)


def raw_characters(font: Font, code: bytes) -> str:
    """The characters pypdf measures `code` by (get_text_operands)."""
    if isinstance(font.encoding, str):
        try:
            return code.decode(font.encoding, "surrogatepass")
        except UnicodeDecodeError:
            return code.decode(font.encoding, "replace")
    return "".join(chr(byte) for byte in code)


def advance(font: Font, raw: str) -> float:
    """The advance pypdf counts for character `raw` (get_text_operands), in thousandths of an em."""
    if raw == font.space_char:
        declared = font.character_widths.get(font.space_char, 0)
        return float(font.space_width) if declared else _PYPDF_DEFAULT_SPACE
    return float(font.get_text_width(raw))


def _font_resources(page: PageObject) -> dict[str, DictionaryObject]:
    """The fonts a page's content may name, its form XObjects' included; a name given to two
    different fonts is left out, since which one a Tf means depends on the stream."""
    found: dict[str, DictionaryObject] = {}
    clashes: set[str] = set()
    seen: set[int] = set()

    def gather(resources: Any, depth: int) -> None:
        resources = resources.get_object() if resources is not None else None
        if not isinstance(resources, DictionaryObject) or id(resources) in seen or depth > _MAX_FORM_DEPTH:
            return
        seen.add(id(resources))
        fonts = resources.get("/Font")
        fonts = fonts.get_object() if fonts is not None else None
        if isinstance(fonts, DictionaryObject):
            for name, value in fonts.items():
                font = value.get_object()
                if not isinstance(font, DictionaryObject):
                    continue
                if name in found and found[name] is not font:
                    clashes.add(name)
                found.setdefault(name, font)
        forms = resources.get("/XObject")
        forms = forms.get_object() if forms is not None else None
        if isinstance(forms, DictionaryObject):
            for value in forms.values():
                form = value.get_object()
                if isinstance(form, DictionaryObject) and form.get("/Subtype") == "/Form":
                    gather(form.get("/Resources"), depth + 1)

    gather(page.get("/Resources"), 0)
    return {name: font for name, font in found.items() if name not in clashes}
