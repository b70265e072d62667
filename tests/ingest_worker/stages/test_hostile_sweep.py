"""A sweep of hostile and damaged files through the stages' isolated children: every file completes or
fails with a specific permanent code, none with an internal error, and the children keep serving.
The files: every generator of tests/support/hostile_pdfs/, every standard encryption with and without a
user password, every broken encryption dictionary and filter parameter, and seeded truncations and bit
flips of real documents (tests/fixtures/real/, and a few made here with reportlab, fpdf2 and pypdf).
"""

from __future__ import annotations

import collections
import datetime
import inspect
import io
import random
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path

import pytest
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

from ingest_worker.isolation import run_isolated
from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.ocr import ocr_pages
from ingest_worker.stages.validate import validate_pdf
from shared.errors import IngestError, PermanentError
from shared.settings import Settings
from tests.support import hostile_pdfs, pdfs

pytestmark = pytest.mark.ocr

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "real"
SETTINGS = Settings()
# Codes that name no fault: a file must never end with them.
UNSPECIFIC = {"internal_error", "permanent_error", "transient_error"}
# OCR reads at most this many pages of a file, at a low resolution: rendering is what hostile files
# break, and tesseract's time on a page tells nothing more.
OCR_PAGES = 2
OCR_DPI = 100
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
TEXT = (
    "Retrieval starts with reading. A document that cannot be read whole should say why, in a code a "
    "client can act on, and the worker that read it should be ready for the next one. "
)
OUTCOMES: collections.Counter[str] = collections.Counter()


# --- Real-world shapes ------------------------------------------------------------------------------


@cache
def report_pdf() -> bytes:
    """A reportlab report: headings, paragraphs and a table over three compressed pages."""
    buffer = io.BytesIO()
    styles = getSampleStyleSheet()
    story: list[object] = []
    for number in range(1, 4):
        story.append(Paragraph(f"Section {number}", styles["Heading1"]))
        story += [Paragraph(TEXT * 4, styles["BodyText"]) for _ in range(3)]
        table = Table(
            [["Quarter", "Revenue", "Costs"], *[[f"Q{q}", f"{q * 11}", f"{q * 7}"] for q in range(1, 5)]]
        )
        table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.grey)]))
        story += [table, PageBreak()]
    SimpleDocTemplate(buffer, pagesize=A4, invariant=1, title="Report").build(story)  # type: ignore[arg-type]
    return buffer.getvalue()


