#!/usr/bin/env bash
# usage: carry_and_cpu_pass_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
source_dir=$1 build_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# 1. The carry folder: everything gpu-check needs, under the device tool's limit.
if ! "$source_dir/scripts/make-carry" "$build_dir" --out "$tmp/carry" >"$tmp/make-carry.txt" 2>&1; then
  cat "$tmp/make-carry.txt"; fail "make-carry failed"
fi
for f in bin/fleetscope bin/fleetscoped lib/libfleetscope_agent.so lib/libcupti.so.13 samples/launch_bound \
         scripts/gpu-check scripts/gpu/torch_loop.py scripts/gpu/colocation.py scripts/gpu/lanes_job.py; do
  [[ -e "$tmp/carry/$f" ]] || fail "carry lacks $f"
done
size_kb=$(du -sk "$tmp/carry" | cut -f1)
echo "carry: ${size_kb} KiB"
((size_kb <= 64 * 1024)) || fail "carry is ${size_kb} KiB, over 64 MiB"
# Its programs run from the folder alone ($ORIGIN rpath): --help of the CLI.
"$tmp/carry/bin/fleetscope" --help >/dev/null 2>&1 || fail "carry/bin/fleetscope --help does not run"

# 2. --plan lists the six stages with their seconds and exits 0.
plan=$("$tmp/carry/scripts/gpu-check" --plan --budget-s 300) || fail "--plan exited non-zero"
echo "$plan"
[[ $(grep -cE '^[1-6] ' <<<"$plan") -eq 6 ]] || fail "--plan does not list six stages"
grep -q 'budget 300 s' <<<"$plan" || fail "--plan does not state the budget"
[[ $("$tmp/carry/scripts/gpu-check" --plan --only 2,overhead | grep -cE '^[1-6] ') -eq 2 ]] || fail "--only 2,overhead"
"$tmp/carry/scripts/gpu-check" --only 9 >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "--only 9 is not a usage error"

# 3. A CPU-only pass: every stage skips with its reason, the report is written, exit 0.
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "this machine has a GPU: the CPU-only pass is not checked here"
else
  "$tmp/carry/scripts/gpu-check" --carry "$tmp/carry" --out "$tmp/out" --budget-s 600 >"$tmp/pass1.txt" 2>&1 ||
    { cat "$tmp/pass1.txt"; fail "CPU-only pass exited non-zero"; }
  report=$tmp/out/gpu-check.md
  [[ -s "$report" ]] || fail "no report written"
  skipped=$(grep -cE '^## Stage [1-6]: .*skipped: ' "$report")
  [[ "$skipped" -eq 6 ]] || { cat "$report"; fail "expected 6 skipped stages in the report, found $skipped"; }
  grep -q 'skipped: .*nvidia' "$report" || fail "the skip reason does not name the missing GPU"
  [[ $(wc -l <"$tmp/out/gpu-check.state") -eq 6 ]] || fail "state file does not hold six stages"
  [[ -s "$tmp/out/gpu-check-raw.tar.gz" ]] || fail "no raw data archive"
  # A second call resumes: nothing left to run, the report keeps the first call's sections.
  "$tmp/carry/scripts/gpu-check" --carry "$tmp/carry" --out "$tmp/out" --budget-s 600 >"$tmp/pass2.txt" 2>&1 ||
    fail "resumed pass exited non-zero"
  [[ $(grep -c 'done in an earlier call' "$tmp/pass2.txt") -eq 6 ]] || { cat "$tmp/pass2.txt"; fail "second call did not resume"; }
  [[ $(grep -cE '^## Stage [1-6]: ' "$report") -eq 6 ]] || fail "resumed call repeated or lost sections"
  # A budget too small for any stage starts none and says so.
  "$tmp/carry/scripts/gpu-check" --carry "$tmp/carry" --out "$tmp/out-small" --budget-s 5 >/dev/null 2>&1
  [[ $(grep -c 'not started: expects' "$tmp/out-small/gpu-check.md") -eq 6 ]] || fail "budget not enforced"
fi
((failures == 0)) && echo "PASS" || { echo "$failures failure(s)"; exit 1; }
