#!/usr/bin/env bash
# The nightly of examples/ci/nightly.yml, step by step, on a CPU: a SQLite store instead of PostgreSQL,
# synthetic nightly runs (ktriage.testing.fake_nightly_runs) imported with `ktriage runs import` instead
# of `ktriage bench` on a GPU, then the same last-good lookup, triage, history gate and bisect decision.
#
#   bash examples/ci/nightly_local.sh [WORKDIR]      # default: a new temporary folder
#
# Environment: KTRIAGE (the ktriage command; default: ktriage on PATH, else .venv/bin/ktriage),
# N_RUNS (30), STEP_AT (run index of the planted +15% step; default 18; "none": a flat history),
# RECENT (--fail-on-recent, 3). Exit status as the workflow's job: 0 no recent change point, 1 one
# (the bisect it would run is printed into summary.md), anything else an error.
# docs/ci.md describes each step.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-$(mktemp -d -t ktriage-nightly-XXXXXX)}"
mkdir -p "$work/reports" "$work/runs"
if [ -z "${KTRIAGE:-}" ]; then
  if command -v ktriage >/dev/null 2>&1; then KTRIAGE=ktriage; else KTRIAGE="$here/.venv/bin/ktriage"; fi
fi
PYTHON="${PYTHON:-$(dirname "$(command -v "$KTRIAGE")")/python}"
[ -x "$PYTHON" ] || PYTHON=python3
export KTRIAGE_DB="sqlite:///$work/store.db"   # the workflow: secrets.KTRIAGE_DB_URL (PostgreSQL)
OP=layer_norm MODE=bwd BACKEND=liger_layer_norm
N_RUNS="${N_RUNS:-30}" STEP_AT="${STEP_AT:-18}" RECENT="${RECENT:-3}"
REPORTS="$work/reports"
SUMMARY="$work/summary.md"                      # the workflow: $GITHUB_STEP_SUMMARY
: > "$SUMMARY"
step() { printf '\n== %s\n' "$*"; }

step "set up: $KTRIAGE ($("$KTRIAGE" --help >/dev/null && echo ok)), store $KTRIAGE_DB"

step "bench (CPU stand-in): $N_RUNS synthetic nightly runs, exported and imported with ktriage runs import"
"$PYTHON" - "$work/runs" "$N_RUNS" "$STEP_AT" <<'PY'
import sys
from pathlib import Path
from ktriage.store import export_json
from ktriage.testing import fake_nightly_runs
out, n, at = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
runs = fake_nightly_runs(seed=2026, n_runs=n, step_at=None if at == "none" else int(at),
                         toolchain_at=((0, "3.3.1"), (n if at == "none" else int(at), "3.4.0")))
for k, (run, cells) in enumerate(runs):
    (out / f"{k:03d}-{run.run_id}.json").write_text(export_json(run, cells))
PY
files=("$work"/runs/*.json)
for f in "${files[@]:0:${#files[@]}-1}"; do "$KTRIAGE" runs import "$f" >/dev/null; done

step "last good run (before tonight's)"
"$KTRIAGE" runs list --status finished --op "$OP" --limit 1 --format json > "$REPORTS/last_good.json"
OLD_RUN="$("$PYTHON" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r[0]["id"] if r else "")' "$REPORTS/last_good.json")"
OLD_TOOLCHAIN=""
if [ -n "$OLD_RUN" ]; then
  "$KTRIAGE" runs show "$OLD_RUN" --format json > "$REPORTS/last_good_run.json"
  OLD_TOOLCHAIN="$("$PYTHON" -c 'import json,sys; t=json.load(open(sys.argv[1]))["run"]["toolchains"]; print(t[-1]["spec"] if t else "")' "$REPORTS/last_good_run.json")"
fi
echo "last good: ${OLD_RUN:-none} (${OLD_TOOLCHAIN:-})"

step "tonight's run (the workflow: ktriage bench --op $OP --mode $MODE --toolchain ... on the GPU runner)"
"$KTRIAGE" runs import "${files[-1]}"
NEW_RUN="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["run_id"])' "${files[-1]}")"
NEW_TOOLCHAIN="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["toolchains"][-1]["spec"])' "${files[-1]}")"

step "triage $OLD_RUN -> $NEW_RUN"
# >>> triage (guarded: an older ktriage without the verb skips it); CPU: its compile-only steps
if [ -n "$OLD_RUN" ] && "$KTRIAGE" triage --help >/dev/null 2>&1; then
  set +e
  "$KTRIAGE" triage "$OLD_RUN" "$NEW_RUN" --old-toolchain "$OLD_TOOLCHAIN" --new-toolchain "$NEW_TOOLCHAIN" \
    -o "$REPORTS/triage.md" -o "$REPORTS/triage.json" -o "$REPORTS/triage.html"
  rc=$?
  set -e
  [ -f "$REPORTS/triage.md" ] && cat "$REPORTS/triage.md" >> "$SUMMARY"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then exit "$rc"; fi
else
  echo "skipped: \`ktriage triage --help\` does not work in this ktriage (the verb is not there yet)" | tee -a "$SUMMARY"
fi
# <<< triage

step "history gate: change points in the latest $RECENT runs"
set +e
"$KTRIAGE" history --op "$OP" --backend "$BACKEND" --mode "$MODE" --fail-on-recent "$RECENT" \
  -o "$REPORTS/history.md" -o "$REPORTS/history.json" -o "$REPORTS/history.html"
history_rc=$?
set -e
[ -f "$REPORTS/history.md" ] && cat "$REPORTS/history.md" >> "$SUMMARY"
if [ "$history_rc" -ne 0 ] && [ "$history_rc" -ne 1 ]; then exit "$history_rc"; fi

if [ "$history_rc" -eq 1 ]; then
  step "bisect (the workflow runs it on the GPU runner; here it is printed)"
  cmd="$("$PYTHON" - "$REPORTS/history.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
recent = [c for s in doc["series"] for c in s["change_points"] if c["recent"] and c["bisect"]["command"]]
print(recent[0]["bisect"]["command"] if recent else "")
PY
)"
  if [ -n "$cmd" ]; then
    # shellcheck disable=SC2016  # the backticks are markdown, not a command substitution
    printf '\n## bisect (GPU runner)\n\n```\n%s\n```\n' "$cmd" | tee -a "$SUMMARY"
  else
    echo "the change point names no toolchain range to bisect" | tee -a "$SUMMARY"
  fi
fi

step "artifacts"
ls -1 "$REPORTS"
echo "summary: $SUMMARY"
exit "$history_rc"
