#!/usr/bin/env bash
# Session 37 lead, call l37h (H200): linear_w8a8_wgmma's read-rate estimate now from device_info's cached
# current_device_rates() (same formula): the default plans of bench_linear_gemm --w8a8-wgmma (n, K parts, CTAs) must
# equal l37a's; parity of the linear_w8a8_wgmma op.
set -uo pipefail
nvidia-smi -L
N=l37h
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
timeout -s KILL 60 $G/bench_linear_gemm --w8a8-wgmma 2 > $L/wgmma.txt 2>&1; echo "== wgmma rc=$? t=$(el)"
head -2 $L/wgmma.txt | cut -c1-150; grep -E "^wgmma (fl|pro)" $L/wgmma.txt | sed -E 's/.*wgmma ([a-z._0-9]+) +[0-9]+ +[0-9]+ +([0-9]+) .*\((n[0-9]+ kp[0-9]+ ctas[0-9]+)\).*engine ([a-z]+)/\1 \2 \3 \4/' | paste -sd';' | fold -w 240
save
timeout -s KILL 150 $G/test_backend_ops --filter linear_w8a8_wgmma > $L/parity.txt 2>&1; echo "== parity rc=$? t=$(el)"; tail -2 $L/parity.txt; grep FAIL $L/parity.txt | head -3
save; echo "done t=$(el)"
