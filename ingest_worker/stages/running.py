"""Running heads and feet: page furniture left out of the page texts before they are chunked.

A running head or foot says nothing about the passage it sits on, and left in it would be a chunk on
every page or pass for the heading of the text below it. Two kinds are recognised among the first and
last EDGE_LINES lines of each page:

- a line that recurs at the same edge (head or foot) of other pages once its digits are masked
  ("Page 7", "Summary, December 1998 Page 7"): on RUNNING_MIN_PAGES pages when it holds a digit, on
  RUNNING_MIN_PAGES_PLAIN when it holds none; a line measured as a heading on its page is furniture
  only when the very same line stands at that edge of most pages (a letterhead), not when it recurs
  with other digits ("Chapter 1", "Chapter 2") or on a few pages (a slide title on a slide's steps);
- a line holding only a page number ("7", "- 7 -", "Page 7", "7 of 12", "vii");
- a line naming a section with its number ("Options 3.3") that is not that section's heading.

Lines of one shape at the same edge of a page are rows of a table or a list, never furniture.

The steps of a slide shown in several (overlays) repeat whole lines on purpose: on such pages only the
page number goes.
"""

from __future__ import annotations

import re
from collections import Counter

# How many lines at the top and at the foot of a page may be furniture.
EDGE_LINES = 3
# Rounds of peeling (see drop_running_lines).
PEEL_ROUNDS = 3
# A line with digits (a page number, a date) recurring at the edge of this many pages is furniture ...
RUNNING_MIN_PAGES = 2
# ... and one without digits on this many.
RUNNING_MIN_PAGES_PLAIN = 3
_DIGITS = re.compile(r"\d+")
# A section number at the start or the end of a line ("3.3 Options", "Options 3.3").
_SECTION_NUMBER = re.compile(r"(^\s*\d+(\.\d+)*\.?\s+|\s+\d+(\.\d+)*\s*$)")
_PAGE_NUMBER = re.compile(
    r"(?i)^[\s\-\u2013\u2014|]*((page|p\.|seite|pagina|página)\s*)?"
    r"(\d{1,4}|(?=[ivxlc])c{0,3}(xc|xl|l?x{0,3})(ix|iv|v?i{0,3}))"
    r"(\s*(/|of|von|de|sur)\s*\d{1,4})?[\s\-\u2013\u2014|]*$"
)


def drop_running_lines(
    texts: list[str], headings: list[set[str]] | None = None, wide: list[bool] | None = None
) -> list[str]:
    """The page texts without their running heads and feet (see the module docstring).

    `headings` may name, per page, lines that are known not to be furniture (the headings
    measured on that page): they stay even when they recur. Blank lines a removed line
    leaves at the edge of a page go with it. Furniture of several lines (a letter's foot) is peeled
    off in up to PEEL_ROUNDS rounds, each looking at the new edges. `wide` says which pages are wider
    than tall: only those may be steps of a slide (see `_slide_steps`).
    """
    keep_plain = headings or [set() for _ in texts]
    steps = _slide_steps(texts, wide or [False] * len(texts))
    original = texts
    for _ in range(PEEL_ROUNDS):
        peeled = _drop_once(texts, keep_plain, steps)
        if peeled == texts:
            break
        texts = peeled
    # Furniture is a page's margin, never its body: a long page that would keep under a quarter of its
    # lines (pages of one template, a text repeated with other numbers) loses only its page numbers.
    return [
        _drop_once([before], [set()], [True])[0] if _mostly_peeled(before, text) else text
        for text, before in zip(texts, original, strict=True)
    ]


def _mostly_peeled(before: str, after: str) -> bool:
    lines = _line_count(before)
    return lines > 4 * EDGE_LINES and 4 * _line_count(after) < lines


def _line_count(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.strip())


def _drop_once(texts: list[str], keep_plain: list[set[str]], steps: list[bool]) -> list[str]:
    # Section titles of the headings, numbers left out: a head naming a section with its number
    # ("Options 3.3"), not itself that heading, is furniture even when that exact line occurs once.
    titles = {t for headings in keep_plain for t in map(_title, headings) if t}
    edges = [_edge_keys(text) for text in texts]
    # A head recurs at the top of pages and a foot at the foot: (edge, key) pairs are counted.
    pages_with = Counter(key for keys in edges for key in set(keys.values()))
    # The same line exactly, at the same edge of most pages, is a letterhead even in a heading face.
    exact = Counter(
        (edge, text.split("\n")[i].strip())
        for text, keys in zip(texts, edges, strict=True)
        for i, (edge, _) in keys.items()
    )
    most = max(RUNNING_MIN_PAGES_PLAIN, (len(texts) + 1) // 2)
    out = []
    for text, keys, kept, step in zip(texts, edges, keep_plain, steps, strict=True):
        lines = text.split("\n")
        drop = set()
        # A head or foot stands once at its edge of a page: lines of one shape there are rows of a
        # table or a list ("Q2 22 14", "Q3 33 21"), however many pages end with them.
        on_page = Counter(keys.values())
        for index, key in keys.items():
            if on_page[key] > 1:
                continue
            line = lines[index].strip()
            has_digit = _DIGITS.search(line) is not None
            needed = RUNNING_MIN_PAGES if has_digit else RUNNING_MIN_PAGES_PLAIN
            repeated = pages_with[key] >= needed and (line not in kept or exact[(key[0], line)] >= most)
            numbered_head = _SECTION_NUMBER.search(line) is not None and line not in kept
            furniture = not step and (repeated or (numbered_head and _title(line) in titles))
            if _PAGE_NUMBER.match(line) or furniture:
                drop.add(index)
        if drop:
            kept_lines = [line for index, line in enumerate(lines) if index not in drop]
            text = "\n".join(kept_lines).strip("\n")
            text = re.sub(r"\n{3,}", "\n\n", text) + ("\n" if text else "")
        out.append(text)
    return out


def _slide_steps(texts: list[str], wide: list[bool]) -> list[bool]:
    """Whether each page is a step of a slide shown in several (overlays): a wide page most of whose
    lines are on the page before or after it. Its lines recur because the slide does, not because they are
    furniture; only page numbers are left out of it."""
    sets = [{line.strip() for line in text.split("\n") if line.strip()} for text in texts]
    steps = []
    for i, lines in enumerate(sets):
        neighbours = [sets[j] for j in (i - 1, i + 1) if 0 <= j < len(sets)]
        shared = max((len(lines & other) for other in neighbours), default=0)
        steps.append(wide[i] and shared * 2 >= len(lines) > 0)
    return steps


def _title(line: str) -> str:
    """A heading's or head's words without its section or page numbers, case-folded."""
    return " ".join(_SECTION_NUMBER.sub(" ", line).casefold().split())


def _edge_keys(text: str) -> dict[int, tuple[str, str]]:
    """Index → (edge, masked line) of the first and last EDGE_LINES non-blank lines of a page."""
    lines = text.split("\n")
    indexes = [i for i, line in enumerate(lines) if line.strip()]
    keys = {i: ("foot", _masked(lines[i])) for i in indexes[-EDGE_LINES:]}
    keys.update({i: ("head", _masked(lines[i])) for i in indexes[:EDGE_LINES]})
    return keys


def _masked(line: str) -> str:
    """The line with each run of digits as "#" and its white space folded."""
    return " ".join(_DIGITS.sub("#", line).split())
