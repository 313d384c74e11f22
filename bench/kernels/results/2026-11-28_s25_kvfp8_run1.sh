#!/usr/bin/env bash
# Session 25 KVFP8 helper, run 1 (the one call): FP8-record decode attention vs bf16 pools.
# Binaries: bench_attention / test_backend_ops / test_gpu_model of wip/kvfp8 (the records producer's
# L2 prefetch, plan.record_prefetch 0..3, bulk or line form; the plan's provisional default lines pf2),
# bench_attention_base = main f96e1cc (build-s23).
# (1) parity: attention_decode_fp8 + attention_decode_fold (with the new prefetch cases),
#     attention_decode + sparse_attention, test_gpu_model --only-kv-fp8 (alone of its kind);
# (2) bench: main's --kv-fp8, this --kv-fp8-ab (every prefetch variant and bf16 pools on the engine's
#     plan, two rounds in alternating order per process; ring / consumers alone), this --kv-fp8
#     (the default in main's rows), second processes of both;
# (3) ncu (full set, source counters) of the records kernel: HCA 1M T=32 pf0 (main's producer) and
#     the provisional default, Flash CSA T=32 pf0, as time allows.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-kvfp8; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/kvfp8/kvfp8_r1.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/kvfp8_logs; rm -rf $L; mkdir -p $L
echo "== parity t=$(el)"
(timeout 100 $G/test_backend_ops --filter attention_decode_fp8,attention_decode_fold > $L/parity_fp8.txt 2>&1; echo "exit $?" >> $L/parity_fp8.txt) &
(timeout 100 $G/test_backend_ops --filter attention_decode,sparse_attention > $L/parity_attn.txt 2>&1; echo "exit $?" >> $L/parity_attn.txt) &
(timeout 100 $G/test_gpu_model --only-kv-fp8 > $L/gpu_model.txt 2>&1; echo "exit $?" >> $L/gpu_model.txt) &
wait
for f in parity_fp8 parity_attn; do
  echo "== $f: $(grep -c ' OK' $L/$f.txt) OK, $(grep -c FAIL $L/$f.txt) FAIL; $(grep -E 'passed|failed' $L/$f.txt | tail -1); $(tail -1 $L/$f.txt)"
  grep FAIL $L/$f.txt | head -5 | cut -c1-250
done
echo "== gpu_model: $(grep -E 'passed|failed|differ' $L/gpu_model.txt | tail -3 | tr '\n' ' ') $(tail -1 $L/gpu_model.txt)"
echo "parity done t=$(el)"
ab() {  # ab ROUND
  timeout 70 $G/bench_attention --kv-fp8-ab > $L/ab_r$1.txt 2>&1; echo "ab r$1 rc=$? t=$(el)"
  grep -E 'fp8/bf16' $L/ab_r$1.txt | sed -E 's/ +/ /g' | cut -c1-150
  grep -E '^    (ring|noconv)|consumers alone' $L/ab_r$1.txt | sed -E 's/ +/ /g' | cut -c1-110 | head -48
}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
ncu_run() {  # ncu_run TAG PF LINES CASE
  local tag=$1
  DSV4_KVFP8_NCU="$2,$3" timeout 40 $NCU --clock-control none --set full --import-source no -k regex:attention_decode_ws_kernel \
    -s 1 -c 1 -f -o /tmp/ncu_$tag $G/bench_attention --kv-fp8-ab --cases "$4" > $L/ncu_${tag}_log.txt 2>&1
  echo "ncu $tag rc=$? t=$(el)"
  $NCU -i /tmp/ncu_$tag.ncu-rep --page details > $L/ncu_${tag}_details.txt 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass > /tmp/src_$tag.csv 2>/dev/null
  python3 scripts/ncu_source_top.py /tmp/src_$tag.csv > $L/ncu_${tag}_src_top.txt 2>&1
  gzip -c /tmp/src_$tag.csv > $L/ncu_${tag}_src.csv.gz
  grep -E "^    (Duration|Elapsed Cycles|SM Frequency|DRAM Throughput|Issue Slots Busy|Issued Warp Per|No Eligible|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |L2 Hit Rate|Memory Throughput)" $L/ncu_${tag}_details.txt | head -14 | sed -E 's/ +/ /g'
  grep -E "samples by (opcode|reason)" $L/ncu_${tag}_src_top.txt | cut -c1-400
}
kv() {  # kv base|new ROUND
  local bin=$G/bench_attention; [ $1 = base ] && bin=$G/bench_attention_base
  timeout 50 $bin --kv-fp8 > $L/kvfp8_$1_r$2.txt 2>&1; echo "kv-fp8 $1 r$2 rc=$? t=$(el)"
  grep -E '^  new fp8 records|fp8 / bf16 time' $L/kvfp8_$1_r$2.txt | sed -E 's/ +/ /g' | cut -c1-120
}
save() { tar czf $OUT/kvfp8_logs.tgz -C $L . 2>/dev/null; }
save
kv base 1; save
ab 1; save
[ $(el) -lt 170 ] && ncu_run hca32_pf0 0 0 "32,64,hca,1048576,0"; save
[ $(el) -lt 175 ] && ab 2; save
[ $(el) -lt 185 ] && ncu_run hca32_l2 2 1 "32,64,hca,1048576,0"; save
[ $(el) -lt 195 ] && kv new 1; save
[ $(el) -lt 200 ] && ncu_run csa32_pf0 0 0 "32,64,csa,1048576,512"
tar czf $OUT/kvfp8_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"; ls -la $OUT
