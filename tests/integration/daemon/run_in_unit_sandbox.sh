#!/bin/sh
# Runs a daemon test program with every fleetscoped it starts held to what the shipped unit
# (daemon/fleetscoped.service.in) allows, as far as a machine without systemd as PID 1 can
# reproduce it, so that a sandbox option the daemon's work does not survive fails a test here
# rather than on a host:
#   ProtectSystem=strict, ProtectHome=read-only  every mount read-only but /tmp, /dev, /proc, /sys
#                                                (the tests' folders, the lane ledgers in /dev/shm)
#   PrivateTmp=true                              a fresh tmpfs on /tmp
#   NoNewPrivileges, CapabilityBoundingSet=, UMask=0027, LimitNOFILE=65536
#                                                unit_sandbox_daemon.sh, around each daemon
# Not reproduced here (they need systemd): SystemCallFilter, RestrictAddressFamilies,
# IPAddressDeny, MemoryDenyWriteExecute, ProtectKernel*, ProtectProc, RestrictNamespaces.
# Usage: run_in_unit_sandbox.sh [--keep DIR]... DAEMON_WRAPPER PROGRAM [ARGS...]. Each --keep DIR
# that lies under /tmp (a checkout or build folder there, as a CI runner may use) is bound back
# into the private /tmp at the same path, so the test program and its files stay reachable; the
# rest of the old /tmp stays hidden. Exit 77 (ctest: skipped, the reason printed) where mount
# namespaces or setpriv(1) are not available.
set -eu
keep=""
while [ "${1-}" = --keep ]; do
  case $2 in /tmp/*) keep="$keep $(realpath -m "$2")" ;; esac
  shift 2
done
wrapper=$1; shift
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (a mount namespace)"; exit 77; fi
if ! command -v setpriv >/dev/null; then echo "SKIP: setpriv not found (util-linux)"; exit 77; fi
if ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: no mount namespace can be made here"; exit 77
fi
exec unshare -m --propagation private /bin/sh -eu -c '
  keep=$1; wrapper=$2; shift 2
  stash=""
  if [ -n "$keep" ]; then
    # The old /tmp is held at a private mount point while the fresh tmpfs covers /tmp, then only
    # the kept folders are bound back; the mount point is an empty folder in /dev/shm, removed
    # again before the program starts.
    stash=$(mktemp -d /dev/shm/fleetscope-sandbox.XXXXXX)
    mount --bind /tmp "$stash"
  fi
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
  for dir in $keep; do
    mkdir -p "$dir"
    mount --bind "$stash${dir#/tmp}" "$dir"
  done
  if [ -n "$stash" ]; then umount -l "$stash"; rmdir "$stash"; fi
  awk "{ print \$5 }" /proc/self/mountinfo | sort -u | while read -r mount_point; do
    case $mount_point in /tmp|/tmp/*|/dev|/dev/*|/proc|/proc/*|/sys|/sys/*) continue ;; esac
    mount -o remount,bind,ro "$mount_point" 2>/dev/null || true
  done
  if touch /usr/.fleetscope-sandbox-check 2>/dev/null; then
    echo "FAIL: the file system is still writable in the sandbox"; exit 1
  fi
  FLEETSCOPE_TEST_DAEMON_LAUNCHER=$wrapper exec "$@"' sh "$keep" "$wrapper" "$@"
