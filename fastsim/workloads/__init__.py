"""Workloads lowered onto the design layer."""
