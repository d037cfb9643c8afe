"""Metric names: ir_measures' own, each computed by the first provider here that supports it, and the measures a
system reads beside them (R-FLOPS from a SPLADE run's FLOPS file; alignment and uniformity from a geometry file)."""
from __future__ import annotations

import ir_measures

# ir_measures' own names; computed by the first of these providers that supports the measure, so a
# number never depends on which optional providers a machine happens to have.
MEASURE_PROVIDERS = ("pytrec_eval", "msmarco")
MEASURE_EXAMPLES = "P@20, nDCG@20, RR@10, AP, R@1000"
R_FLOPS = "R-FLOPS"     # a SPLADE metrics file's per-query FLOPS against the index (their mean: the paper's R-FLOPS)
# A dense table's representation measures (Wang & Isola 2020; DPTDR Table 8), beside ir_measures' names: read from a
# geometry file (``PATHS.dense_geometry``, ``untrained_geometry``), not from a run
ALIGNMENT, UNIFORMITY = "alignment", "uniformity"
GEOMETRY_METRICS = (ALIGNMENT, UNIFORMITY)


def measure(name: str) -> ir_measures.Measure:
    """The ir_measures measure of a metric name; ValueError naming the problem and the allowed forms."""
    try:
        parsed = ir_measures.parse_measure(name)
    except (NameError, ValueError, SyntaxError, TypeError, AttributeError):
        raise ValueError(f"{name!r} is not an ir_measures measure (e.g. {MEASURE_EXAMPLES})") from None
    if str(parsed) != name:
        raise ValueError(f"ir_measures calls {name!r} {str(parsed)!r}: use its name")
    cutoff = parsed.params.get("cutoff")
    if cutoff is not None and (not isinstance(cutoff, int) or cutoff < 1):
        raise ValueError(f"{name!r}: the cutoff must be a positive integer")
    if measure_provider(parsed) is None:
        raise ValueError(f"{name!r}: none of the providers {', '.join(MEASURE_PROVIDERS)} computes it "
                         f"(e.g. {MEASURE_EXAMPLES})")
    return parsed


def measure_provider(parsed: ir_measures.Measure):
    """The provider that computes ``parsed`` (the first of MEASURE_PROVIDERS that supports it), or None."""
    for name in MEASURE_PROVIDERS:
        provider = ir_measures.providers.registry[name]
        if provider.is_available() and provider.supports(parsed):
            return provider
    return None
