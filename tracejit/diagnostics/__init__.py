"""Diagnostics: compile log, recompile explanations, advisor, HTML report."""
