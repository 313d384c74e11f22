# PREFILL10 call 1 (binaries of wip/prefill10 d77ccb8, carried as .wt/prefill10/bins.tar.xz)
set -o pipefail; export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill10/bins.tar.xz /tmp/b && nvidia-smi -L
timeout 25 /tmp/b/test_backend_ops --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked --per-op 14 > $OUT/parity_rp.txt 2>&1; echo "parity_rp rc=$? OK=$(grep -c ' OK$' $OUT/parity_rp.txt) FAIL=$(grep -c FAIL $OUT/parity_rp.txt)"
B=/tmp/b/bench_kernels/bench_moe_linear
timeout 52 $B --ws-lags 0,1,2,3 --ws-t 1024,4096,8192 --formats mxfp4 > $OUT/lags_mxfp4.txt 2>&1; echo "mxfp4 rc=$?"
timeout 50 $B --ws-lags 0,1,2,3 --ws-t 1024,4096,8192 --formats nvfp4 > $OUT/lags_nvfp4.txt 2>&1; echo "nvfp4 rc=$?"
timeout 10 /tmp/b/test_backend_ops --filter moe_prefill_wgmma_ws,moe_prefill_official_wgmma_ws --per-op 6 > $OUT/parity_ws.txt 2>&1; echo "parity_ws rc=$? OK=$(grep -c ' OK$' $OUT/parity_ws.txt) FAIL=$(grep -c FAIL $OUT/parity_ws.txt)"
grep -h "differ" $OUT/lags_*.txt | grep -v " 0 of " | head; echo "bitcmp lines $(grep -h differ $OUT/lags_*.txt | wc -l), nonzero $(grep -h differ $OUT/lags_*.txt | grep -vc ' 0 of .* 0 unwritten')"
grep -h "speed-up\|ceil" $OUT/lags_*.txt
