"""Primitives: control_flow."""
