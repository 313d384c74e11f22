# PREFILL10 call 2 (binaries of wip/prefill10 with the phased epilogue, carried as .wt/prefill10/bins.tar.xz)
set -o pipefail; export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill10/bins.tar.xz /tmp/b && nvidia-smi -L
timeout 25 /tmp/b/test_backend_ops --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked --per-op 16 > $OUT/parity_rp.txt 2>&1; echo "parity_rp rc=$? OK=$(grep -c ' OK$' $OUT/parity_rp.txt) FAIL=$(grep -c FAIL $OUT/parity_rp.txt)"
B=/tmp/b/bench_kernels/bench_moe_linear
timeout 45 $B --ws-epis 0,4,2 --ws-t 1024,4096,8192 --formats mxfp4 > $OUT/epi_mxfp4.txt 2>&1; echo "mxfp4 rc=$?"
timeout 42 $B --ws-epis 0,4,2 --ws-t 1024,4096,8192 --formats nvfp4 > $OUT/epi_nvfp4.txt 2>&1; echo "nvfp4 rc=$?"
timeout 10 /tmp/b/test_backend_ops --filter moe_prefill_wgmma_ws,moe_prefill_official_wgmma_ws --per-op 6 > $OUT/parity_ws.txt 2>&1; echo "parity_ws rc=$? OK=$(grep -c ' OK$' $OUT/parity_ws.txt) FAIL=$(grep -c FAIL $OUT/parity_ws.txt)"
echo "bitcmp lines $(grep -h differ $OUT/epi_*.txt | wc -l), nonzero $(grep -h differ $OUT/epi_*.txt | grep -vc ' 0 of .* 0 unwritten')"; grep -h differ $OUT/epi_*.txt | grep -v ' 0 of .* 0 unwritten' | head -4
grep -h "speed-up\|ceil\|epi. rp p1" $OUT/epi_*.txt
