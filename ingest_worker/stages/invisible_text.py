"""How much of a page's text is drawn invisibly (text render mode 3), as OCR tools draw their layer."""

from __future__ import annotations

from pypdf import PageObject, PdfReader
from pypdf.generic import ContentStream, DictionaryObject, IndirectObject

# Forms may draw forms: a nesting depth and an invocation budget stop a file built to loop or explode.
_MAX_FORM_DEPTH = 8
_MAX_FORM_INVOCATIONS = 256
_SHOW_OPERATORS = (b"Tj", b"TJ", b"'", b'"')
INVISIBLE_MODE = 3


def invisible_share(reader: PdfReader, page: PageObject) -> float:
    """The share (0 to 1) of the string bytes the page's text operators show that are drawn in
    render mode 3 (neither filled nor stroked), following forms within a budget; 0.0 without text."""
    contents = page.get_contents()
    if contents is None:
        return 0.0
    counter = _Counter(reader)
    counter.walk(contents, page.get("/Resources"), mode=0, depth=0)
    total = counter.visible + counter.invisible
    return counter.invisible / total if total else 0.0


class _Counter:
    def __init__(self, reader: PdfReader) -> None:
        self._reader = reader
        self._forms_left = _MAX_FORM_INVOCATIONS
        self.visible = 0
        self.invisible = 0

    def walk(self, contents: ContentStream, resources: object, *, mode: int, depth: int) -> None:
        xobjects = _dictionary(_dictionary(resources).get("/XObject"))
        # The render mode is part of the graphics state, which q and Q save and restore.
        stack: list[int] = []
        for operands, operator in contents.operations:
            if operator == b"q":
                stack.append(mode)
            elif operator == b"Q":
                mode = stack.pop() if stack else mode
            elif operator == b"Tr" and operands:
                try:
                    mode = int(operands[0])
                except (TypeError, ValueError):
                    continue
            elif operator in _SHOW_OPERATORS and operands:
                shown = _shown_bytes(operands[-1])
                if mode == INVISIBLE_MODE:
                    self.invisible += shown
                else:
                    self.visible += shown
            elif operator == b"Do" and operands and depth < _MAX_FORM_DEPTH and self._forms_left:
                xobject = _dictionary(xobjects.get(operands[0]))
                if xobject.get("/Subtype") == "/Form":
                    self._forms_left -= 1
                    form = ContentStream(xobject, self._reader)
                    self.walk(form, xobject.get("/Resources", resources), mode=mode, depth=depth + 1)


def _shown_bytes(operand: object) -> int:
    if isinstance(operand, list):
        return sum(len(item) for item in operand if isinstance(item, (bytes, str)))
    return len(operand) if isinstance(operand, (bytes, str)) else 0


def _dictionary(value: object) -> DictionaryObject:
    if isinstance(value, IndirectObject):
        value = value.get_object()
    return value if isinstance(value, DictionaryObject) else DictionaryObject()
