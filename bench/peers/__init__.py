"""Peer systems, installed on demand from the package registries."""
