#!/usr/bin/env bash
# LIN12 (session 24 helper) call 2, prepared for the lead (H200; NOT run by the helper): the final
# branch wip/lin12 (x_lead default rule). Binaries in .bin/lin12/lin12_r2.tar.xz (bench_linear_gemm,
# test_backend_ops, test_gpu_model of the branch tip).
# 1. parity in parallel: linear_decode, _grouped, _ring (defaults now with x_lead) | linear_decode_lead |
#    test_gpu_model  2. bench_linear_gemm --lead-ab bf16 / nvfp4 ("main" = x_lead 0 split vs "default"),
#    two processes each, alternating formats.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/lin12/lin12_r2.tar.xz
G=build-gpu-lin12b; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/lin12b_logs; rm -rf $L; mkdir -p $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ld 100 --filter linear_decode,linear_decode_grouped,linear_decode_ring &
p lead 100 --filter linear_decode_lead &
( timeout 100 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt ) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
echo "parity done t+$(el)"
# compact: shape kind T default | variant us main/variant
summ() { grep '^lead ' $1 | awk -F'|' '{split($1,h," "); printf "%s %s %s %s", h[2], h[3], h[6], h[10]; for (i=2;i<=NF;i++){n=split($i,f," "); if (n>=6) printf " | %s %s %s", f[1], f[2], f[6]; else printf " | %s -", f[1]} printf "\n"}'; }
for r in 1 2; do for f in bf16 nvfp4; do
  [ $(el) -lt 200 ] || break
  echo "== lead-ab $f r$r t+$(el)" >> $L/lead_ab.txt
  timeout 40 $G/bench_linear_gemm --lead-ab $f > $L/cur.txt 2>&1; rc=$?
  cat $L/cur.txt >> $L/lead_ab.txt
  echo "lead-ab $f r$r rc$rc t+$(el)"; [ $r = 1 ] && summ $L/cur.txt | cut -d'|' -f1-3
done; done
rm -f $L/cur.txt
tar czf $OUT/lin12b_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
