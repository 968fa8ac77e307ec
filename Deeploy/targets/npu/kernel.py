"""The job kernel of an NPU: ``<engine>_conv.inc`` of its driver library, the jobs of each plane
through the job queue, its registers from the layer's ``NpuConvParams`` and the engine's config word
(``config_word(p, signed_input)`` of the engine's ``ops`` module)."""

from __future__ import annotations

from Deeploy.platform import Kernel
from Deeploy.signature import Signature, param
from Deeploy.targets.npu.spec import NpuSpec

__all__ = ["job_kernel"]


def job_kernel(spec: NpuSpec, source: str, ops_module: str, extra: tuple = (),
               helpers: tuple[str, ...] = ()) -> Kernel:
    """The ``spec.op`` kernel on ``spec.engine``: ``source`` defines it, ``ops_module`` its ``config_word``
    and the ``helpers`` the engine's ``extra`` arguments (after the common ones) render with."""
    call = Signature(
        f"A {spec.op} layer on the NPU: the jobs of each plane, through the 2-deep job queue "
        "(acquire, write the job registers, trigger, wait).",
        (param("const TIN *restrict x", "${x[0].ptr}", "input planes [batch][H][W][Ki]"),
         param("const uint8_t *restrict w", "${x[1].ptr}", "encoded weights (bit planes, channel subtiles)"),
         param("const void *restrict scale", '${x[2].ptr if len(x) > 2 else "NULL"}',
               "normquant scale [Ko] (uint8 or int32, as the config word says), or NULL"),
         param("const int32_t *restrict bias", '${x[3].ptr if len(x) > 3 else "NULL"}', "normquant bias [Ko], or NULL"),
         param("TOUT *restrict y", "${y[0].ptr}", "output planes [batch][Ho][Wo][Ko]"),
         param("uint32_t batch", "${p.batch}", "planes"),
         param("uint32_t H", "${p.plane[0]}"), param("uint32_t W", "${p.plane[1]}", "input plane"),
         param("uint32_t Ki", "${p.cin}"), param("uint32_t Ko", "${p.cout}", "input and output channels"),
         param("uint32_t Ho", "${p.out_plane[0]}"), param("uint32_t Wo", "${p.out_plane[1]}", "output plane"),
         param("uint32_t pads", "${U(p.padding_word)}", "the padding register"),
         param("int32_t weight_offset", "${p.weight_offset}", "added to every stored weight"),
         param("uint32_t conf", "${U(config_word(p, x[0].dtype.signed))}", "the config register"), *extra),
        setup="<%! from Deeploy.codegen.c_values import Unsigned as U %>"
              f"<%! from {ops_module} import {', '.join(('config_word', *helpers))} %>",
        types={"TOUT": "the output's type (int8/uint8 after normquant, else int32)"})
    return Kernel(spec.op, source, call, ("TIN",), engine=spec.engine,
                  extra_types=lambda node, graph: (("TOUT", graph.tensors[node.outputs[0]].dtype),))
