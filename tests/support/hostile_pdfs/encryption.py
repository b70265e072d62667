"""Encrypted PDFs: every standard security handler, and handlers no reader supports."""

from __future__ import annotations

import io

from tests.support import pdfs
from tests.support.hostile_pdfs.objects import CATALOG, leaf_page
from tests.support.pdfs import raw_pdf


def password_pdf() -> bytes:
    """A text PDF that opens only with a user password."""
    return pdfs.encrypted_pdf("Nothing to see without the password.", password="hunter2")


def owner_only_pdf() -> bytes:
    """A text PDF encrypted with an owner password only: anyone may open and read it."""
    return pdfs.encrypted_pdf("Encrypted, yet open to every reader.", password="")


# --- Encryption -------------------------------------------------------------------------------------

# What pypdf's writer calls each standard security handler: RC4 (revisions 2 and 3), AES-128 (revision 4),
# AES-256 (revision 5, an Acrobat 9 draft, and revision 6, PDF 2.0).
ENCRYPTION_ALGORITHMS = ("RC4-40", "RC4-128", "AES-128", "AES-256-R5", "AES-256")


def encrypted_with(algorithm: str, *, user_password: str = "", text: str = "Encrypted text.") -> bytes:
    """A one-page text PDF encrypted with `algorithm` (one of ENCRYPTION_ALGORITHMS) and an owner password;
    an empty `user_password` lets anyone open it."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdfs.text_pdf([text]))))
    writer.encrypt(user_password, owner_password="owner-secret", algorithm=algorithm)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def certificate_encrypted_pdf() -> bytes:
    """A page behind the public-key (certificate) security handler, which opens only with a private key."""
    return with_trailer_encrypt(
        b"<< /Filter /Adobe.PubSec /SubFilter /adbe.pkcs7.s5 /V 4 /R 4 /Length 128"
        b" /Recipients [<3082>] /CF << /DefaultCryptFilter << /CFM /AESV2 /Length 16 >> >>"
        b" /StmF /DefaultCryptFilter /StrF /DefaultCryptFilter >>"
    )


def unknown_revision_encrypted_pdf() -> bytes:
    """A page behind the standard security handler at a revision no specification defines."""
    return with_trailer_encrypt(
        b"<< /Filter /Standard /V 9 /R 9 /Length 256 /O <%s> /U <%s> /P -4 >>" % (b"00" * 48, b"00" * 48)
    )


def with_trailer_encrypt(encrypt: bytes) -> bytes:
    body = raw_pdf([CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", leaf_page(2), encrypt])
    return body.replace(
        b"/Root 1 0 R >>", b"/Root 1 0 R /Encrypt 4 0 R /ID [<%s> <%s>] >>" % (b"ab" * 16, b"ab" * 16)
    )
