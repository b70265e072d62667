"""The errors of processing a document: a PDF that cannot be read or breaks a safety limit, OCR and
parser faults, time limits and cancellation (the base classes and all other errors are in shared.errors)."""

from __future__ import annotations

from shared.errors import PermanentError, TransientError


class InvalidPdfError(PermanentError):
    code = "invalid_pdf"
    message = "The file is not a readable PDF."


class EncryptedPdfError(PermanentError):
    code = "encrypted"
    message = "The PDF is encrypted with a password."


class TooManyPagesError(PermanentError):
    code = "too_many_pages"
    message = "The PDF has more pages than allowed."


class PdfLimitError(PermanentError):
    code = "pdf_limit_exceeded"
    message = "The PDF exceeds a safety limit (decompression, object count or image size)."


class NoTextError(PermanentError):
    code = "no_text"
    message = "No text could be extracted from the document, even with OCR."


class DocumentDeletedError(PermanentError):
    code = "document_deleted"
    message = "The document was deleted."


class JobCancelledError(PermanentError):
    """Raised between batches of a long stage when the job was asked to stop."""

    code = "cancelled"
    message = "The job was cancelled."


class OcrFailedError(TransientError):
    code = "ocr_failed"
    message = "OCR of a page failed."


class OcrUnavailableError(OcrFailedError):
    """The tesseract binary is missing: a deployment fault, retried in case another worker has it."""

    code = "ocr_unavailable"
    message = "OCR is not available on this worker (tesseract is missing)."


class ProcessingTimeoutError(TransientError):
    code = "timeout"
    message = "Processing took longer than its time limit."


class NoPagesError(InvalidPdfError):
    code = "no_pages"
    message = "The PDF has no pages."


class TruncatedPdfError(InvalidPdfError):
    code = "truncated_pdf"
    message = "The PDF is incomplete: it stops before its end-of-file marker (was the upload cut short?)."


class PageTreeCycleError(InvalidPdfError):
    code = "page_tree_cycle"
    message = "The PDF's page tree loops back on itself."


class PageCountMismatchError(InvalidPdfError):
    code = "page_count_mismatch"
    message = "The page count the PDF declares does not match the pages it holds."


class PageTreeTooDeepError(PdfLimitError):
    code = "page_tree_too_deep"
    message = "The PDF's page tree is nested deeper than allowed."


class TooManyObjectsError(PdfLimitError):
    code = "too_many_objects"
    message = "The PDF holds more objects than allowed."


class DecompressionBombError(PdfLimitError):
    code = "decompression_bomb"
    message = "The PDF's page content decompresses to more data than allowed."


class ImageTooLargeError(PdfLimitError):
    code = "image_too_large"
    message = "The PDF holds an image with more pixels than allowed."


class MemoryLimitError(PdfLimitError):
    code = "memory_limit_exceeded"
    message = "Processing the PDF needed more memory than allowed."


class MalformedPdfError(InvalidPdfError):
    """The reader met an object of the wrong type, or a missing one, where the PDF's structure needs it."""

    code = "malformed_pdf"
    message = "The PDF's internal structure is damaged: an object is missing or of the wrong kind."


class UnsupportedEncryptionError(EncryptedPdfError):
    """A security handler other than the standard password one (certificates), or an unknown revision."""

    code = "unsupported_encryption"
    message = "The PDF is encrypted with a method the service cannot open (such as a certificate)."


class InvalidEncryptionError(EncryptedPdfError):
    """The encryption dictionary gives the cipher what it cannot take: a key length that is no whole
    number of bytes in range, a truncated key or permission entry."""

    code = "invalid_encryption"
    message = "The PDF's encryption settings are invalid (such as a key length no cipher accepts)."


class UnsupportedFilterError(InvalidPdfError):
    code = "unsupported_filter"
    message = "The PDF compresses its content with a method the service cannot decode (such as JBIG2)."


class RestrictedFilterNameError(InvalidPdfError):
    code = "restricted_filter_name"
    message = (
        "The PDF names a stream's compression by an abbreviation (such as /A85 or /Fl) that PDF allows "
        "only for inline images."
    )


class UnsupportedFeatureError(InvalidPdfError):
    code = "unsupported_pdf_feature"
    message = "The PDF uses a feature the service's reader does not support."


class PageRenderError(InvalidPdfError):
    code = "page_render_failed"
    message = "A page of the PDF could not be rendered for OCR."


class NestingTooDeepError(PdfLimitError):
    code = "nesting_too_deep"
    message = "The PDF nests its objects deeper than the reader can follow."


class ParseTimeoutError(PermanentError):
    """The parser spent its whole time limit working on the file: the same bytes would hang it again."""

    code = "parse_timeout"
    message = "Processing the PDF took longer than its time limit."


class ParserCrashedError(PermanentError):
    """The parser process died (a signal other than SIGKILL, or an exit without an answer) on the file."""

    code = "parser_crashed"
    message = "The PDF made the parser crash."


class ParserKilledError(TransientError):
    """Something outside the service (the kernel's out-of-memory killer, an operator) killed the parser."""

    code = "parser_killed"
    message = "The parser was stopped from outside; the work will be retried."
