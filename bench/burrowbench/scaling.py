"""The unpinned run (--scaling): how the relay scales with cores."""

from __future__ import annotations

from .columns import METRICS, SCALING_WORKERS
from .common import log
from .context import Context
from .modes import BurrowWorkersMode
from .summary import per_round_ratio, summarize
from .rounds import run_round


def run_scaling(ctx: Context, columns: list[str]) -> list[dict]:
    """Interleaved rounds of the relay with 1 and with 2 worker threads, relay and agent not
    pinned; nginx, iperf3 and wrk stay on the load CPU."""
    modes = [BurrowWorkersMode(ctx, n) for n in SCALING_WORKERS]
    rounds = []
    for i in range(ctx.args.rounds):
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        log(f"scaling round {i + 1}/{ctx.args.rounds}: {', '.join(m.name for m in order)}")
        rounds.append({"round": i + 1, "order": [m.name for m in order],
                       "results": run_round(ctx, order, columns)})
    return rounds


SCALING_METRICS = ["http1k_c1000.rps", "http1k_c1000.p99_ms", "http1k_c1000.errors",
                   "http1k_c1000.cpu_per_1k", "bulk8.gbps"]


def summarize_scaling(rounds: list[dict]) -> dict:
    """Per workers setting the medians, and the per-round ratio of 2 workers to 1."""
    names = [f"burrow-workers{n}" for n in SCALING_WORKERS]
    med, _ = summarize(rounds, names)
    ratio = {k: per_round_ratio(rounds, names[-1], names[0], k) for k in SCALING_METRICS}
    return {"median": med, "ratio": {k: v for k, v in ratio.items() if v is not None}}


def render_scaling(summary: dict, columns: list[str]) -> str:
    names = [f"burrow-workers{n}" for n in SCALING_WORKERS]
    head = ["workload", "unit"] + [f"relay `--workers {n}`" for n in SCALING_WORKERS] \
        + [f"{SCALING_WORKERS[-1]} / {SCALING_WORKERS[0]}"]
    lines = [
        "## Unpinned: how the relay scales with cores",
        "",
        "Relay and agent without taskset (free to use every core, next to nginx, iperf3 and "
        "wrk, which stay pinned to the load CPU), the relay with `--workers 1` and with "
        f"`--workers {SCALING_WORKERS[-1]}`, in interleaved rounds; the last column is the "
        "median of the per-round ratios. Not comparable with the pinned table above.",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|" + "---:|" * (len(head) - 2),
    ]
    for key in SCALING_METRICS:
        meta = METRICS.get(key) or {"label": "tunnel CPU per 1,000 req (1 KiB, 1,000 "
                                             "keep-alive)", "unit": "CPU-ms", "fmt": "{:.1f}"}
        if key.split(".")[0] not in columns:
            continue
        cells = [meta["label"], meta["unit"]]
        for n in names:
            v = summary["median"].get(n, {}).get(key)
            cells.append("n/a" if v is None else meta["fmt"].format(v))
        r = summary["ratio"].get(key)
        cells.append("n/a" if r is None or key.endswith(".errors") else f"{r:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
