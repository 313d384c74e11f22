#!/usr/bin/env bash
# IDX26 (session 20) device call 2: the final tree (wip/idx26 0ec29a6: packed block multipliers read by
# HMUL2 half operands, a loop-invariant score row per lane, score_bin; 308 -> 295 SASS per warp-pass)
# against main a0411a2's bench_attention (base), --indexer-plan-only --indexer-trace, 4 rounds
# alternated; the measurement build 4856077 (bench_attention_meas, DSV4_IDX26 = 0 none, 1 score_bin,
# 2 lane score row, 4 packed multipliers, 7 all three, 39 all three + four stages) 3 rounds for the
# parts; --indexer-chain base / final; ncu stall reasons base / final; parity of the final tree
# (indexer_fast_fp4_list + _three + fp4_pack, indexer_fast + _fp8, indexer_fast_fp4 long, test_gpu_model).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-idx26; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/idx26/idx26_r2.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
L=/tmp/idx26_logs2; rm -rf $L; mkdir -p $L/parity $L/ncu
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
  awk '/trace score_list/ {f=1} /trace collect/ {f=0} f && /score loop end (med|max)|score end max/' $f | head -3 | sed -E 's/ +/ /g; s/\(min [0-9.]+, max [0-9.]+\)//' | tr '\n' ';'; echo
}
envof() { case $1 in m*) echo "DSV4_IDX26=${1#m}";; *) echo "DSV4_IDX26_UNUSED=1";; esac; }
binof() { case $1 in base) echo $G/bench_attention_base;; final) echo $G/bench_attention;; *) echo $G/bench_attention_meas;; esac; }
bench() {  # tag round
  local tag=$1 r=$2 extra="--no-ceilings"; [ $r -le 2 ] && extra=""
  echo "== $tag r$r t+$(el) $(envof $tag)" >> $L/bench_$tag.txt
  env $(envof $tag) timeout 20 $(binof $tag) --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores; list trace"
tags="base final m0 m1 m2 m4 m7 m39"
for r in 1 2 3 4; do
  case $r in 1) order="base final m0 m1 m2 m4 m7 m39";; 2) order="m39 m7 m4 m2 m1 m0 final base";; 3) order="final base m1 m0 m4 m2 m39 m7";; 4) order="base final final base";; esac
  for x in $order; do bench $x $r; done
  [ $(el) -lt 60 ] || break
done
rm -f $L/cur.txt
med() {  # tag k -> median of its plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
meds() {  # tag k -> median of its scores rows
  grep -E -A1 "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | grep -E "^    scores" | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s", v[int((NR+1)/2)]}'
}
medl() {  # tag -> median of the list path's score loop end max rows
  awk '/trace score_list/ {f=1} /trace collect/ {f=0} f && /score loop end max/ {print $5}' $L/bench_$1.txt | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in $tags; do echo "median $x: top-512 plan $(med $x 512) scores $(meds $x 512); top-1024 plan $(med $x 1024) scores $(meds $x 1024); loop end max $(medl $x)"; done
echo "== chain t+$(el)"
for r in 1 2; do
  for x in base final; do
    echo "== $x chain r$r" >> $L/chain_$x.txt
    timeout 20 $(binof $x) --indexer-chain --no-ceilings > $L/cur.txt 2>&1
    cat $L/cur.txt >> $L/chain_$x.txt
    echo "$x chain r$r per call top-512 / top-1024: $(grep -E '^    8 calls' $L/cur.txt | awk '{printf "%s ", $(NF-7)}')"
  done
done
rm -f $L/cur.txt
echo "== ncu t+$(el)"
for x in base final; do
  timeout 40 $NCU --clock-control none --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --metrics regex:^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$ \
    -k regex:indexer_score_three_kernel -s 3 -c 1 $(binof $x) --indexer-plan-only --no-ceilings > $L/ncu/${x}_details.txt 2>&1
  rc=$?; if [ $rc != 0 ]; then tail -3 $L/ncu/${x}_details.txt; timeout 40 $NCU --clock-control none --section WarpStateStats --section SchedulerStats --section InstructionStats \
    -k regex:indexer_score_three_kernel -s 3 -c 1 $(binof $x) --indexer-plan-only --no-ceilings > $L/ncu/${x}_details.txt 2>&1; fi
  echo "ncu $x rc=$rc t+$(el): $(grep -E 'Issue Slots Busy|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  ' $L/ncu/${x}_details.txt | head -4 | sed -E 's/ +/ /g' | tr '\n' ';')"
  grep -E "stalled_(barrier|wait|not_selected|selected|gmma|long_scoreboard|short_scoreboard|math_pipe_throttle|dispatch_stall|no_instruction|imc_miss|mio_throttle|lg_throttle|branch_resolving|membar|sleeping|drain|misc|tex_throttle)_per" $L/ncu/${x}_details.txt | sed -E 's/^ *smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active\.ratio.* ([0-9.]+) *$/\1=\2/' | tr '\n' ' '; echo
done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 192 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p fp4_long --filter indexer_fast_fp4 &
p fp4_list_three_pack --filter indexer_fp4_pack,indexer_fast_fp4_list,indexer_fast_fp4_three &
p bf16_fp8 --filter indexer_fast,indexer_fast_fp8 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-240; done
tar czf $OUT/idx26_r2_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
