#!/usr/bin/env bash
# Runs a test program on a private Xvfb display with Qt's xcb platform, then stops the server.
# Usage: run_under_xvfb.sh PROGRAM [ARGS...]
set -euo pipefail
command -v Xvfb >/dev/null || { echo "run_under_xvfb.sh: Xvfb not found (Debian package xvfb, scripts/install-deps)" >&2; exit 1; }
# A display number nobody uses: no lock file and no socket.
display=""
for n in $(seq 90 190); do
  if [ ! -e "/tmp/.X$n-lock" ] && [ ! -e "/tmp/.X11-unix/X$n" ]; then display=$n; break; fi
done
[ -n "$display" ] || { echo "run_under_xvfb.sh: no free X display" >&2; exit 1; }
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill "$xvfb" 2>/dev/null || true; wait "$xvfb" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [ -e "/tmp/.X11-unix/X$display" ] && break
  kill -0 "$xvfb" 2>/dev/null || { echo "run_under_xvfb.sh: Xvfb :$display did not start" >&2; exit 1; }
  sleep 0.05
done
# Under the asan preset: ignore libdbus's process-lifetime allocation (lsan-system.supp).
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/lsan-system.supp"
DISPLAY=":$display" QT_QPA_PLATFORM=xcb "$@"
