"""Tests for what the libraries the PDF libraries hand the file to (the crypto provider, pillow) raise:
the file's fault when a PDF library called them, ours when our own code did."""

from __future__ import annotations

import os
from collections.abc import Callable

import cryptography
import PIL
import pypdf
import pypdfium2 as pdfium
import pytest
from cryptography.exceptions import UnsupportedAlgorithm
from PIL.Image import DecompressionBombError as PillowBomb

from ingest_worker.pipeline_errors import (
    ImageTooLargeError,
    InvalidEncryptionError,
    MalformedPdfError,
    PageRenderError,
    UnsupportedEncryptionError,
)
from ingest_worker.stages.parser_errors import pdfium_errors, pypdf_errors
from shared.errors import IngestError, PermanentError

PYPDF = os.path.dirname(pypdf.__file__)
PDFIUM = os.path.dirname(pdfium.__file__)
CRYPTOGRAPHY = os.path.dirname(cryptography.__file__)
PILLOW = os.path.dirname(PIL.__file__)


def function_in(directory: str, module: str, source: str) -> Callable[..., None]:
    """A function `run` whose frame lies in `module` under `directory`, as the library's own would."""
    namespace: dict[str, object] = {}
    exec(compile(source, os.path.join(directory, module), "exec"), namespace)
    return namespace["run"]  # type: ignore[return-value]


def raised_by(delegate: tuple[str, str], exc: Exception, caller: tuple[str, str] | None) -> None:
    """Raise `exc` from a frame in `delegate` (folder, module), called from a frame in `caller`, or
    straight from this test (our own code) when None."""
    inner = function_in(*delegate, "def run(exc):\n    raise exc\n")
    if caller is None:
        inner(exc)
    function_in(*caller, "def run(inner, exc):\n    inner(exc)\n")(inner, exc)


CIPHER = (CRYPTOGRAPHY, "hazmat/primitives/_cipheralgorithm.py")
PYPDF_CIPHERS = (PYPDF, f"_crypt_providers{os.sep}_cryptography.py")


@pytest.mark.parametrize(
    ("delegate", "raised", "caller", "expected"),
    [
        (CIPHER, ValueError("Invalid key size (0) for RC4."), PYPDF_CIPHERS, InvalidEncryptionError),
        (
            CIPHER,
            ValueError("Invalid key size (88) for RC4."),
            (PYPDF, "_encryption.py"),
            InvalidEncryptionError,
        ),
        (CIPHER, UnsupportedAlgorithm("no such cipher"), PYPDF_CIPHERS, UnsupportedEncryptionError),
        ((PILLOW, "Image.py"), OSError("image file is truncated"), (PYPDF, "filters.py"), MalformedPdfError),
        ((PILLOW, "Image.py"), PillowBomb("too many pixels"), (PYPDF, "filters.py"), ImageTooLargeError),
    ],
)
def test_what_a_delegated_library_raises_for_pypdf_gets_a_specific_permanent_code(
    delegate: tuple[str, str], raised: Exception, caller: tuple[str, str], expected: type[IngestError]
) -> None:
    # Given a library pypdf hands the file's data to refusing it, called from pypdf's code
    # When it escapes inside the pypdf boundary
    with pytest.raises(expected) as caught, pypdf_errors():
        raised_by(delegate, raised, caller)

    # Then it is the file's fault: a permanent error with its own code, the original kept as the cause
    assert type(caught.value) is expected
    assert isinstance(caught.value, PermanentError)
    assert caught.value.__cause__ is raised


def test_what_pillow_raises_for_pypdfium2_is_a_page_render_error() -> None:
    # Given pillow refusing a bitmap pypdfium2 hands it (to_pil), and refusing a huge one
    # When / Then each is the file's: the page could not be rendered, or its image is too large
    with pytest.raises(PageRenderError), pdfium_errors():
        raised_by(
            (PILLOW, "Image.py"), ValueError("buffer is not large enough"), (PDFIUM, "_helpers/bitmap.py")
        )
    with pytest.raises(ImageTooLargeError), pdfium_errors():
        raised_by((PILLOW, "Image.py"), PillowBomb("too many pixels"), (PDFIUM, "_helpers/bitmap.py"))


@pytest.mark.parametrize(
    ("delegate", "raised"),
    [
        (CIPHER, ValueError("Invalid key size (0) for RC4.")),
        ((PILLOW, "Image.py"), OSError("cannot write mode RGBA as JPEG")),
        ((PILLOW, "Image.py"), ValueError("unknown resampling filter")),
    ],
)
def test_the_same_error_when_our_own_code_called_the_library_is_not_hidden(
    delegate: tuple[str, str], raised: Exception
) -> None:
    # Given our own code calling the crypto provider or pillow wrongly, inside both boundaries
    # When / Then the error passes unchanged, to end as an internal error with its traceback
    for boundary in (pypdf_errors, pdfium_errors):
        with pytest.raises(type(raised)) as caught, boundary():
            raised_by(delegate, raised, None)
        assert caught.value is raised
