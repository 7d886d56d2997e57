"""Burrow's loopback benchmark harness, run through bench/run.py (standard library only).

common     constants, log(), BenchError
procs      child processes: process groups, logs, pinning, killing
net        ports, readiness, a small HTTP(S) GET
sysinfo    /proc stats (CPU, RSS, PSS), versions, binary sizes, run metadata
targets    nginx and the iperf3 server
columns    the workloads (COLUMNS), the table's rows (METRICS) and the targets
context    the state of a run shared by modes and workloads
modes/     direct, socat, ssh-r, the burrow family, the HTTPS modes; MODES
workloads  wrk and iperf3, and one round of a mode through every column
scaling    the unpinned --scaling run
summary    medians and per-round ratios
report     Markdown and JSON
chart      the gnuplot chart
preflight  missing tools and unavailable modes
"""