@cache
def unicode_pdf() -> bytes:
    """An fpdf2 document in an embedded TrueType subset (CID font, ToUnicode map), with an outline,
    links and an image with transparency: the structures a cut or a flipped bit damages in place."""
    pdf = FPDF()
    pdf.set_compression(True)
    pdf.set_creation_date(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    try:
        pdf.add_font("DejaVu", fname=FONT)
        family = "DejaVu"
    except (FileNotFoundError, RuntimeError):
        family = "Helvetica"
    for number in range(1, 3):
        pdf.add_page()
        pdf.start_section(f"Chapter {number}")
        pdf.set_font(family, size=11)
        sample = "Ünïcödé Ελληνικά Кириллица " if family == "DejaVu" else ""
        pdf.multi_cell(0, 6, sample + TEXT * 6)
        pdf.cell(0, 6, "A link", link="https://example.org/", new_x="LMARGIN", new_y="NEXT")
        pdf.image(_logo(), w=30)
    return bytes(pdf.output())


@cache
def aes_pdf() -> bytes:
    """The report, encrypted with AES-256 and an owner password only: every stream and string encrypted."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(report_pdf())))
    writer.encrypt("", owner_password="owner-secret", algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


@cache
def scan_pdf() -> bytes:
    """A page of text as an image only, as a scanner writes it: the file OCR renders."""
    return pdfs.scanned_pdf(["A scanned page. " * 20], dpi=100)


def _logo() -> io.BytesIO:
    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (64, 32), (255, 255, 255, 0))
    ImageDraw.Draw(image).ellipse((4, 4, 60, 28), fill=(30, 90, 160, 255))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


def _fixture(path: Path) -> Callable[[], bytes]:
    return cache(path.read_bytes)


BASES: dict[str, Callable[[], bytes]] = {
    "report": report_pdf,
    "unicode": unicode_pdf,
    "aes-256": aes_pdf,
    "scan": scan_pdf,
    **{f"real/{path.name}": _fixture(path) for path in sorted(FIXTURES.glob("*.pdf"))},
}


# --- Damage -----------------------------------------------------------------------------------------


def truncated(make: Callable[[], bytes], seed: str, fraction: float | None) -> bytes:
    """The file cut at `fraction` of its length, or at a point chosen by `seed` when None."""
    data = make()
    cut = random.Random(seed).uniform(0.01, 0.99) if fraction is None else fraction
    return data[: int(len(data) * cut)]


def bit_flipped(make: Callable[[], bytes], seed: str, flips: int, tail_bytes: int | None = None) -> bytes:
    """The file with `flips` bits flipped at places chosen by `seed`, all in its last `tail_bytes` bytes
    (where the cross-reference table and trailer live) when given."""
    data = bytearray(make())
    rng = random.Random(seed)
    start = 0 if tail_bytes is None else max(0, len(data) - tail_bytes)
    for _ in range(flips):
        data[rng.randrange(start, len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def damaged(name: str, make: Callable[[], bytes]) -> dict[str, Callable[[], bytes]]:
    """Named damaged copies of a document; the generated ones also whole and cut at fixed points."""
    variants: dict[str, Callable[[], bytes]] = {
        f"{name} cut at random": partial(truncated, make, f"cut {name}", None),
        f"{name} cut at another random point": partial(truncated, make, f"another cut {name}", None),
        f"{name} 1 bit flipped": partial(bit_flipped, make, f"1 {name}", 1),
        f"{name} 10 bits flipped": partial(bit_flipped, make, f"10 {name}", 10),
        f"{name} 100 bits flipped": partial(bit_flipped, make, f"100 {name}", 100),
        f"{name} 20 bits flipped in the tail": partial(bit_flipped, make, f"tail {name}", 20, 1024),
    }
    if not name.startswith("real/"):
        variants[f"{name} whole"] = make
        for fraction in (0.1, 0.5, 0.9, 0.999):
            variants[f"{name} cut at {fraction:.1%}"] = partial(truncated, make, "", fraction)
    return variants


def generators() -> dict[str, Callable[[], bytes]]:
    """Every generator of tests/support/hostile_pdfs/ that needs no argument, and every standard
    encryption."""
    found: dict[str, Callable[[], bytes]] = {
        name: function
        for name, function in inspect.getmembers(hostile_pdfs, inspect.isfunction)
        if function.__module__.startswith(f"{hostile_pdfs.__name__}.")
        and not name.startswith("_")
        and all(p.default is not p.empty for p in inspect.signature(function).parameters.values())
    }
    for algorithm in hostile_pdfs.ENCRYPTION_ALGORITHMS:
        found[f"{algorithm} open to all"] = partial(hostile_pdfs.encrypted_with, algorithm)
        found[f"{algorithm} with a user password"] = partial(
            hostile_pdfs.encrypted_with, algorithm, user_password="hunter2"
        )
    found.update({f"encryption: {name}": make for name, make in hostile_pdfs.BROKEN_ENCRYPTION.items()})
    found.update({f"filter: {name}": make for name, make in hostile_pdfs.BROKEN_FILTERS.items()})
    found["truncated_pdf"] = pdfs.truncated_pdf
    found["flate_bomb_pdf"] = pdfs.flate_bomb_pdf
    return found


CASES: dict[str, Callable[[], bytes]] = {
    **generators(),
    **{label: make for name, base in BASES.items() for label, make in damaged(name, base).items()},
}


# --- The sweep --------------------------------------------------------------------------------------


def through_the_stages(path: str) -> str:
    """Run the file through validate, extract and OCR as the workers do, each call in an isolated child;
    'completed', or the code of the error that stopped it."""
    limits = {"timeout_s": SETTINGS.parse_timeout_s, "memory_mb": SETTINGS.parse_memory_mb}
    try:
        run_isolated(validate_pdf, path, max_pages=SETTINGS.max_pages, **limits)
        pages = run_isolated(extract_pages, path, min_chars=SETTINGS.ocr_min_chars_per_page, **limits)
        wanted = [page.number for page in pages if page.needs_ocr][:OCR_PAGES]
        if wanted:
            read = partial(
                ocr_pages,
                path,
                wanted,
                dpi=OCR_DPI,
                languages=SETTINGS.ocr_languages,
                timeout_s=SETTINGS.ocr_timeout_s,
            )
            run_isolated(
                read,
                timeout_s=SETTINGS.parse_timeout_s + SETTINGS.ocr_timeout_s * len(wanted),
                memory_mb=SETTINGS.parse_memory_mb,
            )
    except IngestError as exc:
        assert isinstance(exc, PermanentError), f"{exc.code} is not permanent: the job would be retried"
        return exc.code
    return "completed"


def test_the_sweep_covers_every_kind_of_damage() -> None:
    # Given the cases of the sweep
    # Then every generator, each encryption both ways, and each damage of each document is among them
    kinds = {"truncated_pdf", "jbig2_content_pdf", "abbreviated_a85_pdf", "object_stream_loop_pdf"}
    assert kinds | {"many_pages_pdf", "shifted_xref_pdf", "certificate_encrypted_pdf"} <= generators().keys()
    assert all(f"{name} 1 bit flipped" in CASES for name in BASES)
    assert {f"{a} with a user password" for a in hostile_pdfs.ENCRYPTION_ALGORITHMS} <= CASES.keys()
    assert {f"encryption: {name}" for name in hostile_pdfs.BROKEN_ENCRYPTION} <= CASES.keys()
    # And damage is deterministic: the same seed gives the same bytes
    assert bit_flipped(report_pdf, "seed", 10) == bit_flipped(report_pdf, "seed", 10) != report_pdf()


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_or_damaged_file_completes_or_fails_with_a_specific_code(tmp_path: Path, name: str) -> None:
    # Given a hostile or damaged file
    path = pdfs.write_pdf(tmp_path, CASES[name]())

    # When it goes through the stages as the worker runs them
    outcome = through_the_stages(path)
    OUTCOMES[outcome] += 1

    # Then it completes or fails permanently with a code that names the fault
    assert outcome not in UNSPECIFIC, f"{name} ended with {outcome}"


@pytest.mark.parametrize("algorithm", hostile_pdfs.ENCRYPTION_ALGORITHMS)
def test_encryption_opens_without_a_password_and_stops_at_one(tmp_path: Path, algorithm: str) -> None:
    # Given the same text encrypted with the algorithm, once open to all and once behind a user password
    open_to_all = pdfs.write_pdf(tmp_path, hostile_pdfs.encrypted_with(algorithm, text=TEXT), "open.pdf")
    locked = pdfs.write_pdf(
        tmp_path, hostile_pdfs.encrypted_with(algorithm, user_password="pw"), "locked.pdf"
    )

    # When / Then the first is read whole and the second is refused as encrypted
    assert through_the_stages(open_to_all) == "completed"
    pages = run_isolated(extract_pages, open_to_all, min_chars=20, timeout_s=60, memory_mb=1024)
    assert " ".join(pages[0].text.split()) == TEXT.strip()
    assert through_the_stages(locked) == "encrypted"


REFUSED_KEYS = ["RC4-40 with /Length 7", "RC4-40 with /Length 0", "RC4-128 with /Length 7"]
REFUSED_KEYS += ["RC4-128 with /Length -40", "AES-256 with a truncated /UE"]
REFUSED_KEYS += ["AES-256 with a truncated /Perms"]


@pytest.mark.parametrize("name", REFUSED_KEYS)
def test_a_key_the_cipher_refuses_fails_as_invalid_encryption(tmp_path: Path, name: str) -> None:
    # Given a file whose encryption dictionary gives the cipher a key (or an encrypted key) of a length
    # it refuses: the error comes from the crypto provider, not from pypdf's own frames
    path = pdfs.write_pdf(tmp_path, hostile_pdfs.BROKEN_ENCRYPTION[name]())

    # When it goes through the stages / Then it fails permanently as invalid encryption
    assert through_the_stages(path) == "invalid_encryption"


def test_the_children_still_serve_a_good_file_after_the_sweep(tmp_path: Path) -> None:
    # Given the children that ran the sweep (killed, crashed or retired ones replaced)
    print("sweep outcomes:", dict(sorted(OUTCOMES.items())))

    # When a good document goes through the stages
    path = pdfs.write_pdf(tmp_path, report_pdf())

    # Then it completes, with its text
    assert through_the_stages(path) == "completed"
    pages = run_isolated(extract_pages, path, min_chars=20, timeout_s=60, memory_mb=1024)
    assert len(pages) == 3
    assert all("Quarter\tRevenue\tCosts" in page.text for page in pages)
