"""Tenants and their API keys: key files, key lookup, fingerprints, reserved names, failed-key back-off.

A floor below ``bqas.service`` and ``bqas.review`` (both authenticate with it). Import the submodules
(:mod:`bqas.auth.keys`, :mod:`bqas.auth.tenants`, :mod:`bqas.auth.throttle`) directly: the store imports
``tenants``, so this package itself imports nothing.
"""
