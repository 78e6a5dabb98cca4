#!/usr/bin/env bash
# Run the same tests N times in a row and stop at the first failure: how a flaky test shows
# itself (one failure in 14 runs is invisible in a single `make test`). Prints one line per run
# (its time and the load average at its end) and, at the end, how many runs passed in a row.
#
#   scripts/repeat_tests.sh                  # 20 runs of tests/server and tests/agents (from anywhere)
#   scripts/repeat_tests.sh 5 tests/index    # 5 runs of another directory
#   REPEAT_PYTEST_ARGS="-n 2 --dist loadfile" scripts/repeat_tests.sh   # as `make test` runs them
#
# Exit status: 0 when all N runs passed, 1 at the first failing run (its output is kept in
# repeat-run-K.log in the working directory; the passing runs' logs are removed), 2 for usage.
set -u

runs=${1:-20}
case $runs in
    '' | *[!0-9]* | 0) echo "repeat_tests.sh: the number of runs must be a positive integer, not '$runs'" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && shift
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$here/tests/server" "$here/tests/agents"
# Word splitting on purpose: both are space-separated lists (REPEAT_PYTEST="python -m pytest").
# shellcheck disable=SC2206
pytest=(${REPEAT_PYTEST:-$here/.venv/bin/pytest})
# shellcheck disable=SC2206
extra=(${REPEAT_PYTEST_ARGS:-})

start=$(date +%s)
for ((i = 1; i <= runs; i++)); do
    log=repeat-run-$i.log
    t0=$(date +%s)
    "${pytest[@]}" -p no:cacheprovider "${extra[@]}" "$@" >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
    summary=$(tail -n 1 "$log")
    if [ "$rc" -ne 0 ]; then
        echo "run $i/$runs FAILED (exit $rc) after $((t1 - t0)) s, load $load: $summary"
        echo "repeat_tests.sh: $((i - 1)) of $runs runs passed in a row before run $i failed; its output: $log"
        exit 1
    fi
    rm -f "$log"
    echo "run $i/$runs passed in $((t1 - t0)) s, load $load: $summary"
done
echo "repeat_tests.sh: $runs of $runs runs passed in a row in $(($(date +%s) - start)) s"
