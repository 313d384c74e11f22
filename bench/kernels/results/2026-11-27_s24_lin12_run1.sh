#!/usr/bin/env bash
# LIN12 (session 24 helper) device call 1 (H200): linear_decode x_lead / late_scale (branch wip/lin12;
# binaries in .bin/lin12/lin12_r1.tar.xz: bench_linear_gemm + test_backend_ops of the branch,
# bench_linear_gemm_base = main 5fd1a0e from build-s23).
# 1. bench_linear_gemm --lead-ab per format (bf16, fp8, nvfp4; one process each; in-process: every
#    variant twice, alternating; base = the planner's split = main's kernels, SASS-identical)
# 2. parity in parallel: linear_decode, _grouped, _ring | linear_decode_lead
# 3. main's bench_linear_gemm --ring-ab (cross-check of the base rows; fp8 + bf16 one-n-tile rows)
# 4. --lead-ab again (second process) while time is left.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/lin12/lin12_r1.tar.xz
G=build-gpu-lin12; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/lin12_logs; rm -rf $L; mkdir -p $L/parity
echo "extracted t+$(el)"
# compact: shape kind T ring | variant us xratio(base/variant)
summ() { grep '^lead ' $1 | awk -F'|' '{split($1,h," "); printf "%s %s %s %s", h[2], h[3], h[6], h[9]; for (i=2;i<=NF;i++){n=split($i,f," "); if (n>=6) printf " | %s %s %s", f[1], f[2], f[6]; else printf " | %s -", f[1]} printf "\n"}'; }
leadab() {  # round format limit
  echo "== lead-ab $2 r$1 t+$(el)" >> $L/lead_ab.txt
  timeout $3 $G/bench_linear_gemm --lead-ab $2 > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/lead_ab.txt
  echo "lead-ab $2 r$1 rc$rc t+$(el) $(grep -E 'ceiling' $L/cur.txt | awk '{printf "%s ", $(NF-1)}')"
  [ "$1" = 1 ] && summ $L/cur.txt
}
leadab 1 bf16 60
leadab 1 fp8 60
leadab 1 nvfp4 40
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ld 90 --filter linear_decode,linear_decode_grouped,linear_decode_ring &
p lead 90 --filter linear_decode_lead &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
echo "parity done t+$(el)"
if [ $(el) -lt 150 ]; then
  echo "== base --ring-ab t+$(el)" >> $L/base_ring_ab.txt
  timeout $(( 175 - $(el) )) $G/bench_linear_gemm_base --ring-ab >> $L/base_ring_ab.txt 2>&1
  echo "base ring-ab rc$? t+$(el) rows $(grep -c '^ring ' $L/base_ring_ab.txt)"
fi
for f in bf16 fp8 nvfp4; do [ $(el) -lt 170 ] && leadab 2 $f 30; done
rm -f $L/cur.txt
tar czf $OUT/lin12_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
