"""What the PDF libraries raise on a hostile or broken file, translated into the error taxonomy where they
are called.

pypdf and pypdfium2 answer some bad files with their own errors, and others with whatever Python raises
deep inside them (a `TypeError` on an object of the wrong type, a `RecursionError` on nesting). Those
plain errors are the file's fault only when the library raised them: the same `TypeError` raised by our
own code is a bug, stays unclassified and ends the job as `internal_error` with its traceback logged. So a
plain error is translated only when the innermost frame of its traceback (standard library frames aside)
lies inside the library.

The libraries hand parts of the file to others: pypdf its crypto provider (cryptography or pycryptodome)
the keys and lengths of the encryption dictionary, and pillow the images; pypdfium2 pillow the bitmaps.
What those raise on the file's bytes is the file's fault too, so their frames are passed over like the
standard library's: the error is translated when the innermost frame left is the PDF library's (it
called them with the file's data), and stays ours when it is our own code that called them.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import sysconfig
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from types import TracebackType

import pypdf
import pypdfium2 as pdfium
from pypdf.errors import (
    DependencyError,
    DeprecationError,
    FileNotDecryptedError,
    LimitReachedError,
    PyPdfError,
)

from ingest_worker.pipeline_errors import (
    DecompressionBombError,
    EncryptedPdfError,
    ImageTooLargeError,
    InvalidEncryptionError,
    InvalidPdfError,
    MalformedPdfError,
    NestingTooDeepError,
    PageRenderError,
    PdfLimitError,
    RestrictedFilterNameError,
    UnsupportedEncryptionError,
    UnsupportedFeatureError,
    UnsupportedFilterError,
)
from shared.errors import IngestError

# Plain errors that a library's parsers let escape on attacker-controlled structures: they index, unpack,
# convert and recurse without checking first. MemoryError is not here: the isolated child reports it.
HOSTILE_FILE_ERRORS: tuple[type[Exception], ...] = (
    TypeError,
    AssertionError,
    AttributeError,
    LookupError,  # KeyError, IndexError, an unknown text codec
    ValueError,  # also UnicodeDecodeError and binascii.Error
    ArithmeticError,  # ZeroDivisionError, OverflowError
    RecursionError,
    NotImplementedError,
    EOFError,
    struct.error,
    zlib.error,
)

# Compared with real paths: a virtual environment is often reached through a symbolic link.
_PYPDF = os.path.dirname(os.path.realpath(pypdf.__file__)) + os.sep
_PYPDF_FILTERS = os.path.join(_PYPDF, "filters.py")
_PYPDF_CIPHERS = os.path.join(_PYPDF, "_crypt_providers") + os.sep
_PYPDF_ENCRYPTION = (os.path.join(_PYPDF, "_encryption.py"), _PYPDF_CIPHERS)
# pypdfium2 and the ctypes bindings it ships beside it (pypdfium2_raw).
_PDFIUM = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(pdfium.__file__))), "pypdfium2")
# The libraries pypdf and pypdfium2 pass the file's data to, by package name (those not installed left out).
_DELEGATE_PACKAGES = ("cryptography", "Crypto", "Cryptodome", "PIL", "brotli")
_STDLIB = tuple({os.path.realpath(sysconfig.get_paths()[name]) + os.sep for name in ("stdlib", "platstdlib")})
# Packages may be installed under the standard library's folder (/usr/local/lib/python3.11/site-packages).
_PACKAGE_FOLDERS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


def _package_folders(names: tuple[str, ...]) -> tuple[str, ...]:
    folders = []
    for name in names:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            folders.append(os.path.realpath(location) + os.sep)
    return tuple(folders)


_DELEGATES = _package_folders(_DELEGATE_PACKAGES)


def pypdf_errors(message: str | None = None) -> AbstractContextManager[None]:
    """Translate what pypdf raises on a bad file inside the block; anything else passes unchanged.

    `message` replaces the client-safe message of the generic codes (`invalid_pdf`, `malformed_pdf`),
    e.g. to name the page.
    """
    return _translated(classify_pypdf, message)


def pdfium_errors(message: str | None = None) -> AbstractContextManager[None]:
    """Translate what pypdfium2 raises on a bad file inside the block; anything else passes unchanged.

    `message` replaces the client-safe message of `page_render_failed`.
    """
    return _translated(classify_pdfium, message)


@contextmanager
def _translated(
    classify: Callable[[BaseException, str | None], IngestError | None], message: str | None
) -> Iterator[None]:
    try:
        yield
    except IngestError:
        raise
    except Exception as exc:
        error = classify(exc, message)
        if error is None:
            raise
        raise error from exc


def classify_pypdf(exc: BaseException, message: str | None = None) -> IngestError | None:
    """The taxonomy's error for `exc` raised by pypdf, or None when pypdf is not what raised it."""
    # pypdf wraps some of its limits in a read error.
    limit = exc if isinstance(exc, LimitReachedError) else exc.__cause__
    if isinstance(exc, PyPdfError) and isinstance(limit, LimitReachedError):
        if _passes_through(limit.__traceback__, (_PYPDF_FILTERS,)):
            return DecompressionBombError("A stream of the PDF decompresses to more data than allowed.")
        return PdfLimitError()
    if isinstance(exc, FileNotDecryptedError):
        return EncryptedPdfError()
    if isinstance(exc, PyPdfError):
        return InvalidPdfError(message)
    if isinstance(exc, DependencyError):
        # An optional package or program pypdf would need: a crypto provider or a decoder.
        if _passes_through(exc.__traceback__, _PYPDF_ENCRYPTION):
            return UnsupportedEncryptionError()
        return UnsupportedFilterError()
    if isinstance(exc, DeprecationError):
        # pypdf also raises it when called through a removed API: only the filter names are the file's.
        return RestrictedFilterNameError() if _passes_through(exc.__traceback__, (_PYPDF_FILTERS,)) else None
    if not isinstance(exc, HOSTILE_FILE_ERRORS + _delegate_errors(exc)) or not raised_inside(exc, _PYPDF):
        return None
    if _raised_by_delegate(exc):
        return _delegate_error(exc, message)
    if isinstance(exc, RecursionError):
        return NestingTooDeepError()
    if isinstance(exc, NotImplementedError):
        if _passes_through(exc.__traceback__, _PYPDF_ENCRYPTION):
            return UnsupportedEncryptionError()
        if _passes_through(exc.__traceback__, (_PYPDF_FILTERS,)):
            return UnsupportedFilterError()
        return UnsupportedFeatureError()
    if raised_inside(exc, _PYPDF_CIPHERS):
        # pypdf's wrapper of the cipher, on a key or an encrypted key of the wrong length.
        return InvalidEncryptionError()
    return MalformedPdfError(message)


