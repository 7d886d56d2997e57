"""Medians over rounds and the per-round ratios between modes."""

from __future__ import annotations

import statistics

from .columns import METRICS
from .modes import MODES


def per_round_ratio(rounds: list[dict], m: str, base: str, k: str) -> float | None:
    """Median over rounds of m's value over base's value in the same round."""
    rs = []
    for r in rounds:
        a = r["results"].get(m, {}).get("metrics", {}).get(k)
        b = r["results"].get(base, {}).get("metrics", {}).get(k)
        if a is not None and b:
            rs.append(a / b)
    return statistics.median(rs) if rs else None


def summarize_vs(rounds: list[dict], modes: list[str]) -> dict:
    """For modes with compare_to: medians of the per-round ratios to that mode."""
    rel: dict = {}
    for m in modes:
        base = MODES[m].compare_to
        if not base or base not in modes:
            continue
        rel[m] = {}
        for k in METRICS:
            v = per_round_ratio(rounds, m, base, k)
            if v is not None:
                rel[m][k] = v
    return rel


def summarize(rounds: list[dict], modes: list[str]) -> tuple[dict, dict]:
    """Medians over rounds per mode, and medians of the per-round ratios to socat."""
    med: dict = {m: {} for m in modes}
    ratio: dict = {m: {} for m in modes}
    keys = sorted({k for r in rounds for m in modes
                   for k in r["results"].get(m, {}).get("metrics", {})})
    for m in modes:
        for k in keys:
            vals = [r["results"][m]["metrics"][k] for r in rounds
                    if k in r["results"].get(m, {}).get("metrics", {})]
            if vals:
                med[m][k] = statistics.median(vals)
            if "socat" in modes:
                rs = []
                for r in rounds:
                    a = r["results"].get(m, {}).get("metrics", {}).get(k)
                    b = r["results"].get("socat", {}).get("metrics", {}).get(k)
                    if a is not None and b:
                        rs.append(a / b)
                if rs:
                    ratio[m][k] = statistics.median(rs)
    return med, ratio
