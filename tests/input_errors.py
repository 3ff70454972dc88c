"""The bad-input assertion the tests share: a call raises ``InputError`` naming ``field``."""

from typing import Any

import pytest

from solvers.errors import InputError


def assert_names(field: str, fn: Any, *args: Any, **kwargs: Any) -> InputError:
    """``fn(*args, **kwargs)`` raises :class:`InputError` whose field is ``field``; returns the error."""
    with pytest.raises(InputError) as e:
        fn(*args, **kwargs)
    assert e.value.field == field, (e.value.field, e.value.reason)
    return e.value
