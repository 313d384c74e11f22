#!/usr/bin/env bash
# FP8X (session 27 helper) device call 1 (H200 asked; may land on an H100): linear_decode's fp8_block
# path with E4M3 pairs by a sign-replicating PRMT (branch wip/fp8x; binaries in .bin/fp8x/fp8x_r1.tar.xz:
# test_backend_ops and bench_linear_gemm of the branch; bench_linear_gemm_base = the same bench source
# linked with main 429c81a's linear_decode.cu, so both accept the same arguments).
# 1. bench_linear_gemm --fp8-pair-check: the new pair form vs the previous one, every byte pair (exit 2
#    on a mismatch);
# 2. parity: linear_decode, linear_decode_grouped, linear_decode_lead, linear_decode_ring families;
# 3. --grouped-lead-ab fp8 (wo_a, Flash 8 x 1024 x 4096 and Pro 16 x 1024 x 4096, T = 1 2 4 8),
#    base / new / new / base processes; then --lead-ab fp8 (dense Flash / Pro shapes) base / new as
#    time allows.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/fp8x/fp8x_r1.tar.xz
G=build-gpu-fp8x; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/fp8x_logs; rm -rf $L; mkdir -p $L
save() { tar czf $OUT/fp8x_logs.tgz -C $L . 2>/dev/null; }
lim() { local l=$(( 140 - $(el) )); [ $l -gt $1 ] && l=$1; [ $l -lt 3 ] && l=3; echo $l; }  # lim CAP
psum() { echo "== $1: $(grep -c ' OK' $L/$1.txt) OK, $(grep -c FAIL $L/$1.txt) FAIL; $(tail -1 $L/$1.txt)"; grep FAIL $L/$1.txt | head -8 | cut -c1-260; }
lsum() { grep -E '^lead ' $1 | sed -E 's/ +/ /g' | awk -F'|' '{printf "%s|%s\n", $1, $2}' | cut -c1-170; }
echo "extracted t+$(el)"
timeout 20 $G/bench_linear_gemm --fp8-pair-check > $L/pair_check.txt 2>&1; echo "exit $?" >> $L/pair_check.txt
cat $L/pair_check.txt
timeout $(lim 45) $G/test_backend_ops --filter linear_decode,linear_decode_grouped,linear_decode_lead,linear_decode_ring > $L/parity.txt 2>&1; echo "exit $?" >> $L/parity.txt
psum parity
save
echo "parity done t+$(el)"
i=0
for b in bench_linear_gemm_base bench_linear_gemm bench_linear_gemm bench_linear_gemm_base; do
  i=$((i+1))
  [ $(el) -lt 120 ] || break
  timeout $(lim 25) $G/$b --grouped-lead-ab fp8 > $L/grouped_${i}_$b.txt 2>&1; echo "$b grouped rc=$? t+$(el)"
  grep -E 'ceiling' $L/grouped_${i}_$b.txt | head -1; lsum $L/grouped_${i}_$b.txt
  save
done
for b in bench_linear_gemm_base bench_linear_gemm; do
  [ $(el) -lt 115 ] || break
  timeout $(lim 25) $G/$b --lead-ab fp8 > $L/dense_$b.txt 2>&1; echo "$b dense rc=$? t+$(el)"
  grep -E 'ceiling' $L/dense_$b.txt | head -1; lsum $L/dense_$b.txt
  save
done
save
echo "done t=$(el)"; ls -la $OUT
