# PREFILL9 call 2 (H200, binaries of wip/prefill9 ef840db: diagnostic consumer variants 3/4/5)
set -o pipefail; export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/prefill9/bins.tar.xz /tmp/b
timeout 20 /tmp/b/test_backend_ops --filter moe_prefill_wgmma_ws_repacked,moe_prefill_official_wgmma_ws_repacked,moe_prefill_wgmma_ws --per-op 22 > $OUT/parity2.txt 2>&1
timeout 68 /tmp/b/bench_kernels/bench_moe_linear --prefill-ws --formats mxfp4 > $OUT/diag_mxfp4.txt 2>&1
timeout 48 /tmp/b/bench_kernels/bench_moe_linear --prefill-ws --formats nvfp4 --shapes flash > $OUT/diag_nvfp4.txt 2>&1
