from __future__ import annotations

import pytest

from reprolab import registry
from reprolab.contract import MethodSpec


def test_discovers_method_folders():
    assert "ensloss" in registry.slugs()
    assert registry.slugs() == sorted(registry.slugs())


def test_unknown_slug_lists_valid_ones():
    with pytest.raises(registry.UnknownMethodError) as err:
        registry.get("nosuch")
    assert "unknown method 'nosuch'" in str(err.value)
    assert "ensloss" in str(err.value)


def test_get_is_lazy_and_returns_the_spec():
    spec = registry.get("ensloss")
    assert isinstance(spec, MethodSpec) and spec.slug == "ensloss"
    assert registry.hooks("ensloss").__name__ == spec.hooks
