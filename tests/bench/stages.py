"""The costly stages measured on their own, in this process: pypdf extraction, OCR and the local embedder."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.ocr import ocr_pages
from shared.embedders.local import LocalEmbedder
from shared.embedders.onnx_build import model_dir
from shared.settings import Settings
from tests.bench.documents import prose_pages
from tests.support.pdfs import text_pdf, write_pdf


@dataclass(frozen=True)
class Extraction:
    """`extract_pages` over a whole text PDF (the best of a few runs)."""

    pages: int
    wall_s: float
    cpu_s: float

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall_s


@dataclass(frozen=True)
class Ocr:
    """`ocr_pages` over some scanned pages: wall time, this process's CPU (pdfium rendering and image
    preparation) and the CPU of the tesseract processes it ran."""

    pages: int
    dpi: int
    wall_s: float
    render_cpu_s: float
    tesseract_cpu_s: float

    @property
    def cpu_s_per_page(self) -> float:
        return (self.render_cpu_s + self.tesseract_cpu_s) / self.pages

    @property
    def wall_s_per_page(self) -> float:
        return self.wall_s / self.pages


@dataclass(frozen=True)
class Embedding:
    """The local embedder over full-window chunks, in batches as the embed step sends them."""

    threads: int
    chunks: int
    mean_tokens: float
    wall_s: float

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.wall_s


def measure_extraction(pdf: bytes, workdir: Path, *, runs: int = 2, min_chars: int = 20) -> Extraction:
    """Extract every page of `pdf` `runs` times after a warm-up and keep the fastest run."""
    path = write_pdf(workdir, pdf, "extraction.pdf")
    extract_pages(write_pdf(workdir, text_pdf(["Warm-up page."]), "warm-up.pdf"), min_chars=min_chars)
    best: Extraction | None = None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        pages = extract_pages(path, min_chars=min_chars)
        result = Extraction(len(pages), time.perf_counter() - wall, time.process_time() - cpu)
        if best is None or result.wall_s < best.wall_s:
            best = result
    assert best is not None
    return best


def measure_ocr(pdf: bytes, workdir: Path, *, pages: int, settings: Settings) -> Ocr:
    """OCR the first `pages` pages of the scanned `pdf` with the service's OCR settings."""
    path = write_pdf(workdir, pdf, "ocr.pdf")
    # Tesseract runs in child processes that pytesseract waits for, so their CPU shows in RUSAGE_CHILDREN.
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu = time.perf_counter(), time.process_time()
    texts = ocr_pages(
        path,
        list(range(1, pages + 1)),
        dpi=settings.ocr_dpi,
        languages=settings.ocr_languages,
        timeout_s=settings.ocr_timeout_s,
    )
    wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not all(texts.values()):
        raise RuntimeError("OCR read no text from a generated page: the measurement would mean nothing")
    tesseract_s = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return Ocr(pages, settings.ocr_dpi, wall_s, cpu_s, tesseract_s)


def window_texts(count: int, tokens: int) -> list[str]:
    """`count` distinct prose texts of `tokens` model tokens each, the largest chunk the chunker makes."""
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    ids = tokenizer.encode(" ".join(prose_pages(count, 2 * tokens, seed=300)), add_special_tokens=False).ids
    if len(ids) < count * tokens:
        raise ValueError("not enough generated prose for the requested chunks")
    return [tokenizer.decode(ids[i * tokens : (i + 1) * tokens]) for i in range(count)]


def measure_embedding(settings: Settings, *, threads: int, chunks: int = 96) -> Embedding:
    """Embed `chunks` full-window texts with `threads` onnxruntime threads, batch by batch, once warm."""
    embedder = LocalEmbedder.from_settings(settings.replace(embed_threads=threads))
    batch = settings.embed_batch_size
    texts = window_texts(chunks + batch, embedder.max_tokens)
    warm_up, timed = texts[:batch], texts[batch:]
    embedder.embed(warm_up)
    started = time.perf_counter()
    for start in range(0, len(timed), batch):
        embedder.embed(timed[start : start + batch])
    wall_s = time.perf_counter() - started
    mean_tokens = sum(min(embedder.count_tokens(t), embedder.max_tokens) for t in timed) / len(timed)
    return Embedding(threads, len(timed), mean_tokens, wall_s)
