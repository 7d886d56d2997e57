"""The results written out: the Markdown table and document, and the JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .chart import chart_markdown
from .columns import COLUMNS, METRICS, STEP_ERROR_LIMIT, WRK_ERROR_KINDS
from .common import SHARE_DOMAIN, SHARE_NAME, log
from .context import Context
from .modes import Mode
from .scaling import render_scaling, summarize_scaling
from .summary import summarize, summarize_vs
from .sysinfo import loadavg
from .workloads import QUIET_BUSY, QUIET_SAMPLE, QUIET_TIMEOUT



def _wakeups(w: dict | None) -> str:
    """The header's pipe round trips (sysinfo.wakeups), or why there are none."""
    if not w or w.get("same_cpu") is None or w.get("cross_cpu") is None:
        return "not measured"
    return (f"{w['same_cpu']} µs with both on the tunnel CPU, {w['cross_cpu']} µs across to the "
            "load CPU (one request at a time through a tunnel is a chain of such wake-ups)")

def fmt_val(key: str, v) -> str:
    if v is None:
        return "n/a"
    return METRICS[key]["fmt"].format(v)


def stopped_rounds(rounds: list[dict], m: str, column: str | None) -> list[str]:
    """Why column was skipped for mode m ("stopped at 100: ..."), one entry per round."""
    if column is None:
        return []
    return [r["results"][m]["skipped"][column] for r in rounds
            if column in r["results"].get(m, {}).get("skipped", {})]


def value_cell(key: str, m: str, med: dict, stopped: list[str], n_rounds: int) -> str:
    """A mode's median, with the error kinds of an error count, or why the step never ran."""
    v = med[m].get(key)
    if v is None and stopped:
        return stopped[0].split(":")[0]  # "stopped at 100"
    cell = fmt_val(key, v)
    if key.endswith(".errors") and v is not None:
        detail = [med[m].get(key.replace(".errors", f".err_{k}")) for k in WRK_ERROR_KINDS]
        if any(detail):
            cell += " (" + ", ".join(f"{k} {d:g}" for k, d in zip(WRK_ERROR_KINDS, detail)
                                     if d) + ")"
    if stopped:
        cell += f" ({stopped[0].split(':')[0]} in {len(stopped)} of {n_rounds} rounds)"
    return cell


def target_cell(mo: Mode, key: str, med: dict, ratio_of_mode: dict, vs_of_mode: dict,
                stopped: list[str]) -> str:
    """The target text with ✓/✗: a ratio (to socat, or to compare_to for targets_vs) or an
    absolute check of the median.  A step stopped by the error ladder fails its targets."""
    vs = not mo.targets
    tgt = (mo.targets_vs if vs else mo.targets).get(key)
    if not tgt:
        return ""
    text, pred = tgt
    ok = None
    base = vs_of_mode if vs else ratio_of_mode
    if stopped:
        ok = False
    elif pred is not None and key in base:
        ok = pred(base[key])
    elif pred is None and key in mo.abs_checks and key in med:
        ok = mo.abs_checks[key](med[key])
    return text + ("" if ok is None else (" ✓" if ok else " ✗"))


def render_table(ctx: Context, modes: list[str], columns: list[str], med: dict,
                 ratio: dict, rounds: list[dict]) -> str:
    mode_objs = {m: ctx.modes[m] for m in modes}
    show_ratio = "socat" in modes
    rel = summarize_vs(rounds, modes)
    target_modes = [m for m in modes if mode_objs[m].targets or
                    (m in rel and mode_objs[m].targets_vs)]
    head = ["workload", "unit"]
    for m in modes:
        head.append(m)
        if show_ratio and m != "socat":
            head.append(f"{m} / socat")
        if m in rel:
            head.append(f"{m} / {mode_objs[m].compare_to}")
    for m in target_modes:
        head.append(f"{m} target" + (f" (vs {mode_objs[m].compare_to})"
                                     if not mode_objs[m].targets else ""))
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(
        ["---", "---"] + ["---:"] * (len(head) - 2 - len(target_modes))
        + ["---"] * len(target_modes)) + "|"]
    for key, meta in METRICS.items():
        if meta["column"] is not None and meta["column"] not in columns:
            continue
        stopped = {m: stopped_rounds(rounds, m, meta["column"]) for m in modes}
        if not any(key in med[m] or stopped[m] for m in modes):
            continue
        label = meta["label"]
        if meta["better"]:
            label += " (higher is better)" if meta["better"] == "higher" else " (lower is better)"
        row = [label, meta["unit"]]
        for m in modes:
            row.append(value_cell(key, m, med, stopped[m], len(rounds)))
            if show_ratio and m != "socat":
                r = ratio[m].get(key) if meta["ratio"] else None
                row.append("n/a" if r is None else f"{r:.2f}")
            if m in rel:
                r = rel[m].get(key) if meta["ratio"] else None
                row.append("n/a" if r is None else f"{r:.2f}")
        for m in target_modes:
            row.append(target_cell(mode_objs[m], key, med[m], ratio[m], rel.get(m, {}),
                                   stopped[m]))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _longest_wait(rounds: list[dict]) -> str:
    """The longest wait for quiet after a load, and which mode's column it followed."""
    waits = [(raw.get("quiet_wait_s", 0.0), m, c) for r in rounds
             for m, out in r["results"].items() for c, raw in out["columns"].items()]
    if not waits:
        return "no load ran"
    s, m, c = max(waits)
    return f"the longest wait {s:.1f} s, after {m}'s {c}"


