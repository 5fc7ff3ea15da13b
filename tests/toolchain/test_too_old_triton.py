"""A Triton older than ktriage supports, as a toolchain: the error says so and its fix names what works."""

from __future__ import annotations

from typing import Any

import pytest

from ktriage.errors import ToolchainError


@pytest.mark.slow
def test_triton_3_1_is_refused_with_a_fix_that_picks_a_supported_release(toolchain: Any) -> None:
    """Triton 3.1.0 failed its probe with "ktriage compiles with Triton 3.2 and newer", and the fix said to
    remove and re-add the toolchain: that builds the same 3.1.0 again. The fix names the releases that
    work. Since s22i a release below 3.2 is refused before anything installs (nothing downloaded); a local
    wheel or host Triton that old still reaches the probe, which says the same (tests/toolchain/test_home_admin.py)."""
    with pytest.raises(ToolchainError) as info:
        toolchain("triton==3.1.0")
    assert (
        info.value.problem == "Triton 3.1.0 is older than ktriage supports: ktriage compiles with Triton 3.2 and newer"
    )
    assert info.value.fix.startswith("pick Triton 3.2 or newer: a supported release (triton==3.2.0, "), info.value.fix
    assert "remove" not in info.value.fix
