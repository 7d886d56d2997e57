"""The chart: each mode's throughput relative to socat, drawn by gnuplot from the JSON
document."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .common import log
from .context import Context
from .modes import MODES


# Rows of the chart: throughput metrics whose ratio to socat is the comparison.
CHART_METRICS = ["bulk1.gbps", "bulk8.gbps", "http1k_c1.rps", "http1k_c50.rps",
                 "http1k_c50_close.rps", "http1m_c50.rps", "http1k_c100.rps",
                 "http1k_c100_close.rps", "http1k_c1000.rps", "http1k_c1000_close.rps"]
CHART_LABELS = {"bulk1.gbps": "bulk 1", "bulk8.gbps": "bulk 8", "http1k_c1.rps": "1K c1",
                "http1k_c50.rps": "1K c50", "http1k_c50_close.rps": "1K c50 new",
                "http1m_c50.rps": "1M c50", "http1k_c100.rps": "1K c100",
                "http1k_c100_close.rps": "1K c100 new", "http1k_c1000.rps": "1K c1000",
                "http1k_c1000_close.rps": "1K c1000 new"}
TARGET_MARKED = ["burrow", "burrow-plain"]  # modes whose ratio targets the chart marks


def chart_data(doc: dict) -> tuple[list[str], list[str], list[list[str]]]:
    """(modes, target modes, rows) of the chart: per metric the ratio of each mode to socat,
    then each marked mode's target ("NaN" where there is none)."""
    ratio = doc["ratio_to_socat"]
    rows_keys = [k for k in CHART_METRICS
                 if any(k in ratio.get(m, {}) for m in doc["modes"] if m != "socat")]
    modes = [m for m in doc["modes"]
             if m != "socat" and any(k in ratio.get(m, {}) for k in rows_keys)]
    marked = [m for m in TARGET_MARKED if m in doc["modes"]]
    rows = []
    for k in rows_keys:
        row = [f'"{CHART_LABELS[k]}"']
        row += [f"{ratio[m][k]:.4f}" if k in ratio.get(m, {}) else "NaN" for m in modes]
        for m in marked:
            tgt = MODES[m].targets.get(k)
            row.append(tgt[0].removeprefix("≥ ") if tgt and tgt[1] is not None else "NaN")
        rows.append(row)
    return modes, marked, rows


CHART_GAP = 1  # empty bar widths between clusters


# One colour per mode (gnuplot's own cycle has eight, and the chart has up to eleven modes).
PALETTE = ["#9400d3", "#009e73", "#56b4e9", "#e69f00", "#f0e442", "#0072b2", "#e51e10",
           "#000000", "#8c564b", "#ff7fbf", "#7f7f7f", "#17becf"]


def bar_offset(j: int, n: int) -> float:
    """x offset from its cluster's centre of bar j of n in a gnuplot clustered histogram."""
    return (j - (n - 1) / 2) / (n + CHART_GAP)


def gnuplot_script(data: Path, png: Path, modes: list[str], marked: list[str],
                   terminal: str) -> str:
    n = len(modes)
    plots = [f"'{data}' using {i + 2}:xtic(1) lc rgb '{PALETTE[i % len(PALETTE)]}' title '{m}'"
             for i, m in enumerate(modes)]
    points = ["pt 7 ps 1.6 lc rgb 'black'", "pt 9 ps 1.8 lc rgb '#cc0000'"]
    for j, m in enumerate(marked):  # each target over its own mode's bar
        if m in modes:
            off = bar_offset(modes.index(m), n)
            plots.append(f"'{data}' using ($0{off:+.4f}):{n + 2 + j} with points "
                         f"{points[j % 2]} title '{m} target'")
    plots.append("1 with lines dt 2 lw 2 lc rgb 'gray40' title 'socat = 1'")
    return "\n".join([
        f"set terminal {terminal} size 1400,650 font ',10'",
        f"set output '{png}'",
        "set datafile missing 'NaN'",
        "set title 'Throughput relative to socat (same round, median of rounds; log scale)'",
        "set ylabel 'ratio to socat'",
        "set logscale y",
        "set yrange [0.05:20]",
        "set grid ytics",
        "set style data histograms",
        f"set style histogram clustered gap {CHART_GAP}",
        "set style fill solid 0.85 border -1",
        "set boxwidth 0.9",
        "set xtics nomirror",
        "set key outside right top vertical",
        "plot " + ", \\\n     ".join(plots),
        ""])


def write_chart(doc: dict, png: Path, tmp: Path) -> str | None:
    """Grouped bars of each mode's ratio to socat per column, the targets as points, drawn by
    gnuplot (pngcairo, else png).  Returns None if written, else gnuplot's complaint."""
    modes, marked, rows = chart_data(doc)
    data = tmp / "chart.dat"
    data.write_text("\n".join(" ".join(r) for r in rows) + "\n")
    script = tmp / "chart.gp"
    err = ""
    for terminal in ("pngcairo", "png"):
        script.write_text(gnuplot_script(data, png, modes, marked, terminal))
        try:
            r = subprocess.run(["gnuplot", str(script)], capture_output=True, text=True,
                               timeout=60, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "gnuplot did not finish within 60 s"
        if r.returncode == 0 and png.is_file() and png.stat().st_size > 0:
            return None
        err = r.stderr.strip()[-500:]
    return f"gnuplot failed: {err}"


def chart_markdown(ctx: Context, doc: dict) -> str:
    """Writes the PNG next to --out (same name, .png) and returns its Markdown.  Without
    gnuplot, or if it fails, says so loudly; the Markdown and JSON are written anyway."""
    if not ctx.args.out:
        return ""
    png = Path(ctx.args.out).with_suffix(".png")
    modes, _, rows = chart_data(doc)
    if not modes or not rows:
        log("no chart: no throughput ratio to socat to draw (needs socat, another mode and a "
            "throughput column)")
        return ""
    why = ("gnuplot is not installed (apt-get install gnuplot-nox; scripts/setup.sh does)"
           if not shutil.which("gnuplot") else write_chart(doc, png, ctx.tmp))
    if why:
        for line in ("=" * 70, f"WARNING: NO CHART WRITTEN: {why}", "=" * 70):
            log(line)
        return f"**No chart: {why}.**"
    log(f"wrote {png}")
    return (f"![Throughput of each mode relative to socat, with the targets]({png.name})\n\n"
            "The chart: each mode's median ratio to socat per throughput column (log scale; "
            "socat is the dashed line at 1), and the issue's targets for `burrow` and "
            "`burrow-plain` as points over their bars; drawn by gnuplot from the JSON.")