def render_markdown(ctx: Context, meta: dict, table: str, rounds: list[dict],
                    modes: list[str], chart_md: str, scaling_md: str) -> str:
    a = ctx.args
    md = [
        "# Burrow benchmarks",
        "",
        "Command:",
        "",
        "```",
        meta["command"],
        "```",
        "",
        f"- date: {meta['date']}",
        f"- nproc: {meta['nproc']} (cpu_count {meta['cpu_count']})",
        f"- CPU: {meta['cpu_model']}",
        f"- kernel: {meta['kernel']}; one system call (getppid) {meta.get('syscall_ns', '?')} ns; "
        f"meltdown: {meta.get('meltdown', '?')}",
        "- one byte over pipes to a process and back, each side blocked in read(): "
        f"{_wakeups(meta.get('wakeup_us'))}",
        f"- burrow: {meta['versions'].get('burrow') or 'n/a'}; git {meta['git'] or 'n/a'}",
        f"- tools: {'; '.join(f'{k}: {v}' for k, v in meta['versions'].items() if k != 'burrow')}",
        f"- rounds: {a.rounds}, wrk -d {a.duration}s, iperf3 -t {a.iperf_time}; "
        f"tunnel processes pinned to CPU {a.tunnel_cpu}, nginx/iperf3/wrk to CPU {a.load_cpu}"
        + ("" if ctx.procs.pin else " (pinning DISABLED)"),
        f"- RLIMIT_NOFILE for children: {meta['nofile']}; nginx multi_accept "
        f"{getattr(a, 'nginx_multi_accept', 'on')}",
        f"- between workloads: {a.settle} s, then until every CPU was under "
        f"{QUIET_BUSY:.0%} busy over {QUIET_SAMPLE} s and the mode's forked children had "
        f"exited (at most {QUIET_TIMEOUT:.0f} s); {_longest_wait(rounds)}",
        f"- load average (1/5/15 min) at start: {meta['loadavg_start']}; "
        f"at end: {meta['loadavg_end']}",
        "",
        "**These numbers are noisy.** They come from one small, shared machine "
        f"({meta['nproc']} cores, other work running), all on 127.0.0.1. Each value is the "
        "median over rounds; in a round each workload runs through every mode before the next "
        "workload (the modes' order rotates every round), and each ratio is computed against "
        "socat's run of the same workload *within* a round, then the median of those ratios "
        "is taken. Compare ratios, not absolute values, and re-run before drawing conclusions "
        "from small differences.",
        "",
        "Modes:",
        "",
    ]
    for m in modes:
        md.append(f"- `{m}`: {ctx.modes[m].describe()}")
    md += ["", binary_sizes_line(meta), "", table, "", chart_md, ""]
    notes = []
    for r in rounds:
        for m in modes:
            res = r["results"].get(m, {})
            for e in res.get("errors", []):
                notes.append(f"- round {r['round']}, {m}: {e.splitlines()[0]}")
            for c, why in res.get("skipped", {}).items():
                notes.append(f"- round {r['round']}, {m}, {c}: {why}")
            for c, raw in res.get("columns", {}).items():
                # The ladders' error counts are rows of the table already.
                if COLUMNS[c]["kind"] == "wrk" and raw.get("errors") and \
                        f"{c}.errors" not in METRICS:
                    notes.append(f"- round {r['round']}, {m}, {c}: wrk errors "
                                 f"{raw['error_detail']}")
    if notes:
        md += ["Problems seen during the run:", ""] + notes + [""]
    md += ["Per-round order: " + "; ".join(
        f"{r['round']}: {', '.join(r['order'])}" for r in rounds), ""]
    md += ["How the numbers are taken (bench/README.md has the details):", "",
           "- CPU per 1,000 requests and per GB: user+system time of the tunnel's processes "
           "(socat and its forked children; burrow relay and agents; sshd, its session "
           "processes and ssh) during the 1 KiB / 50 keep-alive column, per 1,000 requests "
           "wrk completed, and during the 1-stream bulk column, per 10^9 bytes iperf3 "
           "received.",
           "- CPU busy: the share of the column's time each CPU was busy (user, system, irq, "
           "softirq; from /proc/stat, so the kernel's loopback work and anything else on it "
           "count): a load CPU near 100 % means nginx and wrk set the rate, not the tunnel.",
           "- Context switches per MB: every thread of the same processes (socat: n/a, its "
           "forked child exits with the connection), voluntary and not, during the 1-stream "
           "bulk column, per 10^6 bytes received: how many wake-ups the bytes cost.",
           "- Memory: VmRSS of the burrow relay (ssh-r: the sshd listener) before any agent "
           "connects; VmRSS when idle (tunnels registered, before any visitor) and VmHWM after "
           "the load columns, of the relay, the socat listener (its forked children not "
           "included) or the sshd session process that holds the forward; the largest VmRSS "
           "of that process sampled every 20 ms during the 1,000 keep-alive column; the first "
           "agent's (ssh client's) VmRSS when idle with one tunnel; the sum of PSS over every "
           "tunnel process when idle.",
           f"- Ladders: the 1,000-connection step of a kind runs only if the 100-connection "
           f"step had at most {STEP_ERROR_LIMIT:.0%} errors (wrk socket errors and non-2xx "
           "responses per completed request), else it shows \"stopped at 100\" and fails "
           "its targets.",
           "- Relay restart: with the tunnels registered and idle, SIGTERM to the relay, wait "
           "for its exit, start it again with the same ports and state directory; the time "
           "runs from just before the new relay is spawned to the first successful GET "
           "through the tunnel (one try every 5 ms). The agents redial on their own with "
           "their backoff (after a relay that said it was going away: 12-25 ms, then 25-50 ms, "
           "then 50-100 ms doubling), which is part of this figure.",
           "- 200 tunnels: one `burrow up` agent with 200 `[[service]]` tables (ssh-r: one "
           "ssh with 200 `-R`), from its start until all 200 public ports are announced "
           "(ssh-r: listening); relay VmRSS after minus before (ssh-r: PSS of sshd's process "
           "tree); the agent's (ssh's) VmRSS.",
           "- HTTP-only modes (https-direct and the HTTPS share URL modes) skip the bulk TCP "
           "columns, which show n/a; wrk reaches "
           f"https://{SHARE_NAME}.{SHARE_DOMAIN}:PORT on 127.0.0.1 through "
           "bench/wrk-loopback.lua, so the name is the TLS SNI and the Host header.", ""]
    if scaling_md:
        md += [scaling_md, ""]
    return "\n".join(md)


