"""Frontend: ONNX loading, reference-data mapping, shape and type inference."""
from Deeploy.frontend.io_data import load_npz_arrays, map_arrays  # noqa: F401
from Deeploy.frontend.onnx_loader import load_onnx  # noqa: F401
from Deeploy.frontend.type_inference import assign_input_types, infer_graph  # noqa: F401
