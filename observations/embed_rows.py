"""The q8row build of the local model: integer products, one scale per token.

Rewrites the shipped all-MiniLM-L6-v2 file (int8 weights, one scale per output column,
widened to fp32 at run time) so that every product of an activation with a weight runs in
integers (MatMulInteger: uint8 activations times the shipped weights), the activations
quantized at run time with a scale and a zero point for each token's row of its own. A
token's quantization therefore depends on that token alone: neither a long-tailed token
elsewhere in the text nor the other texts of a batch change it, which is what makes the
build both faithful and fast (one quantization pass per activation, no weight product
left in fp32; attention's two products of activations stay in fp32).

The weights are stored as uint8 with zero point 128 (the shipped int8 value plus 128), so
that the product is exact on every CPU. With int8 weights, onnxruntime's AVX2 kernel for
CPUs without VNNI adds pairs of uint8 × int8 products in int16 and saturates (a pair of
255 · 127 overflows it): the same text got another vector there (cosine to the fp32
arithmetic's down to 0.89). The uint8 × uint8 kernels widen before they multiply.

For an activation row ``x`` (width K) and weight column ``w = q · c`` (q int8, c its
column scale), with ``s = (max(x, 0) − min(x, 0)) / 255`` and ``z = round(−min(x, 0) / s)``,
``x ≈ s · (u − z)`` for ``u`` = QuantizeLinear(x, s, z) in uint8, so
``x · w ≈ s · c · (u · q) − s · z · c · Σq``: MatMulInteger gives ``u · q`` and the last
term is an outer product of per-row and per-column constants. A feed-forward block's GELU
output, never below −0.17, is shifted by 0.17 instead and quantized with zero point 0;
its correction ``0.17 · c · Σq`` is a constant of the weight.

Two more rewrites take a tenth off a run: the GELU, exported as five nodes, becomes
onnxruntime's one Gelu kernel, and attention's guard against NaN softmax rows (rows whose
keys are all masked, which a text's [CLS] key rules out) goes.

The rewrite is deterministic: integer sums of the shipped weights, one fp64 product each
rounded to fp32, and the pinned onnx's opset conversion (blocked QuantizeLinear needs
opset 21); the result is checked against a pinned sha256 like the q8 file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, version_converter

GELU_FLOOR = 0.17  # GELU(x) ≥ −0.16997 for every x
_OPSET = 21  # QuantizeLinear with block_size (one scale per row)
_WEIGHT_ZERO = 128  # the shipped int8 weights as uint8: exact products on every CPU


def per_token_quantized(model_bytes: bytes) -> bytes:
    """``model_bytes`` (the shipped file) with every weight product in integers."""
    model = version_converter.convert_version(onnx.load_from_string(model_bytes), _OPSET)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    _fuse_gelu(model.graph)
    _drop_nan_guards(model.graph)
    _IntegerProducts(model.graph).run()
    _drop_unused(model.graph)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _fuse_gelu(graph: onnx.GraphProto) -> None:
    """``x · 0.5 · (1 + erf(x / √2))``, exported as five nodes, as onnxruntime's one Gelu
    kernel (its own fusion does not match the exported order)."""
    consumers = _consumers(graph)
    for erf in [node for node in graph.node if node.op_type == "Erf"]:
        (plus_one,) = consumers[erf.output[0]]
        (half,) = consumers[plus_one.output[0]]
        (times_x,) = consumers[half.output[0]]
        x = next(name for name in times_x.input if name != half.output[0])
        gelu = helper.make_node("Gelu", [x], list(times_x.output), domain="com.microsoft")
        times_x.CopyFrom(gelu)  # the Div, Erf, Add and Mul before it are left unread


def _drop_nan_guards(graph: onnx.GraphProto) -> None:
    """Attention's ``Where(IsNaN(softmax), 0, softmax)``: a softmax row is NaN only when
    every key is masked, and every text's [CLS] token is a key. Two passes over each
    layer's attention weights saved."""
    consumers = _consumers(graph)
    for guard in [node for node in graph.node if node.op_type == "IsNaN"]:
        (where,) = consumers[guard.output[0]]
        for node in consumers[where.output[0]]:
            node.input[:] = [guard.input[0] if i == where.output[0] else i for i in node.input]


def _consumers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    found: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            found.setdefault(name, []).append(node)
    return found