def classify_pdfium(exc: BaseException, message: str | None = None) -> IngestError | None:
    """The taxonomy's error for `exc` raised by pypdfium2, or None when pypdfium2 is not what raised it."""
    if isinstance(exc, pdfium.PdfiumError):
        code = exc.err_code
        if code == pdfium.raw.FPDF_ERR_PASSWORD:
            return EncryptedPdfError()
        if code == pdfium.raw.FPDF_ERR_SECURITY:
            return UnsupportedEncryptionError()
        if code == pdfium.raw.FPDF_ERR_FILE:
            return None  # the path could not be opened: the service's fault, not the file's
        if code is not None:
            return InvalidPdfError()
        return PageRenderError(message)
    if isinstance(exc, HOSTILE_FILE_ERRORS + _delegate_errors(exc)) and raised_inside(exc, _PDFIUM):
        if _raised_by_delegate(exc) and _is_image_bomb(exc):
            return ImageTooLargeError()
        return NestingTooDeepError() if isinstance(exc, RecursionError) else PageRenderError(message)
    return None


def raised_inside(exc: BaseException, directory: str) -> bool:
    """Whether the innermost frame of `exc`'s traceback, standard library frames and those of the
    libraries it hands the file to (_DELEGATE_PACKAGES) aside, lies under `directory` (a library's
    source folder)."""
    innermost = None
    for filename in _filenames(exc.__traceback__):
        if not _is_stdlib(filename) and not filename.startswith(_DELEGATES):
            innermost = filename
    return innermost is not None and innermost.startswith(directory)


def _raised_by_delegate(exc: BaseException) -> bool:
    """Whether the innermost frame of `exc`'s traceback, standard library frames aside, lies in one of
    the libraries the PDF libraries hand the file to."""
    innermost = None
    for filename in _filenames(exc.__traceback__):
        if not _is_stdlib(filename):
            innermost = filename
    return innermost is not None and innermost.startswith(_DELEGATES)


def _delegate_errors(exc: BaseException) -> tuple[type[Exception], ...]:
    """The errors of their own that the delegated libraries raise on bad data, when one raised `exc`:
    an algorithm the crypto provider lacks, an image pillow cannot identify, decode or afford (OSError,
    which from our own code would rather be a fault of the machine)."""
    if not _raised_by_delegate(exc):
        return ()
    kinds: list[type[Exception]] = [OSError]
    with suppress(ImportError):
        from cryptography.exceptions import UnsupportedAlgorithm

        kinds.append(UnsupportedAlgorithm)
    with suppress(ImportError):
        from PIL.Image import DecompressionBombError as PillowBomb

        kinds.append(PillowBomb)
    return tuple(kinds)


def _delegate_error(exc: BaseException, message: str | None) -> IngestError:
    """The taxonomy's error for what a delegated library raised on the data pypdf handed it."""
    if _passes_through(exc.__traceback__, _PYPDF_ENCRYPTION):
        # A cipher refused the key or the data the encryption dictionary gave it (an RC4 key of
        # /Length 7, a truncated /UE), or the provider lacks the algorithm.
        if type(exc).__name__ == "UnsupportedAlgorithm":
            return UnsupportedEncryptionError()
        return InvalidEncryptionError()
    if _is_image_bomb(exc):
        return ImageTooLargeError()
    return MalformedPdfError(message)


def _is_image_bomb(exc: BaseException) -> bool:
    return type(exc).__name__ == "DecompressionBombError" and type(exc).__module__.startswith("PIL")


def _passes_through(traceback: TracebackType | None, places: tuple[str, ...]) -> bool:
    return any(filename.startswith(places) for filename in _filenames(traceback))


def _filenames(traceback: TracebackType | None) -> Iterator[str]:
    """The source file of each frame, outermost first; frozen modules keep their "<frozen ...>" name."""
    while traceback is not None:
        filename = traceback.tb_frame.f_code.co_filename
        yield filename if filename.startswith("<") else os.path.realpath(filename)
        traceback = traceback.tb_next


def _is_stdlib(filename: str) -> bool:
    if filename.startswith("<"):
        return True
    return filename.startswith(_STDLIB) and not any(folder in filename for folder in _PACKAGE_FOLDERS)
