"""Graph IR: tensors, nodes, regions and element types."""
from Deeploy.ir.dtypes import *  # noqa: F401,F403
from Deeploy.ir.graph import Graph, Node, Tensor  # noqa: F401
from Deeploy.ir.region import BodyInput, InputKind, Region, body_attributes, body_inputs  # noqa: F401
