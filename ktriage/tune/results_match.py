"""Which config each time of a tune results file belongs to: matched by the config, never by rank.

Why: a tune bundle names its variants ``<toolchain id>+tune<i>``, ``i`` from the ranking of the
screening that built it. ``ktriage tune --results R`` screens again; when the ranking changed meanwhile
(a ktriage upgrade, another ``--warps`` or ``--top-k``, a model change), ``+tune1`` is another config
than the one the GPU timed, and reading by id gives a wrong recommendation with real GPU numbers
behind it. Each variant's toolchain record therefore carries its config (``tune_config``), the bench
copies the records into the results file (``run.toolchains``), and the reader attaches each time to
the current candidate of the same config. Results of benches before that record the config's label
(``variant``), which spells it out; a record with neither is read by rank, and said so.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ktriage.tune.space import TuneConfig

DEFAULT_VARIANT = "default"  # the config label of the library's own config (the toolchain itself)
CONFIG_KEY = "tune_config"  # a tuned variant's toolchain record: its TuneConfig.to_json()


def recorded_configs(run_toolchains: Sequence[Mapping[str, object]]) -> dict[str, TuneConfig | None]:
    """Variant toolchain id -> the config its record in a results file names: the ``tune_config``,
    else the config its ``variant`` label spells; None where the record names neither."""
    out: dict[str, TuneConfig | None] = {}
    for record in run_toolchains:
        if record.get("variant_of"):
            config = TuneConfig.from_json(record.get(CONFIG_KEY)) or TuneConfig.from_label(record.get("variant"))
            out[str(record.get("id"))] = config
    return out


@dataclass(frozen=True)
class Matching:
    """How one input's timed toolchains map onto this tune's configs."""

    labels: dict[str, str]  # toolchain id in the results -> the candidate's config label (DEFAULT_VARIANT: library's)
    by_rank: tuple[str, ...]  # ids read by rank: the results record no config for them
    not_candidates: dict[str, str]  # id -> the config it timed (or why unknown), which is no candidate here


def match_variants(
    timed_ids: Collection[str], variants: Mapping[str, str], recorded: Mapping[str, TuneConfig | None]
) -> Matching:
    """Attach each timed id to a candidate of ``variants`` (this bundle: id -> config label) by the
    config ``recorded`` names for it; an id without one keeps its rank (the bundle's id), an id whose
    config is no candidate here is named in ``not_candidates`` and compared with nothing."""
    candidates = {label for label in variants.values() if label != DEFAULT_VARIANT}
    bases = [vid for vid, label in variants.items() if label == DEFAULT_VARIANT]
    labels: dict[str, str] = {}
    by_rank: list[str] = []
    not_candidates: dict[str, str] = {}
    for tc in sorted(timed_ids):
        if variants.get(tc) == DEFAULT_VARIANT:
            labels[tc] = DEFAULT_VARIANT
        elif not any(tc.startswith(f"{base}+tune") for base in bases):
            continue  # another toolchain (a compare-with release, the native baseline)
        elif (config := recorded.get(tc)) is not None:
            if config.label() in candidates:
                labels[tc] = config.label()
            else:
                not_candidates[tc] = config.label()
        elif tc in variants:
            labels[tc] = variants[tc]
            by_rank.append(tc)
        else:
            not_candidates[tc] = "its config is not recorded, and this bundle has no variant of that id"
    return Matching(labels, tuple(by_rank), not_candidates)
