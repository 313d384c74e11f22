#!/usr/bin/env bash
# Session 26 KVFP8C helper, run 1 (the one call): FP8-record decode, the records converted by the
# tile's owner warpgroup instead of the producer (plan.diag 64; 192: in two parts around the first
# part's S), a runtime option of one binary. Binaries (commit.txt): bench_attention / test_backend_ops /
# test_gpu_model of wip/kvfp8c; bench_attention_base = main a153b30 (/work/base26).
# (1) parity: attention_decode_fp8 + attention_decode_fold (with the diag 64 / 192 cases),
#     attention_decode + sparse_attention, test_gpu_model --only-kv-fp8;
# (2) --kv-fp8-ab base / new / new / base (one process each; inside new: bf16 pools, records,
#     diag 64, diag 192 in turn, 2 rounds, outputs compared byte for byte, ring / consumer bounds);
# (3) ncu (full set, source counters) of the records kernel at HCA 1M T=32 under diag 64, if time.
# Call: run(command="bash .bin/kvfp8c/kvfp8c_r1.sh", carry=[".bin/kvfp8c", ".deps"], timeout_s=170)
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
G=build-gpu-kvfp8c; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/kvfp8c/kvfp8c_r1.tar.xz $G
cat $G/commit.txt; echo "extracted t=$(el)"
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
L=/tmp/kvfp8c_logs; rm -rf $L; mkdir -p $L
save() { tar czf $OUT/kvfp8c_logs.tgz -C $L . 2>/dev/null; }
(timeout 90 $G/test_backend_ops --filter attention_decode_fp8,attention_decode_fold > $L/parity_fp8.txt 2>&1; echo "exit $?" >> $L/parity_fp8.txt) &
(timeout 90 $G/test_backend_ops --filter attention_decode,sparse_attention > $L/parity_attn.txt 2>&1; echo "exit $?" >> $L/parity_attn.txt) &
(timeout 90 $G/test_gpu_model --only-kv-fp8 > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt) &
wait
for f in parity_fp8 parity_attn; do
  echo "== $f: $(grep -c ' OK' $L/$f.txt) OK, $(grep -c FAIL $L/$f.txt) FAIL; $(grep -E 'passed|failed' $L/$f.txt | tail -1); $(tail -1 $L/$f.txt)"
  grep FAIL $L/$f.txt | head -5 | cut -c1-250
done
grep -E "diag (64|192)" $L/parity_fp8.txt | cut -c1-200 | head -8
echo "== gpu_model: $(grep -E 'passed|failed|differ' $L/gpu_model.txt | tail -3 | tr '\n' ' ') $(tail -1 $L/gpu_model.txt)"
echo "parity done t=$(el)"; save
ab() {  # ab BIN TAG
  timeout 60 $G/$1 --kv-fp8-ab > $L/ab_$2.txt 2>&1; echo "ab $2 rc=$? t=$(el)"
  grep -E 'fp8/bf16' $L/ab_$2.txt | sed -E 's/ +/ /g' | cut -c1-170
  grep -E '^    (ring|fp8 con)' $L/ab_$2.txt | sed -E 's/ +/ /g' | cut -c1-110
}
ab bench_attention_base base_r1; save
ab bench_attention new_r1; save
ab bench_attention new_r2; save
ab bench_attention_base base_r2; save
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
ncu_run() {  # ncu_run TAG DIAG CASE
  local tag=$1
  DSV4_KVFP8_NCU="$2" timeout 35 $NCU --clock-control none --set full --import-source no -k regex:attention_decode_ws_kernel \
    -s 1 -c 1 -f -o /tmp/ncu_$tag $G/bench_attention --kv-fp8-ab --cases "$3" > $L/ncu_${tag}_log.txt 2>&1
  echo "ncu $tag rc=$? t=$(el)"
  $NCU -i /tmp/ncu_$tag.ncu-rep --page details > $L/ncu_${tag}_details.txt 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass > /tmp/src_$tag.csv 2>/dev/null
  python3 scripts/ncu_source_top.py /tmp/src_$tag.csv > $L/ncu_${tag}_src_top.txt 2>&1
  grep -E "^    (Duration|Elapsed Cycles|SM Frequency|DRAM Throughput|Issue Slots Busy|Executed Instructions  )" $L/ncu_${tag}_details.txt | head -8 | sed -E 's/ +/ /g'
  grep -E "samples by (opcode|reason)" $L/ncu_${tag}_src_top.txt | cut -c1-300
}
[ $(el) -lt 95 ] && ncu_run hca32_cc64 64 "32,64,hca,1048576,0"; save
echo "done t=$(el)"; ls -la $OUT
