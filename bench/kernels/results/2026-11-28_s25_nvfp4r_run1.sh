#!/usr/bin/env bash
# NVFP4R (session 25 helper) device call 1 (H200 asked): dense NVFP4 in the repacked layout
# (branch wip/nvfp4r; binaries in .bin/nvfp4r/nvfp4r_r1.tar.xz: bench_linear_gemm, test_backend_ops,
# test_gpu_model of the branch; bench_linear_gemm_base = main f96e1cc from build-s23).
# 1. bench_linear_gemm --nvfp4-repack-ab 2 (checkpoint vs repacked in one process, alternating;
#    the checkpoint kernels are SASS-identical to main's)
# 2. parity in parallel: linear_decode_repacked + linear_gemm_repacked (new) | linear_decode,
#    linear_decode_grouped, linear_decode_ring, linear_decode_lead | linear_gemm
# 3. test_gpu_model --only-repacked-dense (alone: the engine path, logits bit for bit)
# 4. while time is left: --nvfp4-repack-ab again (second process), main's --lead-ab nvfp4.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/nvfp4r/nvfp4r_r1.tar.xz
G=build-gpu-nvfp4r; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/nvfp4r_logs; rm -rf $L; mkdir -p $L/parity
echo "extracted t+$(el)"
# compact rows: shape T | checkpoint us % | repacked us % | ratio
summ() { grep '^repack ' $1 | awk -F'|' '{split($1,h," "); printf "%-10s %s %s", h[2], h[5], h[6]; for (i=2;i<=NF;i++){n=split($i,f," "); printf " |"; for (j=1;j<=n&&j<=4;j++) printf " %s", f[j]} printf "\n"}'; }
ab() {  # round limit
  echo "== nvfp4-repack-ab r$1 t+$(el)" >> $L/repack_ab.txt
  timeout $2 $G/bench_linear_gemm --nvfp4-repack-ab 2 > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/repack_ab.txt
  echo "repack-ab r$1 rc$rc t+$(el) $(grep -E 'ceiling' $L/cur.txt | awk '{printf "%s ", $(NF-1)}')"
  [ "$1" = 1 ] && summ $L/cur.txt
}
ab 1 100
echo "== parity t+$(el)"
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p rp 90 --filter linear_decode_repacked,linear_gemm_repacked &
p ld 90 --filter linear_decode,linear_decode_grouped,linear_decode_ring,linear_decode_lead &
p gemm 90 --filter linear_gemm &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
echo "parity done t+$(el)"
timeout 75 $G/test_gpu_model --only-repacked-dense > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt
grep -E 'gpu-repacked-dense|gpu-graph|passed|exit' $P/gpu_model.txt | cut -c1-260
echo "gpu_model done t+$(el)"
[ $(el) -lt 175 ] && ab 2 $(( 215 - $(el) ))
if [ $(el) -lt 195 ]; then
  echo "== base --lead-ab nvfp4 t+$(el)" >> $L/base_lead_ab.txt
  timeout $(( 228 - $(el) )) $G/bench_linear_gemm_base --lead-ab nvfp4 >> $L/base_lead_ab.txt 2>&1
  echo "base lead-ab rc$? t+$(el) rows $(grep -c '^lead ' $L/base_lead_ab.txt)"
fi
rm -f $L/cur.txt
tar czf $OUT/nvfp4r_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
