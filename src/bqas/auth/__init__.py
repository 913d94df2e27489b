"""Tenants and their API keys: key files, key lookup, fingerprints, reserved names, failed-key back-off.

A floor below ``bqas.service`` and ``bqas.review`` (both authenticate with it), above the store. Import the
submodules (:mod:`bqas.auth.keys`, :mod:`bqas.auth.throttle`) directly; tenant names are :mod:`bqas.tenants`
(below the store, which checks them), so this package itself imports nothing.
"""
