"""The small transformer block that the ONNX Runtime, OpenVINO and MIGraphX workers all
run: built here with ``onnx.helper`` from seeded random weights (no downloads), plus an
independent float64 NumPy implementation of the same math to check every runtime against.

The graph is written the way exporters emit it -- LayerNorm and GELU decomposed into
ReduceMean/Sub/Pow/Sqrt/Div and Div/Erf/Add/Mul -- so the runtimes' graph optimisers have
real fusion work to do, and their node counts before and after show it.

Shape: input ``x`` [batch, seq, D_MODEL] float32 with dynamic batch and seq; pre-norm
encoder block (multi-head self-attention, then a GELU MLP, each with a residual).
"""

import os
import tempfile

D_MODEL, HEADS, FFN = 256, 4, 1024
EPS = 1e-5
OPSET = 17


def weights(np):
    rng = np.random.RandomState(0)

    def matrix(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(np.float32)

    def vector(n, scale=0.02, offset=0.0):
        return (offset + scale * rng.standard_normal(n)).astype(np.float32)

    return {
        "ln1_g": vector(D_MODEL, 0.1, 1.0),
        "ln1_b": vector(D_MODEL),
        "w_qkv": matrix(D_MODEL, 3 * D_MODEL),
        "b_qkv": vector(3 * D_MODEL),
        "w_o": matrix(D_MODEL, D_MODEL),
        "b_o": vector(D_MODEL),
        "ln2_g": vector(D_MODEL, 0.1, 1.0),
        "ln2_b": vector(D_MODEL),
        "w_up": matrix(D_MODEL, FFN),
        "b_up": vector(FFN),
        "w_down": matrix(FFN, D_MODEL),
        "b_down": vector(D_MODEL),
    }


def make_input(np, batch, seq):
    return np.random.RandomState(1).standard_normal((batch, seq, D_MODEL)).astype(np.float32)


def reference(np, w, x):
    """The block in float64 NumPy: the check every runtime must pass."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = x.astype(np.float64)

    def layer_norm(t, g, b):
        mean = t.mean(-1, keepdims=True)
        var = ((t - mean) ** 2).mean(-1, keepdims=True)
        return (t - mean) / np.sqrt(var + EPS) * g + b

    batch, seq, _ = x.shape
    dh = D_MODEL // HEADS
    qkv = layer_norm(x, w["ln1_g"], w["ln1_b"]) @ w["w_qkv"] + w["b_qkv"]
    q, k, v = (qkv[..., i * D_MODEL:(i + 1) * D_MODEL].reshape(batch, seq, HEADS, dh).transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, D_MODEL)
    h = x + context @ w["w_o"] + w["b_o"]
    up = layer_norm(h, w["ln2_g"], w["ln2_b"]) @ w["w_up"] + w["b_up"]
    erf = np.vectorize(__import__("math").erf)
    gelu = 0.5 * up * (1.0 + erf(up / np.sqrt(2.0)))
    return h + gelu @ w["w_down"] + w["b_down"]


class _Graph:
    """Collects nodes and initializers with unique names."""

    def __init__(self, helper, numpy_helper, np):
        self.helper, self.numpy_helper, self.np = helper, numpy_helper, np
        self.nodes, self.initializers, self.count = [], [], 0

    def const(self, name, array):
        self.initializers.append(self.numpy_helper.from_array(self.np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(self.helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def layer_norm(self, x, g, b):
        mean = self.op("ReduceMean", [x], axes=[-1])
        centred = self.op("Sub", [x, mean])
        squared = self.op("Pow", [centred, "two"])
        var = self.op("ReduceMean", [squared], axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, "eps"])])
        return self.op("Add", [self.op("Mul", [self.op("Div", [centred, std]), g]), b])

    def linear(self, x, w, b):
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def gelu(self, x):
        erf = self.op("Erf", [self.op("Div", [x, "sqrt2"])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [erf, "one"])]), "half"])


def build_model(onnx, np, w):
    """The block as an ``onnx.ModelProto``."""
    from onnx import TensorProto, helper, numpy_helper

    g = _Graph(helper, numpy_helper, np)
    for name, array in w.items():
        g.const(name, array)
    f32 = np.float32
    for name, value in (("two", 2.0), ("eps", EPS), ("sqrt2", 2.0**0.5), ("one", 1.0), ("half", 0.5), ("scale", (D_MODEL // HEADS) ** -0.5)):
        g.const(name, np.array(value, dtype=f32))
    g.const("split_sizes", np.array([D_MODEL] * 3, dtype=np.int64))
    g.const("heads_shape", np.array([0, 0, HEADS, D_MODEL // HEADS], dtype=np.int64))
    g.const("model_shape", np.array([0, 0, D_MODEL], dtype=np.int64))

    qkv = g.linear(g.layer_norm("x", "ln1_g", "ln1_b"), "w_qkv", "b_qkv")
    split = [f"{n}_split" for n in "qkv"]
    g.nodes.append(helper.make_node("Split", [qkv, "split_sizes"], split, axis=-1))
    heads = [g.op("Reshape", [t, "heads_shape"]) for t in split]
    q = g.op("Transpose", [heads[0]], perm=[0, 2, 1, 3])
    k_t = g.op("Transpose", [heads[1]], perm=[0, 2, 3, 1])
    v = g.op("Transpose", [heads[2]], perm=[0, 2, 1, 3])
    scores = g.op("Mul", [g.op("MatMul", [q, k_t]), "scale"])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    merged = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), "model_shape"])
    h = g.op("Add", ["x", g.linear(merged, "w_o", "b_o")])
    up = g.linear(g.layer_norm(h, "ln2_g", "ln2_b"), "w_up", "b_up")
    out = g.op("Add", [h, g.linear(g.gelu(up), "w_down", "b_down")])
    g.nodes.append(helper.make_node("Identity", [out], ["y"]))

    dims = ["batch", "seq", D_MODEL]
    graph = helper.make_graph(
        g.nodes,
        "stackbench_transformer_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="stackbench")
    model.ir_version = 8  # readable by every runtime version in use (ORT >= 1.10, OpenVINO, MIGraphX)
    onnx.checker.check_model(model)
    return model


def write_model(onnx, np, directory=None):
    """Builds the block, saves it, and returns (path, weights, node count)."""
    w = weights(np)
    model = build_model(onnx, np, w)
    directory = directory or tempfile.mkdtemp(prefix="stackbench-onnx-")
    path = os.path.join(directory, "transformer_block.onnx")
    onnx.save(model, path)
    return path, w, len(model.graph.node)


def relative_error(np, got, want):
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    if not np.isfinite(got).all():
        return float("inf")
    return float(np.abs(got - want).max() / (np.abs(want).max() or 1.0))


def block_params(parameters):
    """``cpu_all_b1_s128`` style ids end in ``b<batch>_s<seq>``."""
    parts = parameters.split("_")
    return int(parts[-2][1:]), int(parts[-1][1:])


QUICK_SHAPES = [(1, 128)]
FULL_SHAPES = [(1, 128), (8, 128), (1, 512), (8, 512)]
