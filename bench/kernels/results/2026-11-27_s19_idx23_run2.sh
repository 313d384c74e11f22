#!/usr/bin/env bash
# IDX23 (session 19) device call 2: A/B of main 4a2dd45's bench_attention vs wip/idx23 d22e55c
# (v0 = default: hoisted descriptor / 32-bit counters / PRMT scales; DSV4_IDX23=1 two-CTA bounds +
# weights in registers, 4 pass table, 5 pass table + issue after the MMAs' commit, 6 = 5 with all A
# fragments first; c3 = DSV4_IDX23_CTAS=3 three list CTAs per SM), --indexer-plan-only
# --indexer-trace, 3 rounds alternated; ncu (full + source) of main and of the best; parity (the
# list family under every variant, the best under test_gpu_model). Outputs in two archives.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-idx23; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/idx23/idx23_r2.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
L=/tmp/idx23_logs; rm -rf $L; mkdir -p $L/parity $L/ncu
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
  grep -E "score loop end (med|max)|CTAs +[0-9]+ passes|score end max" $f | head -6 | sed -E 's/ +/ /g; s/\(min [0-9.]+, max [0-9.]+\)//' | tr '\n' ';'; echo
}
envof() {  # tag -> env assignments
  case $1 in main|v0) echo "DSV4_IDX23=0";; c3) echo "DSV4_IDX23=0 DSV4_IDX23_CTAS=3";; v*) echo "DSV4_IDX23=${1#v}";; esac
}
bench() {  # tag round
  local tag=$1 r=$2 bin=$G/bench_attention; [ $tag = main ] && bin=$G/bench_attention_base
  local extra="--no-ceilings"; [ $r = 1 ] && [ $tag = main ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  env $(envof $tag) timeout 20 $bin --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
tags="main v0 v1 v4 v5 v6 c3"; rev="c3 v6 v5 v4 v1 v0 main"
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order=$tags; else order=$rev; fi
  for x in $order; do bench $x $r; done
done
rm -f $L/cur.txt
med() {  # tag -> median of its top-512 plan rows
  grep -E "^  fp4 plan.*top_k=512 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}
for x in $tags; do echo "median top-512 plan $x $(med $x)"; done
best=$(for x in v0 v1 v4 v5 v6 c3; do echo "$(med $x) $x"; done | sort -n | head -1 | awk '{print $2}')
echo "best: $best t+$(el)"
ncu_run() {  # tag
  local tag=$1 bin=$G/bench_attention; [ $tag = main ] && bin=$G/bench_attention_base
  env $(envof $tag) timeout 60 $NCU --clock-control none --set full --import-source no -k regex:indexer_score_three_kernel -s 3 -c 1 -f -o /tmp/ncu_$tag \
    $bin --indexer-plan-only --no-ceilings > $L/ncu/${tag}_log.txt 2>&1
  echo "ncu $tag rc=$? t+$(el)"
  $NCU -i /tmp/ncu_$tag.ncu-rep --page details > $L/ncu/${tag}_details.txt 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page raw --csv > $L/ncu/${tag}_raw.csv 2>&1
  $NCU -i /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass > $L/ncu/${tag}_src.csv 2>$L/ncu/${tag}_src_err.txt
  grep -E "Duration|Issue Slots Busy|No Eligible|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |Registers Per|Achieved Active Warps" $L/ncu/${tag}_details.txt | head -9 | sed -E 's/ +/ /g' | tr '\n' ';'; echo
}
ncu_run main
ncu_run $best
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 180 - $(el) )); [ $lim -gt 70 ] && lim=70; [ $lim -lt 20 ] && lim=20
p() { local tag=$1 envs=$2; shift 2; env $envs timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; }
for x in v0 v1 v4 v5 v6 c3; do p list_$x "$(envof $x)" --filter indexer_fast_fp4_list & done
p three_v0 "DSV4_IDX23=0" --filter indexer_fast_fp4_three &
p bf16_v0 "DSV4_IDX23=0" --filter indexer_fast,indexer_fast_fp8 &
(env $(envof $best) timeout $lim $G/test_gpu_model > $P/gpu_model_$best.txt 2>&1; echo "exit $?" >> $P/gpu_model_$best.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx23_r2_logs.tgz -C $L $(cd $L && ls | grep -v ncu) ncu/main_details.txt ncu/main_log.txt ncu/${best}_details.txt ncu/${best}_log.txt 2>/dev/null
tar czf $OUT/idx23_r2_ncu_csv.tgz -C $L/ncu $(cd $L/ncu && ls *.csv *_err.txt) 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
