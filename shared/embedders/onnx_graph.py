"""The fp32 ONNX graph of all-MiniLM-L6-v2, written node by node from the packaged weights and smoothed."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODEL_NAME = "all-MiniLM-L6-v2"
OPSET = 17
# SmoothQuant migration strength (0: activations keep their range, 1: weights take all of it);
# 0.5 to 0.7 are equally good here.
SMOOTH_ALPHA = 0.6

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


def max_seq_length(source: Path) -> int:
    """The model's window in tokens, [CLS] and [SEP] included (sentence-transformers' max_seq_length)."""
    return int(json.loads((source / "sentence_bert_config.json").read_text())["max_seq_length"])


def activation_max(model: onnx.ModelProto, source: Path) -> dict[str, np.ndarray]:
    """Per-channel max |input| of every linear layer of the fp32 `model` over the calibration texts."""
    import onnxruntime as ort

    batch = feeds(source, _CALIBRATION_TEXTS)
    linears = {
        n.name: n.input[0] for n in model.graph.node if n.op_type == "MatMul" and n.name[:8] == "encoder."
    }
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(
        helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in linears.values()
    )
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    values = session.run(list(linears.values()), batch)
    tokens = batch["attention_mask"].astype(bool)  # padding is not an activation the model keeps
    return {name: np.abs(value[tokens]).max(axis=0) for name, value in zip(linears, values, strict=True)}


def feeds(source: Path, texts: Sequence[str]) -> dict[str, np.ndarray]:
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


def encoder_graph(source: Path, act_max: Mapping[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """The fp32 graph: input_ids, attention_mask [batch, seq] -> unit-length embeddings [batch, 384].

    With `act_max` (from `activation_max` on the graph built without it), layers are smoothed for int8.
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
