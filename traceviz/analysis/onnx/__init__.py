"""ONNX Runtime: the exported graph, what each optimisation level fused, its profile."""
