#!/usr/bin/env bash
# Installs the build into a staging prefix with `cmake --install` and runs the installed programs
# from there: the CLI, the daemon (on sockets in a temporary directory, answering the installed
# CLI), the unit file, the config, the man pages, --help/--version without a display, the private
# library directory, and `fleetscope run` finding the installed agent.
#   staging_install_test.sh BUILD_DIR
set -euo pipefail
build=$1
stage=$(mktemp -d)
trap '[ -n "${daemon_pid:-}" ] && kill "$daemon_pid" 2>/dev/null; rm -rf "$stage"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$stage/usr" >/dev/null
for f in usr/bin/fleetscope usr/sbin/fleetscoped usr/lib/systemd/system/fleetscoped.service \
         usr/etc/fleetscope/fleetscoped.conf usr/share/man/man1/fleetscope.1 \
         usr/share/man/man8/fleetscoped.8 usr/share/doc/fleetscope/daemon.md \
         usr/bin/fleetscope-gui usr/lib/fleetscope/libfleetscope_lanes.so \
         usr/bin/fleetscope-lane-arbiter usr/include/fleetscope/step.h; do
  [ -e "$stage/$f" ] || fail "not installed: $f"
done
grep -q "^ExecStart=$stage/usr/sbin/fleetscoped --config $stage/usr/etc/fleetscope/fleetscoped.conf" \
  "$stage/usr/lib/systemd/system/fleetscoped.service" || fail "unit does not start the installed daemon"
grep -q '^CPUQuota=' "$stage/usr/lib/systemd/system/fleetscoped.service" || fail "unit has no CPU cap"
grep -q '^MemoryMax=' "$stage/usr/lib/systemd/system/fleetscoped.service" || fail "unit has no memory cap"
grep -q '^\.TH FLEETSCOPED 8' "$stage/usr/share/man/man8/fleetscoped.8" || fail "bad man page"

# One man page per subcommand, each from its --help.
for page in fleetscope-analyze.1 fleetscope-share-plan.1 fleetscope-import.1 fleetscope-gui.1 \
            fleetscope-lane-arbiter.1; do
  [ -e "$stage/usr/share/man/man1/$page" ] || fail "no man page $page"
done
grep -q -- "--max-slowdown" "$stage/usr/share/man/man1/fleetscope-share-plan.1" ||
  fail "fleetscope-share-plan.1 is not share plan's --help"

# The agent and its CUPTI only in the private lib/fleetscope: nothing in the system library path.
for f in "$stage"/usr/lib/libcupti* "$stage"/usr/lib/libfleetscope_agent*; do
  [ -e "$f" ] && fail "installed into the system library directory: ${f#$stage/}"
done

# --help and --version of every program, with no display and no daemon.
for program in usr/bin/fleetscope usr/sbin/fleetscoped usr/bin/fleetscope-gui \
               usr/bin/fleetscope-lane-arbiter; do
  for option in --help --version; do
    env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$stage/$program" "$option" >"$stage/out" \
      2>&1 || fail "$program $option: $(cat "$stage/out")"
    [ -s "$stage/out" ] || fail "$program $option printed nothing"
  done
done
grep -q -- "--screenshot" < <(env -u DISPLAY "$stage/usr/bin/fleetscope-gui" --help) ||
  fail "installed fleetscope-gui --help"

# fleetscoped outside systemd creates the folders of its database and sockets...
run=$(mktemp -d -p "$stage")
"$stage/usr/sbin/fleetscoped" --config "$stage/usr/etc/fleetscope/fleetscoped.conf" \
  --database "$run/state/host.db" --socket "$run/sockets/api.sock" \
  --agent-socket "$run/sockets/agent.sock" \
  --prometheus-port -1 --nvml-library "$run/none.so" 2>"$run/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$run/sockets/agent.sock" ] && break; sleep 0.05; done
status=$("$stage/usr/bin/fleetscope" status --socket "$run/sockets/api.sock" --format json) ||
  fail "status: $status"
# (a here-string, not `echo | grep -q`: grep -q may exit before echo has written, and pipefail
# then fails the check on a match)
grep -q '"database": "'"$run/state/host.db"'"' <<<"$status" ||
  fail "status from the installed daemon: $status"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "installed daemon did not exit 0 on SIGTERM: $(cat "$run/daemon.log")"
daemon_pid=
# ...and names the one it cannot create.
touch "$run/plain-file"
if "$stage/usr/sbin/fleetscoped" --database "$run/plain-file/state/host.db" \
     --socket "$run/api2.sock" --agent-socket "$run/agent2.sock" --prometheus-port -1 \
     --nvml-library "$run/none.so" 2>"$run/refused.log"; then
  fail "fleetscoped started with its database below a regular file"
fi
grep -q "cannot create directory $run/plain-file/state (for the database" "$run/refused.log" ||
  fail "fleetscoped did not name the missing folder: $(cat "$run/refused.log")"

if [ -e "$stage/usr/lib/fleetscope/libfleetscope_agent.so" ]; then
  # `fleetscope run` finds the installed agent (the command itself fails fast: `false`).
  out=$("$stage/usr/bin/fleetscope" run -o "$run/t.db" -- false 2>&1 || true)
  echo "$out" | grep -q "cannot find libfleetscope_agent.so" && fail "run did not find the installed agent: $out"
  # A sanitizer build (the asan preset) links its runtimes into every binary, the CLI included;
  # only then are they allowed in the agent too.
  allowed='lib(c|m|dl|pthread|rt)\.so|ld-linux'
  readelf -d "$stage/usr/bin/fleetscope" | grep -q 'libasan\.so' && allowed="$allowed|lib(asan|ubsan)\.so"
  readelf -d "$stage/usr/lib/fleetscope/libfleetscope_agent.so" | grep NEEDED | grep -vqE "$allowed" \
    && fail "installed agent has extra dependencies"
  readelf -d "$stage/usr/lib/fleetscope/libfleetscope_agent.so" | grep -qE 'R(UN)?PATH.*\[\$ORIGIN\]' ||
    fail "installed agent does not look beside itself (RUNPATH \$ORIGIN) for its CUPTI"
fi
echo "staging install OK ($stage)"
