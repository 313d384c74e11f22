#!/usr/bin/env bash
# IDX24 (session 19) device call 1: FP4 indexer keys in the stored bit order (io/indexer_fp4_key.h:
# indexer_fp4_store_word; 11 integer ops per word of 4 pairs instead of 15). A/B of main 94ec700's
# bench_attention (_base) vs wip/idx24's, --indexer-plan-only --indexer-trace, 4 rounds alternated;
# then parity: indexer_fp4_pack + fp4_list + fp4_three, indexer_fast + _fp8, indexer_fast_fp4 (long),
# test_gpu_model, all in parallel. Outputs in one archive.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx24/idx24_r1.tar.xz
G=build-gpu-idx24; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx24_logs; rm -rf $L; mkdir -p $L/parity
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E "^  fp4 plan|^    scores" $f | awk '{printf "%s ", $(NF-3)}')"
  grep -E "score loop end (med|max)|score end max" $f | head -4 | sed -E 's/ +/ /g; s/\(min [0-9.]+, max [0-9.]+\)//' | tr '\n' ';'; echo
}
bench() {  # tag round
  local tag=$1 r=$2 bin=$G/bench_attention; [ $tag = main ] && bin=$G/bench_attention_base
  local extra="--no-ceilings"; [ $r -le 2 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  timeout 25 $bin --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
echo "cols: ceilings | top-512 plan scores again scores, top-1024 plan scores again scores"
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then order="main new"; else order="new main"; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 60 ] || break
done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan.*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in main new; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 185 - $(el) )); [ $lim -gt 120 ] && lim=120; [ $lim -lt 30 ] && lim=30
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p fp4_long --filter indexer_fast_fp4 &
p fp4_list_three_pack --filter indexer_fp4_pack,indexer_fast_fp4_list,indexer_fast_fp4_three &
p bf16_fp8 --filter indexer_fast,indexer_fast_fp8 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -2 | cut -c1-200; done
tar czf $OUT/idx24_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
