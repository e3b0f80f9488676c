"""ONNX Runtime backends for ``traceviz run --backends eager,compile,onnxruntime``.

Export the model (``export``), run it under each ORT optimization level (``sessions``), check
every level's outputs against eager and name the culprit node of a failing one (``check``,
``isolate``), and time every backend round-robin (``latency``); ``backend.run_onnxruntime``
does it all for the runner. Needs the ``onnx`` extra (onnx, onnxruntime, onnxscript): nothing
here is imported by ``import traceviz`` or by a plain eager/compile run.
"""
