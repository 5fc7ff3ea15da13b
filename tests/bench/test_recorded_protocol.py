"""The timing protocol of a recorded entry (``bench/recorded_worker.recorded_protocol``): the CLI's
default ``--timing auto`` must become a protocol the samplers know (it reached them as 'auto' once,
and every recorded cell failed on the H200). The paths that decide without probing the GPU."""

from __future__ import annotations

from ktriage.bench.recorded_worker import recorded_protocol
from ktriage.measure.timing import PROTOCOLS, TimingOptions


def test_an_asked_protocol_is_kept_and_auto_resets_need_events() -> None:
    options = TimingOptions()
    for asked in PROTOCOLS:
        assert recorded_protocol(asked, {}, options, idempotent=True) == (asked, f"--timing {asked}")
    protocol, why = recorded_protocol("auto", {}, options, idempotent=False)
    assert protocol == "events" and protocol in PROTOCOLS and "not idempotent" in why
