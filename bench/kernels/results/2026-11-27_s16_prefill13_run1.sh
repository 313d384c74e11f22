# PREFILL13 call 1 (binaries of wip/prefill13: CV = converter warpgroup + SS wgmma, opt-in; .wt/prefill13/bins.tar.xz;
# s/ = the same with 32-bit STS instead of stmatrix, run only if the stmatrix parity fails)
set -o pipefail; export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill13/bins.tar.xz /tmp/b && nvidia-smi -L
F=moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked
D=/tmp/b
DSV4_WS_CV=1 timeout 30 $D/test_backend_ops --filter $F --per-op 14 > $OUT/parity_cv.txt 2>&1; rc=$?; echo "parity_cv rc=$rc OK=$(grep -c ' OK$' $OUT/parity_cv.txt) FAIL=$(grep -c FAIL $OUT/parity_cv.txt)"
if [ $rc != 0 ]; then grep -m3 FAIL $OUT/parity_cv.txt; tail -3 $OUT/parity_cv.txt; D=/tmp/b/s; DSV4_WS_CV=1 timeout 30 $D/test_backend_ops --filter $F --per-op 14 > $OUT/parity_cv_sts.txt 2>&1; echo "parity_cv_sts rc=$? OK=$(grep -c ' OK$' $OUT/parity_cv_sts.txt) FAIL=$(grep -c FAIL $OUT/parity_cv_sts.txt)"; fi
B=$D/bench_kernels/bench_moe_linear; [ -x $B ] || B=$D/bench_moe_linear
timeout 40 $B --ws-epis 4,12 --ws-t 4096,8192 --formats mxfp4 > $OUT/cv_mxfp4.txt 2>&1; echo "mxfp4 rc=$?"
timeout 40 $B --ws-epis 4,12 --ws-t 4096,8192 --formats nvfp4 > $OUT/cv_nvfp4.txt 2>&1; echo "nvfp4 rc=$?"
echo "bitcmp lines $(grep -h differ $OUT/cv_*.txt | wc -l), nonzero $(grep -h differ $OUT/cv_*.txt | grep -vc ' 0 of .* 0 unwritten')"; grep -h differ $OUT/cv_*.txt | grep -v ' 0 of .* 0 unwritten' | head -4
grep -h "speed-up\|ceil\|epi.* rp p1" $OUT/cv_*.txt
timeout 25 $D/test_backend_ops --filter $F --per-op 14 > $OUT/parity_default.txt 2>&1; echo "parity_default rc=$? OK=$(grep -c ' OK$' $OUT/parity_default.txt) FAIL=$(grep -c FAIL $OUT/parity_default.txt)"
