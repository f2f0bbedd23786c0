#!/bin/sh
# Starts one fleetscoped (its argv follows) with the process limits of daemon/fleetscoped.service.in:
# UMask=0027, LimitNOFILE=65536, NoNewPrivileges=true and CapabilityBoundingSet=CAP_CHOWN
# CAP_DAC_READ_SEARCH (no inheritable or ambient capabilities). run_in_unit_sandbox.sh adds the
# file-system part. Keep it in step with the unit.
umask 0027
ulimit -n 65536 2>/dev/null || true
exec setpriv --no-new-privs --bounding-set -all,+chown,+dac_read_search --inh-caps -all -- "$@"
