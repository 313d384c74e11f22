#!/usr/bin/env bash
# FP8X (session 27 helper) call 2, prepared for the lead (not run by the helper: one call each).
# H200 asked; may land on an H100. Branch wip/fp8x 2c47367: linear_decode's fp8_block pairs by
# prmt.b32 (sign-replicating selectors 0xA280 / 0xB391). Call 1 (r1) measured 1af6fbf, whose
# __byte_perm dropped the selectors' sign bit (wrong values; SASS otherwise identical).
# Binaries in .bin/fp8x/fp8x_r2.tar.xz: test_backend_ops and bench_linear_gemm of 2c47367;
# bench_linear_gemm_base = the same bench source linked with main 429c81a's linear_decode.cu.
# 1. --fp8-pair-check (every byte pair, both selectors, against the previous form; exit 2 on a
#    mismatch) -- stop if it fails;
# 2. --grouped-lead-ab fp8 base / new / new / base, --lead-ab fp8 base / new / new / base (~3-5 s each);
# 3. parity: linear_decode_grouped, linear_decode_ring, then linear_decode, then linear_decode_lead
#    (call 1: linear_decode alone ran 105 of 112 cases in 45 s).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/fp8x/fp8x_r2.tar.xz
G=build-gpu-fp8x; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/fp8x_logs; rm -rf $L; mkdir -p $L
save() { tar czf $OUT/fp8x_r2_logs.tgz -C $L . 2>/dev/null; }
lim() { local l=$(( 145 - $(el) )); [ $l -gt $1 ] && l=$1; [ $l -lt 3 ] && l=3; echo $l; }  # lim CAP
psum() { echo "== $1: $(grep -c ' OK' $L/$1.txt) OK, $(grep -c FAIL $L/$1.txt) FAIL; $(tail -1 $L/$1.txt)"; grep FAIL $L/$1.txt | head -8 | cut -c1-260; }
lsum() { grep -E '^lead ' $1 | sed -E 's/ +/ /g' | awk -F'|' '{printf "%s|%s\n", $1, $2}' | cut -c1-120; }
echo "extracted t+$(el)"
timeout 20 $G/bench_linear_gemm --fp8-pair-check > $L/pair_check.txt 2>&1; echo "exit $?" >> $L/pair_check.txt
grep -E 'pair-check|exit' $L/pair_check.txt
if ! grep -q '^exit 0' $L/pair_check.txt; then echo "pair check failed: stopping"; save; exit 0; fi
i=0
for b in bench_linear_gemm_base bench_linear_gemm bench_linear_gemm bench_linear_gemm_base; do
  i=$((i+1))
  timeout $(lim 20) $G/$b --grouped-lead-ab fp8 > $L/grouped_${i}_$b.txt 2>&1; echo "$b grouped rc=$? t+$(el)"
  timeout $(lim 20) $G/$b --lead-ab fp8 > $L/dense_${i}_$b.txt 2>&1; echo "$b dense rc=$? t+$(el)"
  lsum $L/grouped_${i}_$b.txt
  save
done
for f in linear_decode_grouped,linear_decode_ring linear_decode linear_decode_lead; do
  n=${f%%,*}
  [ $(el) -lt 135 ] || break
  timeout $(lim 60) $G/test_backend_ops --filter $f > $L/parity_$n.txt 2>&1; echo "exit $?" >> $L/parity_$n.txt
  psum parity_$n
  save
done
echo "done t=$(el)"; ls -la $OUT
