# PREFILL9 call 1 (H200, binaries of wip/prefill9 e0c4b5d, carried as .wt/prefill9/bins.tar.xz)
set -o pipefail; export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill9/bins.tar.xz /tmp/b
timeout 25 /tmp/b/test_backend_ops --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked --per-op 11 > $OUT/parity_rp.txt 2>&1
timeout 82 /tmp/b/bench_kernels/bench_moe_linear --prefill-ws > $OUT/bench.txt 2>&1
timeout 20 /tmp/b/test_backend_ops --filter moe_prefill_wgmma_ws --per-op 22 > $OUT/parity_ws.txt 2>&1
timeout 14 /tmp/b/test_backend_ops --filter moe_prefill_official_wgmma_ws --per-op 17 > $OUT/parity_off.txt 2>&1
