"""Shared assets: one module per asset, each exposing ``ASSET = AssetSpec(...)``.

An asset is built once by the DVC stage ``assets@<name>`` into ``data/assets/<name>/``
and read by every method that lists it in ``MethodSpec.assets``. Modules here must be
cheap to import; the build function imports what it needs.
"""
