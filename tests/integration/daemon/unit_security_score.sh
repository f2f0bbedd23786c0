#!/bin/sh
# The shipped unit's sandbox, as systemd rates it: `systemd-analyze security --offline=true`
# (systemd 252 and newer) on daemon/fleetscoped.service.in with its paths filled in, which must
# stay at most 3.0 ("OK"; issue 24: the unit first shipped rated 9.0 "UNSAFE").
# Usage: unit_security_score.sh SYSTEMD_ANALYZE UNIT_TEMPLATE. Exit 77 (ctest: skipped, with the
# reason printed) where systemd-analyze is not installed or cannot rate a unit offline.
set -eu
analyze=$1 template=$2
if [ -z "$analyze" ] || [ ! -x "$analyze" ]; then
  echo "SKIP: systemd-analyze not found (Debian package systemd)"; exit 77
fi
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
sed -e 's#@FLEETSCOPED_PATH@#/usr/sbin/fleetscoped#' \
    -e 's#@FLEETSCOPED_CONFIG@#/etc/fleetscope/fleetscoped.conf#' "$template" > "$dir/fleetscoped.service"
cd "$dir"
if ! out=$("$analyze" security --offline=true --no-pager ./fleetscoped.service 2>&1); then
  case $out in
    *"unrecognized option"*|*"Unknown option"*) echo "SKIP: $analyze cannot rate a unit offline"; exit 77;;
  esac
  echo "$out"; echo "FAIL: systemd-analyze security failed on the unit"; exit 1
fi
line=$(printf '%s\n' "$out" | grep 'Overall exposure level') || { echo "$out"; echo "FAIL: no overall exposure level"; exit 1; }
echo "$line"
score=$(printf '%s\n' "$line" | sed -n 's/.*: \([0-9][0-9]*\.[0-9]\).*/\1/p')
[ -n "$score" ] || { echo "FAIL: no score in: $line"; exit 1; }
if awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }'; then
  echo "PASS: exposure $score <= 3.0"
else
  printf '%s\n' "$out" | grep '✗' || true
  echo "FAIL: exposure $score > 3.0 (the items marked ✗ above raise it)"; exit 1
fi
