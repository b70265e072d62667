"""The upload form, read once from the request body: its text fields kept in memory, each file part
streamed into an object writer while it is hashed, counted and checked for the PDF magic.

Werkzeug's form parser would spool each part to a temporary file that is then read back twice (to
hash it, then to store it); python-multipart's low-level parser hands the part's bytes over as they
arrive. The request's body limit (request_checks.limit_body) bounds the stream this reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser
from werkzeug.http import parse_options_header

from gateway import multipart_feed
from gateway.content_disposition import display_name
from gateway.multipart_feed import NoDelimiterError
from gateway.uploads import IncomingFile
from shared.errors import (
    EmptyFileError,
    IngestError,
    InvalidRequestError,
    NotAPdfError,
    TooManyFormPartsError,
    UploadTooLargeError,
)
from shared.models import new_id
from shared.storage import ObjectStorage

# How much of the body is read at once. Gunicorn reads ahead up to 1 MiB of a body and copies what
# stays buffered at each smaller read (256 KiB reads of a 1 MB file cost seven copies of it, 10% of
# a request), so the reads match its read-ahead.
READ_BYTES = 1024 * 1024
FILE_FIELDS = frozenset({"file", "files"})
# The names a part may have (a text part named like a file part is no file: `missing_file`).
FORM_FIELDS = FILE_FIELDS | {"callback_url", "ocr_languages", "metadata"}
PDF_MAGIC = b"%PDF-"
# Readers accept a PDF header preceded by a little junk, within the first 1 KiB.
MAGIC_WINDOW = 1024
# A part's header lines: each at most this long (a long filename is cut to 255 characters
# afterwards), and at most this many (python-multipart's defaults, 4 KiB and 8, refuse less than
# Werkzeug's parser accepted).
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS = 32
DEFAULT_FILENAME = "upload.pdf"
# When the app sets no MAX_FORM_PARTS / MAX_FORM_MEMORY_SIZE (Flask's defaults are these).
DEFAULT_MAX_PARTS = 1000
DEFAULT_MAX_FIELD_BYTES = 500_000


class MalformedFormError(Exception):
    """The body is not a well-formed multipart form."""


@dataclass
class UploadForm:
    """The form's text fields (the first value of each name) and its files, in their order."""

    fields: dict[str, str] = field(default_factory=dict)
    files: list[IncomingFile] = field(default_factory=list)
    nul_filename: bool = False


class _FilePart:
    """One file part as it arrives: into its writer, its digest, its size and its first KiB."""

    def __init__(self, item: IncomingFile, limit_bytes: int) -> None:
        self.item = item
        self.limit_bytes = limit_bytes
        self.digest = hashlib.sha256()
        self.size = 0
        self.head = b""

    def feed(self, data: bytes) -> None:
        item = self.item
        if item.error is not None:
            return
        self.size += len(data)
        if self.size > self.limit_bytes:
            self._refuse(UploadTooLargeError())
            return
        if len(self.head) < MAGIC_WINDOW:
            self.head += data[: MAGIC_WINDOW - len(self.head)]
            if len(self.head) == MAGIC_WINDOW and PDF_MAGIC not in self.head:
                item.abort()  # not a PDF: the rest is only counted (a size error comes first)
        if item.writer is not None:
            self.digest.update(data)
            item.writer.write(data)

    def finish(self) -> None:
        if self.item.error is not None:
            return
        if self.size == 0:
            self._refuse(EmptyFileError())
        elif PDF_MAGIC not in self.head:
            self._refuse(NotAPdfError())
        else:
            self.item.sha256, self.item.size = self.digest.hexdigest(), self.size

    def _refuse(self, error: IngestError) -> None:
        self.item.error = error
        self.item.abort()


