# Sourced by bench scripts (from the repository's root): a work directory, and the background
# processes to end on exit. Add each child with `pids+=($!)`; both go when the script exits.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
