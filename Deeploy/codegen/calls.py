"""A layer's kernel call: its ``CallParts`` on given buffers (the whole layer, a tile, or one
iteration of a rolled region)."""

from __future__ import annotations

from Deeploy.binding import Layer
from Deeploy.codegen.buffers import BufferNames
from Deeploy.codegen.c_values import CallParts, render_parts

__all__ = ["call_parts", "layer_call_parts", "render_call"]


def call_parts(layer: Layer, node, x: list, y: list, scratch: str, shared: str, fill: str = "1") -> CallParts:
    """The parts of ``layer``'s kernel call for ``node`` (the layer's node, or a tile node) on the
    buffers ``x`` and ``y``; ``fill``: whether the call fills its shared tables (a tiled layer's
    later calls of a class find them filled)."""
    return render_parts(layer.kernel.call, fn=layer.variant, node=node, p=node.params, x=x, y=y,
                        scratch=scratch, shared=shared, fill=fill)


def layer_call_parts(layer: Layer, names: BufferNames) -> CallParts:
    node = layer.node
    return call_parts(layer, node, [names.buf(i) if i else None for i in node.inputs],
                      [names.buf(o) if o else None for o in node.outputs], names.scratch(node.name),
                      names.scratch(node.name, layer.shared_offset))


def render_call(layer: Layer, names: BufferNames) -> str:
    return "".join(map(str, layer_call_parts(layer, names)))
