"""Kernels of Siracusa_w_neureka: Siracusa's, plus the NPU job (``NeurekaConv``) on the
``neureka`` engine through its driver (``TargetLibraries/Neureka``)."""

from __future__ import annotations

from Deeploy.platform import Kernel
from Deeploy.signature import Signature, param
from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS

__all__ = ["NEUREKA_BINDINGS", "NEUREKA_CONV"]

_CALL = Signature(
    "A NeurekaConv layer on the NPU: one job per plane, through the 2-deep job queue "
    "(acquire, write the job registers, trigger, wait).",
    (param("const TIN *restrict x", "${x[0].ptr}", "input planes [batch][H][W][Ki]"),
     param("const uint8_t *restrict w", "${x[1].ptr}", "encoded weights (bit planes, channel subtiles)"),
     param("const void *restrict scale", '${x[2].ptr if len(x) > 2 else "NULL"}',
           "normquant scale [Ko] (uint8 or int32, as the config word says), or NULL"),
     param("const int32_t *restrict bias", '${x[3].ptr if len(x) > 3 else "NULL"}', "normquant bias [Ko], or NULL"),
     param("TOUT *restrict y", "${y[0].ptr}", "output planes [batch][Ho][Wo][Ko]"),
     param("uint32_t batch", "${p.batch}", "planes (one job each)"),
     param("uint32_t H", "${p.plane[0]}"), param("uint32_t W", "${p.plane[1]}", "input plane"),
     param("uint32_t Ki", "${p.cin}"), param("uint32_t Ko", "${p.cout}", "input and output channels"),
     param("uint32_t Ho", "${p.out_plane[0]}"), param("uint32_t Wo", "${p.out_plane[1]}", "output plane"),
     param("uint32_t pads", "${U(p.padding_word)}", "the padding register"),
     param("int32_t weight_offset", "${p.weight_offset}", "added to every stored weight"),
     param("uint32_t conf", "${U(config_word(p, x[0].dtype.signed))}", "the config register")),
    setup="<%! from Deeploy.codegen.c_values import Unsigned as U %>"
          "<%! from Deeploy.targets.siracusa_w_neureka.ops import config_word %>",
    types={"TOUT": "the output's type (int8/uint8 after normquant, else int32)"})

NEUREKA_CONV = Kernel("NeurekaConv", "neureka_conv.inc", _CALL, ("TIN",), engine="neureka",
                      extra_types=lambda node, graph: (("TOUT", graph.tensors[node.outputs[0]].dtype),))

NEUREKA_BINDINGS = {**SIRACUSA_BINDINGS, "NeurekaConv": (NEUREKA_CONV,)}
