#!/usr/bin/env bash
# IDX26 (session 20) device call 1: the list score loop software-pipelined. Binaries: main a0411a2's
# bench_attention (base, /work/main/build-cuda) and wip/idx26's (DSV4_IDX26 picks the fast list
# kernel's loop: 0 = IDX23's = main's SASS, 1 = pass p+1's codes read during pass p's wgmmas and its
# widening in one block with pass p's epilogue, 2 = two A register sets: pass p+1 widened during pass
# p's wgmmas, weights in shared memory). --indexer-plan-only --indexer-trace 4 rounds rotated,
# --indexer-chain 2 rounds; ncu (warp state / scheduler / pipes) of v0 v1 v2; parity (the list family
# under v1 and v2, the others and test_gpu_model under the default v1). Outputs in one archive.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu-idx26; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/idx26/idx26_r1.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
L=/tmp/idx26_logs; rm -rf $L; mkdir -p $L/parity $L/ncu
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
  grep -E "score loop end (med|max)|CTAs +[0-9]+ passes|score end max" $f | head -6 | sed -E 's/ +/ /g; s/\(min [0-9.]+, max [0-9.]+\)//' | tr '\n' ';'; echo
}
envof() { case $1 in base) echo "DSV4_IDX26=1";; v*) echo "DSV4_IDX26=${1#v}";; esac; }
binof() { if [ $1 = base ]; then echo $G/bench_attention_base; else echo $G/bench_attention; fi; }
bench() {  # tag round
  local tag=$1 r=$2 extra="--no-ceilings"; [ $r -le 2 ] && extra=""
  echo "== $tag r$r t+$(el) $(envof $tag)" >> $L/bench_$tag.txt
  env $(envof $tag) timeout 20 $(binof $tag) --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
tags="base v0 v1 v2"
for r in 1 2 3 4; do
  case $r in 1) order="base v0 v1 v2";; 2) order="v2 v1 v0 base";; 3) order="v1 base v2 v0";; 4) order="v0 v2 base v1";; esac
  for x in $order; do bench $x $r; done
  [ $(el) -lt 50 ] || break
done
rm -f $L/cur.txt
med() {  # tag k -> median of its plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
medl() {  # tag -> median of the score loop end max rows
  awk '/trace score_list/ {f=1} /trace collect/ {f=0} f && /score loop end max/ {print $5}' $L/bench_$1.txt | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in $tags; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024); loop end max $(medl $x)"; done
echo "== chain t+$(el)"
for r in 1 2; do
  for x in base v0 v1 v2; do
    echo "== $x chain r$r" >> $L/chain_$x.txt
    env $(envof $x) timeout 20 $(binof $x) --indexer-chain --no-ceilings > $L/cur.txt 2>&1
    cat $L/cur.txt >> $L/chain_$x.txt
    echo "$x chain r$r: $(grep -E 'per call' $L/cur.txt | awk '{printf "%s ", $(NF-7)}')"
  done
done
rm -f $L/cur.txt
echo "== ncu t+$(el)"
for x in v0 v1 v2; do
  env $(envof $x) timeout 40 $NCU --clock-control none --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section LaunchStats --section InstructionStats \
    -k regex:indexer_score_three_kernel -s 3 -c 1 $(binof $x) --indexer-plan-only --no-ceilings > $L/ncu/${x}_details.txt 2>&1
  echo "ncu $x rc=$? t+$(el): $(grep -E 'Duration|Issue Slots Busy|No Eligible|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |Registers Per' $L/ncu/${x}_details.txt | head -8 | sed -E 's/ +/ /g' | tr '\n' ';')"
  [ $(el) -lt 110 ] || break
done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 170 ] && lim=170; [ $lim -lt 30 ] && lim=30
p() { local tag=$1 v=$2; shift 2; DSV4_IDX26=$v timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p fp4_long 1 --filter indexer_fast_fp4 &
p fp4_list_v1 1 --filter indexer_fast_fp4_list &
p fp4_list_v2 2 --filter indexer_fast_fp4_list &
p three_bf16_fp8 1 --filter indexer_fast_fp4_three,indexer_fast,indexer_fast_fp8 &
(DSV4_IDX26=1 timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-240; done
tar czf $OUT/idx26_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
