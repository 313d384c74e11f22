#!/usr/bin/env bash
# W8A8W (session 26 helper) device call 1 (H200 asked): linear_w8a8_wgmma, the W8A8 FP8-block linear
# on wgmma for 9-128 tokens (branch wip/w8a8w; binaries in .bin/w8a8w/w8a8w_r1.tar.xz: test_backend_ops,
# test_gpu_model, bench_linear_gemm of the branch; bench_linear_gemm_base = main 6931456 from build-s25).
# 1. smoke: 3 parity cases (a hang or crash shows here in <= 25 s), then the whole linear_w8a8_wgmma
#    family (128 / 192 / 256-row tiles, ragged T 1-128, rows not a multiple of the tile, K parts,
#    fewer CTAs than items, both scale encodings, raw / FP8-block x, f32 / bf16);
# 2. bench_linear_gemm --w8a8-wgmma 2: every Flash / Pro FP8 projection at T = 9 16 17 32 64 128,
#    the path linear_fp8_input takes today (main's rule, restated in the bench) vs the wgmma kernel
#    (default plan: 128-row tiles; 192 / 256-row tiles as extra columns) vs cuBLASLt vs W8A8 mma.sync,
#    best of 2 alternating, % of the read ceiling measured in the same process;
# 3. test_gpu_model --only-w8a8-wgmma (alone): flash-dims official bf16, the wgmma kernel at 9-128
#    tokens vs the paths before (bound: 2x the bf16-vs-f32 noise);
# 4. --w8a8-wgmma-sweep 1 (K parts 1..16 of the default tiles), a second --w8a8-wgmma process, main's
#    --fp8-cublaslt (the same kernels' times from main's binary), as time allows.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/w8a8w/w8a8w_r1.tar.xz
G=build-gpu-w8a8w; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/w8a8w_logs; rm -rf $L; mkdir -p $L
save() { tar czf $OUT/w8a8w_logs.tgz -C $L . 2>/dev/null; }
lim() { local l=$(( 232 - $(el) )); [ $l -gt $1 ] && l=$1; [ $l -lt 5 ] && l=5; echo $l; }  # lim CAP
psum() { echo "== $1: $(grep -c ' OK' $L/$1.txt) OK, $(grep -c FAIL $L/$1.txt) FAIL; $(grep -E 'passed|failed' $L/$1.txt | tail -1 | cut -c1-100); $(tail -1 $L/$1.txt)"; grep FAIL $L/$1.txt | head -8 | cut -c1-260; }
# compact bench rows: shape T | route name us % | wgmma us % (plan) | r192/r256 | cublaslt | w8a8 | ratios
bsum() { grep -E '^wgmma ' $1 | sed -E 's/ +/ /g; s/ us / /g; s/wgmma (pro|fl)/\1/' | cut -c1-230; }
echo "extracted t+$(el)"
timeout 25 $G/test_backend_ops --filter linear_w8a8_wgmma --per-op 3 > $L/smoke.txt 2>&1; echo "exit $?" >> $L/smoke.txt
psum smoke
if grep -q '^exit 124' $L/smoke.txt; then echo "smoke timed out (hang?): stopping"; save; exit 0; fi
timeout $(lim 90) $G/test_backend_ops --filter linear_w8a8_wgmma > $L/parity.txt 2>&1; echo "exit $?" >> $L/parity.txt
psum parity
save
echo "parity done t+$(el)"
timeout $(lim 80) $G/bench_linear_gemm --w8a8-wgmma 2 > $L/bench_r1.txt 2>&1; echo "bench r1 rc=$? t+$(el)"
grep -E 'bench_linear_gemm:|ceiling' $L/bench_r1.txt | head -3
bsum $L/bench_r1.txt
save
[ $(el) -lt 200 ] && timeout $(lim 60) $G/test_gpu_model --only-w8a8-wgmma > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt
grep -E 'gpu-w8a8-wgmma|passed|exit' $L/gpu_model.txt | cut -c1-260
echo "gpu_model done t+$(el)"
save
if [ $(el) -lt 165 ]; then
  timeout $(lim 50) $G/bench_linear_gemm --w8a8-wgmma-sweep 1 > $L/sweep.txt 2>&1
  echo "sweep rc=$? t+$(el)"; grep -E 'kp-sweep' $L/sweep.txt | sed -E 's/ +/ /g; s/ us / /g' | cut -c1-200
  save
fi
if [ $(el) -lt 180 ]; then
  timeout $(lim 50) $G/bench_linear_gemm --w8a8-wgmma 2 > $L/bench_r2.txt 2>&1
  echo "bench r2 rc=$? t+$(el)"; grep -E 'ceiling' $L/bench_r2.txt | head -2
  grep -E '^wgmma ' $L/bench_r2.txt | awk -F'|' '{printf "%s|%s|%s\n", $1, $3, $NF}' | sed -E 's/ +/ /g' | cut -c1-160
  save
fi
if [ $(el) -lt 200 ]; then
  timeout $(lim 40) $G/bench_linear_gemm_base --fp8-cublaslt > $L/base_fp8_cublaslt.txt 2>&1
  echo "base fp8-cublaslt rc=$? t+$(el) rows $(grep -c ' | engine ' $L/base_fp8_cublaslt.txt)"
fi
save
echo "done t=$(el)"; ls -la $OUT
