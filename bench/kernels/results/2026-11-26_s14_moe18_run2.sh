# MOE18 verification (for whoever has device time): main (ae1ea32) vs 128-byte aligned ring (wip/moe18 7a68905).
# carry [".wt/moe18", ".deps"]; ~90-110 s wall.
set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe18/bins2.tar.xz /tmp/b
nvidia-smi -L; cat /tmp/b/commit.txt; cd /tmp/b
(timeout 100 ./test_backend_ops --filter moe_decode_repacked > $OUT/moe18_parity_a.txt 2>&1) &
(timeout 100 ./test_backend_ops --filter moe_decode_official_repacked > $OUT/moe18_parity_b.txt 2>&1) &
wait
for f in a b; do echo "== parity $f: $(grep -c ' OK' $OUT/moe18_parity_$f.txt) OK, $(grep -c FAIL $OUT/moe18_parity_$f.txt) FAIL; $(tail -1 $OUT/moe18_parity_$f.txt)"; done
for v in main align main align; do echo "=== $v"; timeout 40 ./bench_$v --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --formats mxfp4 --tokens 1,4,16,64 --replays 15 2>&1 | tee -a $OUT/moe18_bench_$v.txt | grep -E "read-only kernel  4096|bf16 "; done
M=lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
for v in main align; do echo "=== ncu $v"; timeout 30 ncu --clock-control none --metrics $M -k regex:moe_decode_gemm -c 2 ./bench_$v --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --shapes flash --formats mxfp4 --tokens 16 --replays 5 2>&1 | grep -E "lts__|dram__|gpu__time" | tee -a $OUT/moe18_ncu_check.txt; done
