"""Random small integer graphs (hypothesis strategies) checked against the reference interpreter,
onnxruntime and the compiled C of the Generic, Siracusa and tiled Siracusa runners."""
