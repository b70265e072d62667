"""Checks every request passes before a view runs: ids that fit the database, no NUL characters, and
a form that reports too many parts as its own fault; and the caller's body limit, checked before the
body is read."""

from __future__ import annotations

from tempfile import SpooledTemporaryFile
from typing import IO, Any

from flask import Flask, Request, request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.formparser import FormDataParser, MultiPartParser
from werkzeug.routing import IntegerConverter
from werkzeug.sansio.multipart import MultipartDecoder

from shared.errors import InvalidRequestError, TooManyFormPartsError, UploadTooLargeError

# The largest id either database stores (a signed 64-bit integer).
MAX_ID = 2**63 - 1
# Multipart framing around the files: the request may exceed the upload limit by this much.
MULTIPART_OVERHEAD_BYTES = 64 * 1024
# How much of a multipart body the parser asks the server for at once. Werkzeug's 64 KiB means some
# sixteen reads per megabyte, each of which costs the server a copy of what it has buffered ahead.
# Werkzeug refuses a single read over its form memory limit (500 KB by default), so stay below it.
FORM_READ_BYTES = 256 * 1024
# In a form parsed by Werkzeug (not an upload's: gateway/upload_form.py reads that), a file part up
# to this size stays in memory; a larger one goes to a temporary file as it arrives (Werkzeug's own
# threshold is 500 KB, which sends a typical PDF to disk and back).
FILE_IN_MEMORY_BYTES = 1024 * 1024


class IdConverter(IntegerConverter):
    """`<int:...>` path ids beyond a 64-bit integer match no route (404), instead of overflowing
    the database driver."""

    def __init__(self, map: Any, *args: Any, **kwargs: Any) -> None:  # noqa: A002 (werkzeug's name)
        kwargs.setdefault("max", MAX_ID)
        super().__init__(map, *args, **kwargs)


def _too_many_parts(error: RequestEntityTooLarge) -> bool:
    # Werkzeug raises the same RequestEntityTooLarge for a body, a field and a part count over its
    # limits; the part count is the one raised by the decoder with its count over the limit.
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_next is not None:
        traceback = traceback.tb_next
    decoder = traceback.tb_frame.f_locals.get("self") if traceback is not None else None
    return (
        isinstance(decoder, MultipartDecoder)
        and decoder.max_parts is not None
        and decoder._parts_decoded > decoder.max_parts
    )


class GatewayFormDataParser(FormDataParser):
    """Werkzeug's form parser, reading a multipart body in FORM_READ_BYTES pieces."""

    def _parse_multipart(
        self, stream: Any, mimetype: str, content_length: int | None, options: dict[str, str]
    ) -> Any:
        parser = MultiPartParser(
            stream_factory=self.stream_factory,
            max_form_memory_size=self.max_form_memory_size,
            max_form_parts=self.max_form_parts,
            cls=self.cls,
            buffer_size=FORM_READ_BYTES,
        )
        boundary = options.get("boundary", "").encode("ascii")
        if not boundary:
            raise ValueError("Missing boundary")
        form, files = parser.parse(stream, boundary, content_length)
        return stream, form, files


class GatewayRequest(Request):
    """Flask's request, reporting more form parts than MAX_FORM_PARTS as `too_many_form_parts`, and
    reading multipart bodies in large pieces."""

    form_data_parser_class = GatewayFormDataParser

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> IO[bytes]:
        return SpooledTemporaryFile(max_size=FILE_IN_MEMORY_BYTES, mode="rb+")

    def _load_form_data(self) -> None:
        try:
            super()._load_form_data()
        except RequestEntityTooLarge as error:
            if _too_many_parts(error):
                raise TooManyFormPartsError() from None
            raise


def refuse_nul() -> None:
    """PostgreSQL cannot store NUL in text: refuse it in the path, query string and headers up front."""
    pairs = [*request.args.items(multi=True), *request.headers.items()]
    if "\x00" in request.path or any("\x00" in k or "\x00" in v for k, v in pairs):
        raise InvalidRequestError("The request contains a NUL character.", code="nul_character")


def limit_body(limit_mb: int) -> None:
    """Bound this request's body by the caller's upload limit (which may exceed the service default)
    plus the multipart framing: an announced larger Content-Length is refused before any of the body
    is read, and a chunked body stops being read at the limit."""
    limit = limit_mb * 1024 * 1024 + MULTIPART_OVERHEAD_BYTES
    request.max_content_length = limit
    if (request.content_length or 0) > limit:
        raise UploadTooLargeError()


def install(app: Flask) -> None:
    """Bounded integer ids, the NUL check and the form-part report (before blueprints register)."""
    app.url_map.converters["int"] = IdConverter
    app.request_class = GatewayRequest
    app.before_request(refuse_nul)
