#!/usr/bin/env bash
# Session 35 lead, call l35f (H200): scripts/diag/racecheck_arrive_reuse.cu (built on the build machine, sm_90a)
# alone, then under compute-sanitizer racecheck: does racecheck report buffer reuse ordered only through a named
# barrier's bar.arrive or an mbarrier arrive (the patterns of l35c / l35e's reports on the ws attention kernel)?
set -uo pipefail
nvidia-smi -L
B=.bin/l35f/racecheck_arrive_reuse
$B; echo "plain rc=$?"
/usr/local/cuda/bin/compute-sanitizer --tool racecheck --print-limit 10 $B 2>&1 | sed -E 's/Host Frame.*//' | grep -v "^=========\s*$" | head -40
/usr/local/cuda/bin/compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 10 $B 2>&1 | grep -E "SUMMARY|wrong"
# Runs 2-3 (the same call's machine, then a fresh one; the diag rebuilt with ring_kernel<warp_release>):
#   B=.bin/l35f/racecheck_arrive_reuse; compute-sanitizer --tool racecheck --print-limit 1000 $B > /tmp/rc.txt 2>&1
#   grep -c 'ring_kernel' /tmp/rc.txt; grep -c 'handoff_kernel' /tmp/rc.txt; grep SUMMARY /tmp/rc.txt
