"""Algorithms written as tux2 programs (schema + UDFs + stage sequence)."""
