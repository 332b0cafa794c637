"""The compiler: a visible pass pipeline from a traced Program to an executable."""
from tracejit.compiler.pipeline import compile_program, optimize_text  # noqa: F401