def binary_sizes_line(meta: dict) -> str:
    sizes = meta.get("binary_sizes", {})
    if not sizes:
        return ""
    return "Binary sizes: " + "; ".join(f"{k} {v / 2**20:.2f} MiB" for k, v in sizes.items()) \
        + " (shared libraries such as libcrypto not included)."


def write_outputs(ctx: Context, meta: dict, rounds: list[dict], scaling: list[dict],
                  started: float) -> None:
    args = ctx.args
    meta["loadavg_end"] = loadavg()
    med, ratio = summarize(rounds, args.mode_list)
    doc = {**meta, "config": {k: v for k, v in vars(args).items()},
           "modes": args.mode_list, "columns": args.column_list,
           "metrics": {k: dict(v) for k, v in METRICS.items()},
           "median": med, "ratio_to_socat": ratio,
           "ratio_to_compared_mode": summarize_vs(rounds, args.mode_list), "rounds": rounds}
    scaling_md = ""
    if scaling:
        doc["scaling"] = {"columns": args.scaling_column_list, "rounds": scaling,
                          **summarize_scaling(scaling)}
        scaling_md = render_scaling(doc["scaling"], args.scaling_column_list)
    doc["elapsed_s"] = round(time.monotonic() - started, 1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
        log(f"wrote {args.json}")
    table = render_table(ctx, args.mode_list, args.column_list, med, ratio, rounds)
    md = render_markdown(ctx, meta, table, rounds, args.mode_list, chart_markdown(ctx, doc),
                         scaling_md)
    print(md)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(md)
        log(f"wrote {args.out}")
