#!/usr/bin/env bash
# `make demo`: the main job on the bundled sample, offline, through the real components
# (docs/QUICKSTART.md walks the same path step by step):
#   extract -> build -> drsearch serve -> drsearch run -> drsearch score -> drsearch report
# The agent's model and the judge are scripted OpenAI-compatible servers on 127.0.0.1
# (`drsearch dev model --script agent|judge`): real HTTP, no weights, no network.
# Every server started here is stopped on exit, whatever happens.
#
# Environment: DRSEARCH_BIN (default .venv/bin), DEMO_OUT (default demo-out).
set -euo pipefail
BIN=${DRSEARCH_BIN:-.venv/bin}
OUT=${DEMO_OUT:-demo-out}
DRSEARCH="$BIN/drsearch"
PIDS=()
stop() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT
free_port() { "$BIN/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

mkdir -p "$OUT"
rm -rf "$OUT/run" "$OUT/scores.json" "$OUT/report"
echo "== 1. corpus: extract the sample crawl, dedup + index it"
"$DRSEARCH" corpus extract data/sample/crawl --out "$OUT/docs.jsonl" --force --quiet
"$DRSEARCH" corpus build "$OUT/docs.jsonl" --out "$OUT/sample.sqlite3" --force --quiet
"$DRSEARCH" stats --database "$OUT/sample.sqlite3"
"$DRSEARCH" search --database "$OUT/sample.sqlite3" --k 3 "Stadia launch price"

echo "== 2. serve it (the sample's leak artifacts blocked), start the scripted agent model and judge"
SEARCH_PORT=$(free_port); MODEL_PORT=$(free_port); JUDGE_PORT=$(free_port)
"$DRSEARCH" serve --database "$OUT/sample.sqlite3" --blocked-docids data/sample/blocked_docids.txt \
  --port "$SEARCH_PORT" --log-level warning >"$OUT/serve.log" 2>&1 &
PIDS+=($!)
"$DRSEARCH" dev model --script agent --port "$MODEL_PORT" >"$OUT/model.log" 2>&1 &
PIDS+=($!)
"$DRSEARCH" dev model --script judge --port "$JUDGE_PORT" >"$OUT/judge.log" 2>&1 &
PIDS+=($!)
SEARCH="http://127.0.0.1:$SEARCH_PORT"
"$DRSEARCH" dev wait "$SEARCH/health" "http://127.0.0.1:$MODEL_PORT/v1/models" "http://127.0.0.1:$JUDGE_PORT/v1/models"
echo "search server $SEARCH, agent model http://127.0.0.1:$MODEL_PORT/v1, judge http://127.0.0.1:$JUDGE_PORT/v1"

echo "== 3. run the agent on the sample's $(wc -l <data/sample/questions.jsonl) questions"
"$DRSEARCH" run --questions data/sample/questions.jsonl --search "$SEARCH" \
  --model scripted-reader --base-url "http://127.0.0.1:$MODEL_PORT/v1" --out "$OUT/run" --quiet

echo "== 4. grade the run (the scripted judge: correct iff the answer equals the label)"
"$DRSEARCH" score "$OUT/run" --questions data/sample/questions.jsonl --judge-model oracle \
  --base-url "http://127.0.0.1:$JUDGE_PORT/v1" --quiet

echo "== 5. the report: one HTML page (opens from disk, no network) and the same rows as CSV"
"$DRSEARCH" report "$OUT/run" --out "$OUT/report"

cat <<NEXT

Report:
  $OUT/report/index.html        open it in a browser: summary, accuracy by tier and difficulty,
                                every episode (sort, filter, click one for its trajectory)
  $OUT/report/episodes.csv      one row per episode; tool_calls.csv: one row per tool call

Results:
  $OUT/run/run.json             the run's settings (model, endpoints, corpus identity)
  $OUT/run/trajectories.jsonl   one episode per question: every turn, tool call and answer
  $OUT/run/scores.json          the accuracy table above; scores.graded.jsonl: each verdict

Next:
  docs/QUICKSTART.md    the same path step by step, then comparing two runs (drsearch compare)
  .venv/bin/drsearch report RUN_A RUN_B --out DIR    two graded runs side by side, paired McNemar
  .venv/bin/drsearch search --database $OUT/sample.sqlite3 --k 5 "video game streaming subscription"
  .venv/bin/drsearch serve --database $OUT/sample.sqlite3 --port 8000    (docs/SERVER.md)
NEXT