class _FormReader:
    """python-multipart's callbacks, building an UploadForm."""

    def __init__(
        self,
        open_file: Callable[[str], IncomingFile],
        *,
        limit_bytes: int,
        max_files: int,
        max_parts: int,
        max_field_bytes: int,
    ) -> None:
        self.form = UploadForm()
        self.open_file = open_file
        self.limit_bytes, self.max_files = limit_bytes, max_files
        self.max_parts, self.max_field_bytes = max_parts, max_field_bytes
        self.parts = 0
        self.ended = False
        self.fresh = False  # a part's headers were read, and no byte of its data yet
        self.file_fields: list[str] = []
        self.headers: dict[str, str] = {}
        self.header_field = bytearray()
        self.header_value = bytearray()
        self.sink: Callable[[bytes], None] = self._skip
        self.end_part: Callable[[], None] = lambda: None

    def callbacks(self) -> dict[str, Callable[..., None]]:
        return {
            "on_part_begin": self.on_part_begin,
            "on_header_field": self.on_header_field,
            "on_header_value": self.on_header_value,
            "on_header_end": self.on_header_end,
            "on_headers_finished": self.on_headers_finished,
            "on_part_data": self.on_part_data,
            "on_part_end": self.on_part_end,
            "on_end": self.on_end,
        }

    def on_part_begin(self) -> None:
        self.parts += 1
        if self.parts > self.max_parts:
            raise TooManyFormPartsError()
        self.headers = {}
        self.header_field, self.header_value = bytearray(), bytearray()
        self.sink, self.end_part = self._skip, lambda: None

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def on_header_end(self) -> None:
        try:
            name, value = self.header_field.decode(), self.header_value.decode()
        except UnicodeDecodeError as exc:
            raise MalformedFormError("header not UTF-8") from exc
        self.headers.setdefault(name.strip(" \t").lower(), value.strip(" \t"))
        self.header_field, self.header_value = bytearray(), bytearray()

    def on_headers_finished(self) -> None:
        if "content-disposition" not in self.headers:
            raise MalformedFormError("a part without Content-Disposition")
        _, options = parse_options_header(self.headers["content-disposition"])
        name, filename = options.get("name"), options.get("filename")
        if name not in (FORM_FIELDS if filename is None else FILE_FIELDS):
            # Refused, not ignored: a misspelt field must not silently fall back to its default.
            raise InvalidRequestError(f"The form has no field {name!r}.", code="unknown_form_field")
        if filename is None:
            self._text_field(name)
        else:
            self._file(name, filename)
        self.fresh = True

    def _text_field(self, name: str) -> None:
        value = bytearray()

        def collect(data: bytes) -> None:
            # Every text field is bounded, kept or not, as Werkzeug's form bounded it.
            if len(value) + len(data) > self.max_field_bytes:
                raise UploadTooLargeError()
            value.extend(data)

        def end() -> None:
            self.form.fields.setdefault(name, value.decode(errors="replace"))

        self.sink, self.end_part = collect, end

    def _file(self, name: str, filename: str) -> None:
        if len(self.form.files) >= self.max_files:
            raise InvalidRequestError(f"At most {self.max_files} files per request.", code="too_many_files")
        # PostgreSQL cannot store NUL in text: refused once the form is read, as before.
        self.form.nul_filename = self.form.nul_filename or "\x00" in filename
        item = self.open_file(display_name(filename)[:255] or DEFAULT_FILENAME)
        self.form.files.append(item)
        self.file_fields.append(name)
        part = _FilePart(item, self.limit_bytes)
        self.sink, self.end_part = part.feed, part.finish

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self.fresh = False
            self.sink(data[start:end])

    def on_part_end(self) -> None:
        self.fresh = False
        self.end_part()
        self.sink, self.end_part = self._skip, lambda: None

    def on_end(self) -> None:
        self.ended = True

    @staticmethod
    def _skip(data: bytes) -> None:
        pass


def read(
    stream: Callable[[int], bytes],
    boundary: str,
    open_file: Callable[[str], IncomingFile],
    *,
    limit_bytes: int,
    max_files: int,
    max_parts: int,
    max_field_bytes: int,
) -> UploadForm:
    """Read a multipart body from `stream` (a bounded `read(n)`), opening each file part with
    `open_file(filename)`. A malformed body is refused as `missing_file` (Werkzeug's parser read it
    as an empty form); on any refusal every writer opened is aborted."""
    reader = _FormReader(
        open_file,
        limit_bytes=limit_bytes,
        max_files=max_files,
        max_parts=max_parts,
        max_field_bytes=max_field_bytes,
    )
    try:
        try:
            if not boundary:
                raise MalformedFormError("no boundary")
            parser = MultipartParser(
                boundary.encode("latin-1"),
                reader.callbacks(),  # type: ignore[arg-type]
                max_header_count=MAX_HEADERS,
                max_header_size=MAX_HEADER_BYTES,
            )
            multipart_feed.feed(
                parser,
                stream,
                boundary.encode("latin-1"),
                read_bytes=READ_BYTES,
                part_is_fresh=lambda: reader.fresh,
            )
            parser.finalize()
            if not reader.ended:
                raise MalformedFormError("the body ends before the closing boundary")
        except (MalformedFormError, NoDelimiterError, FormParserError, UnicodeEncodeError) as exc:
            raise missing_file() from exc
    except BaseException:
        for item in reader.form.files:
            item.abort()
        raise
    form = reader.form
    # In field order, then body order, as Werkzeug's `files.getlist("file")` then "files" gave them.
    by_field = list(zip(reader.file_fields, form.files, strict=True))
    form.files = [item for name in ("file", "files") for field, item in by_field if field == name]
    return form


def missing_file() -> InvalidRequestError:
    """The refusal of a form without a file part (or no readable form at all)."""
    return InvalidRequestError("Send the PDF as the multipart field 'file'.", code="missing_file")


def planned_file(storage: ObjectStorage, tenant_id: str) -> Callable[[str], IncomingFile]:
    """An `open_file` that names each new file's document and object before its bytes arrive."""

    def open_file(filename: str) -> IncomingFile:
        document_id = new_id()
        key = f"documents/{tenant_id}/{document_id}.pdf"
        return IncomingFile(
            filename=filename, planned_id=document_id, object_key=key, writer=storage.writer(key)
        )

    return open_file
