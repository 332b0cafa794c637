"""Diagnostics: the jit advisor, the HTML report, and the persistent compile cache's public face.

The compile log and recompile explanations are :mod:`tracejit.compile_log`
(below the API, which calls it on every compile); the persistent cache's
implementation is the CPU backend's :mod:`tracejit.backends.cpu.object_cache`.
"""
