#!/usr/bin/env bash
# Session 39 lead, call l39d (H200): the tree with 4 scale slots where W1/W3 is staged (2 <= T <= 4, H200 class; the
# new default, "qa") against 8 slots (the old default) at T = 1..8, MXFP4 and NVFP4, full clock; parity of every moe_decode* case
# (T = 2..4 now run the 4-slot kernels by default on this device); test_gpu_model. Third A/B configuration: W2 at RT 2
# (s-2): at T = 1 with W2P (y1; l39a 1.012-1.024x), at T = 2..4 without (the 4-slot path skips W2P); its T >= 5 rows
# (W2P forced to RT 2) are not a candidate.
set -uo pipefail
nvidia-smi -L
N=l39d
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/$N; rm -rf $L; mkdir -p $L; save() { tar czf $OUT/${N}_logs.tgz -C $L . 2>/dev/null; }
C=s0x4.2.4hwlpfgmcy5,s0x4.2.4hwlpfgmcqay5,s-2x4.2.4hwlpfgmcqay1
timeout -s KILL 330 $G/bench_moe_linear --decode-ab --ab-official --ab $C --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,2,3,4,5,8 --replays 12 --replay-gap-ms 80 > $L/fullclock.txt 2>&1
echo "== fullclock rc=$? t=$(el)"; grep -E "hbm read-only kernel  4096|speed vs" $L/fullclock.txt | cut -c1-300; save
OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode.*' BY=cases bash scripts/gpu_parity_all.sh 16 200 > $L/parity_run.txt 2>&1
echo "== parity rc=$? t=$(el)"; tail -3 $L/parity_run.txt; grep -rh FAIL $L/parity 2>/dev/null | head -8 | cut -c1-300; save
timeout -s KILL 170 $G/test_gpu_model > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt; echo "== gpu_model t=$(el): $(tail -2 $L/gpu_model.txt | tr '\n' ' ')"; grep FAIL $L/gpu_model.txt | head -3 | cut -c1-250
# SASS of the engine-path GEMM kernels (RP 2, ring, SLOTS; W1/W3 RT 2, W2 RT 4, W2P RT 4; SSO 0 and 4) for a census.
cuobjdump -sass $G/bench_moe_linear 2>/dev/null | awk '/Function : .*moe_decode_gemm_kernel.*(ELb1ELb0ELi2ELb1ELi2ELi0ELb1ELb0E|ELb0ELb0ELi4ELb1ELi2ELi0ELb1ELb0E|ELb0ELb0ELi4ELb1ELi2ELi0ELb1ELb1E|ELb1ELb0ELi2ELb1ELi2ELi4ELb1ELb0E)/{p=1} /Function : /{if($0 !~ /moe_decode_gemm_kernel.*(ELb1ELb0ELi2ELb1ELi2ELi0ELb1ELb0E|ELb0ELb0ELi4ELb1ELi2ELi0ELb1ELb0E|ELb0ELb0ELi4ELb1ELi2ELi0ELb1ELb1E|ELb1ELb0ELi2ELb1ELi2ELi4ELb1ELb0E)/)p=0} p' | xz -T4 > $L/gemm_sass.txt.xz; ls -la $L/gemm_sass.txt.xz
save; echo "done t=$(el)"
