# Sourced by bench scripts (from the repository's root): a work directory, and the background
# processes to end on exit. Add each child with `pids+=($!)`; both go when the script exits.
# wait_for FILE REGEX COUNT waits for a child's log.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

wait_for() {  # FILE REGEX COUNT: until FILE has COUNT lines matching REGEX (at most 30 s)
  for _ in $(seq 300); do
    [ "$(grep -cE "$2" "$1" 2>/dev/null || true)" -ge "$3" ] && return 0
    sleep 0.1
  done
  echo "no '$2' in $1 after 30 s:" >&2
  cat "$1" >&2
  exit 1
}