class _IntegerProducts:
    """Each weight product of a graph as MatMulInteger on rows quantized per token."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.initializers = {i.name: i for i in graph.initializer}
        self.producers = {out: node for node in graph.node for out in node.output}
        self.nodes: list[onnx.NodeProto] = []
        self.constants: list[onnx.TensorProto] = []
        self.rows: dict[str, tuple[str, str, str | None]] = {}  # activation -> u, s, s · z

    def run(self) -> None:
        for node in self.graph.node:
            weight = self._weight(node)
            if weight is None:
                self.nodes.append(node)
            else:
                self._integer_product(node, *weight)
        del self.graph.node[:]
        self.graph.node.extend(self.nodes)
        self.graph.initializer.extend(self.constants)

    def _weight(self, node: onnx.NodeProto) -> tuple[np.ndarray, np.ndarray] | None:
        """The int8 weight and column scales a MatMul multiplies by, if it is
        ``MatMul(x, Mul(Cast(int8 constant), scale constant))``."""
        if node.op_type != "MatMul":
            return None
        widen = self.producers.get(node.input[1])
        if widen is None or widen.op_type != "Mul" or widen.input[1] not in self.initializers:
            return None
        cast = self.producers.get(widen.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in self.initializers:
            return None
        q = numpy_helper.to_array(self.initializers[cast.input[0]])
        if q.dtype != np.int8 or q.ndim != 2:
            return None
        scales = numpy_helper.to_array(self.initializers[widen.input[1]]).reshape(-1)
        return q, scales.astype(np.float32)

    def _integer_product(self, node: onnx.NodeProto, q: np.ndarray, c: np.ndarray) -> None:
        x, out = node.input[0], node.output[0]
        gelu = q.shape[0] == 4 * q.shape[1]  # a feed-forward block's output projection
        u, s, sz = self._quantize_rows(x, q.shape[0], shifted=gelu)
        column_sums = q.astype(np.int64).sum(axis=0).astype(np.float64) * c.astype(np.float64)
        weight = self._const(f"{out}_q", (q.astype(np.int16) + _WEIGHT_ZERO).astype(np.uint8))
        scales = self._const(f"{out}_c", c)
        weight_zero = self._const(f"{out}_qz", np.uint8(_WEIGHT_ZERO))
        self._add("MatMulInteger", [u, weight, "", weight_zero], f"{out}_i")
        self._add("Cast", [f"{out}_i"], f"{out}_f", to=TensorProto.FLOAT)
        self._add("Mul", [s, scales], f"{out}_sc")
        self._add("Mul", [f"{out}_f", f"{out}_sc"], f"{out}_p")
        if sz is None:
            shift = self._const(f"{out}_shift", (GELU_FLOOR * column_sums).astype(np.float32))
        else:
            sums = self._const(f"{out}_sums", column_sums.astype(np.float32))
            shift = self._add("Mul", [sz, sums], f"{out}_zero")
        self._add("Sub", [f"{out}_p", shift], out)

    def _quantize_rows(self, x: str, width: int, *, shifted: bool) -> tuple[str, str, str | None]:
        """``x``'s rows in uint8, their scales, and their scales times zero points (None
        for a shifted GELU output, whose zero point is 0)."""
        if x not in self.rows:
            self.rows[x] = (self._shifted if shifted else self._ranged)(x, width)
        return self.rows[x]

    def _shifted(self, x: str, width: int) -> tuple[str, str, None]:
        p = f"{x}_rows"
        x = self._add("Add", [x, self._const(f"{p}_floor", np.float32(GELU_FLOOR))], f"{p}_x")
        top = self._add("ReduceMax", [x, self._last(p)], f"{p}_max", keepdims=1)
        s = self._scale(p, top, self._const(f"{p}_zero", np.float32(0.0)))
        u = self._add("QuantizeLinear", [x, s], f"{p}_u", axis=-1, block_size=width,
                      output_dtype=TensorProto.UINT8)  # fmt: skip
        return u, s, None

    def _ranged(self, x: str, width: int) -> tuple[str, str, str]:
        p = f"{x}_rows"
        zero = self._const(f"{p}_zero", np.float32(0.0))  # the range always holds 0
        low = self._add("ReduceMin", [x, self._last(p)], f"{p}_min0", keepdims=1)
        low = self._add("Min", [low, zero], f"{p}_min")
        top = self._add("ReduceMax", [x, f"{p}_axis"], f"{p}_max0", keepdims=1)
        top = self._add("Max", [top, zero], f"{p}_max")
        s = self._scale(p, top, low)
        z = self._add("Div", [low, s], f"{p}_zs")
        z = self._add("Round", [self._add("Neg", [z], f"{p}_zn")], f"{p}_z")
        z8 = self._add("Cast", [z], f"{p}_z8", to=TensorProto.UINT8)
        u = self._add("QuantizeLinear", [x, s, z8], f"{p}_u", axis=-1, block_size=width)
        return u, s, self._add("Mul", [s, z], f"{p}_sz")

    def _last(self, p: str) -> str:
        return self._const(f"{p}_axis", np.array([-1], np.int64))

    def _scale(self, p: str, top: str, low: str) -> str:
        """A row's scale: its range over the 255 steps of uint8 (never 0)."""
        span = self._add("Sub", [top, low], f"{p}_span")
        span = self._add("Max", [span, self._const(f"{p}_tiny", np.float32(1e-12))], f"{p}_span1")
        return self._add("Div", [span, self._const(f"{p}_levels", np.float32(255.0))], f"{p}_s")

    def _add(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def _const(self, name: str, value: Any) -> str:
        self.constants.append(numpy_helper.from_array(np.asarray(value), name))
        return name


def _drop_unused(graph: onnx.GraphProto) -> None:
    """Remove the nodes and initializers nothing reads any more (the weights' widening)."""
    while True:
        used = {name for node in graph.node for name in node.input}
        used |= {output.name for output in graph.output}
        live = [node for node in graph.node if any(out in used for out in node.output)]
        if len(live) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(live)
    kept = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
