"""Graph IR and integer types."""
from Deeploy.ir.dtypes import *  # noqa: F401,F403
from Deeploy.ir.graph import Graph, Node, Tensor  # noqa: F401
