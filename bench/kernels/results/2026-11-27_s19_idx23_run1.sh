#!/usr/bin/env bash
# IDX23 (session 19) device call 1: ncu census of the T=1 x 256K FP4 top-512 list score kernel
# (indexer_score_three_kernel<bf16, 3, true>) on main's binary, A/B of main 4a2dd45's bench_attention
# vs wip/idx23 (default = hoisted descriptor / 32-bit counters / PRMT scales; DSV4_IDX23=1..3 the
# variants), --indexer-plan-only --indexer-trace, rounds alternated; ncu of the best variant; parity.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-idx23; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/idx23/idx23_r1.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu); $NCU --version | tail -1
summ() {  # one process's log -> plan rows + score loop trace
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
  grep -E "score loop end (min|med|max)|2 CTAs  16 passes|score end max|select end max" $f | head -6 | sed -E 's/ +/ /g' | tr '\n' ';'; echo
}
bench() {  # tag var round
  local tag=$1 var=$2 r=$3 bin=$G/bench_attention; [ $tag = main ] && bin=$G/bench_attention_base
  local extra="--no-ceilings"; [ $r = 1 ] && [ $tag = main ] && extra=""
  echo "== $tag r$r t+$(el)" >> $OUT/bench_$tag.txt
  DSV4_IDX23=$var timeout 20 $bin --indexer-plan-only --indexer-trace $extra > $OUT/cur.txt 2>&1; local rc=$?
  cat $OUT/cur.txt >> $OUT/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $OUT/cur.txt)"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="main:0 v0:0 v1:1 v2:2 v3:3"; else order="v3:3 v2:2 v1:1 v0:0 main:0"; fi
  for x in $order; do bench ${x%%:*} ${x##*:} $r; done
done
rm -f $OUT/cur.txt
# Best variant by the median of its top-512 plan rows.
best=$(for t in v0 v1 v2 v3; do grep -E "^  fp4 plan.*top_k=512 " $OUT/bench_$t.txt | awk -v t=$t '{print $(NF-3), t}'; done | sort -n | awk '{c[$2]++; v[$2, c[$2]]=$1} END {for (t in c) {n=c[t]; print v[t, int((n+1)/2)], t}}' | sort -n | head -1 | awk '{print $2}')
echo "best variant: $best t+$(el)"
ncu_run() {  # tag bin var
  local tag=$1 bin=$2 var=$3
  DSV4_IDX23=$var timeout 75 $NCU --clock-control none --set full --import-source no -k regex:indexer_score_three_kernel -s 3 -c 1 -f -o /tmp/ncu_$tag \
    $bin --indexer-plan-only --no-ceilings > $OUT/ncu_${tag}_log.txt 2>&1
  echo "ncu $tag rc=$? t+$(el)"
  $NCU -i /tmp/ncu_$tag.ncu-rep --page details > $OUT/ncu_${tag}_details.txt 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page raw --csv > /tmp/raw_$tag.csv 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass > /tmp/src_$tag.csv 2>/tmp/src_err_$tag.txt
  head -c 300 /tmp/src_err_$tag.txt
  python3 -c "
import gzip,shutil,sys
for s,d in (('/tmp/raw_$tag.csv','$OUT/ncu_${tag}_raw.csv.gz'),('/tmp/src_$tag.csv','$OUT/ncu_${tag}_src.csv.gz')):
  shutil.copyfileobj(open(s,'rb'), gzip.open(d,'wb'))
"
  grep -E "Duration|Executed Ipc A|Issue Slots Busy|Issued Warp Per|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |Registers Per|Achieved Occupancy|Tensor|Compute \(SM\) Th|Memory Throughput" $OUT/ncu_${tag}_details.txt | head -20 | sed -E 's/ +/ /g'
}
ncu_run main $G/bench_attention_base 0
v=${best#v}; [ -z "$v" ] && v=0
[ $(el) -lt 115 ] && ncu_run $best $G/bench_attention $v
echo "== parity t+$(el)"
P=$OUT/parity; mkdir -p $P
lim=$(( 185 - $(el) )); [ $lim -gt 60 ] && lim=60; [ $lim -lt 20 ] && lim=20
p() { local tag=$1 var=$2; shift 2; DSV4_IDX23=$var timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; }
p list 0 --filter indexer_fast_fp4_list &
p three 0 --filter indexer_fast_fp4_three &
p bf16 0 --filter indexer_fast,indexer_fast_fp8 &
p list_v1 1 --filter indexer_fast_fp4_list &
p list_v2 2 --filter indexer_fast_fp4_list &
p list_v3 3 --filter indexer_fast_fp4_list &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-120)"; grep FAIL $f | head -3 | cut -c1-250; done
tail -2 $P/gpu_model.txt
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "done t+$(el)"
