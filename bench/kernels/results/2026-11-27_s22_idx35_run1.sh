#!/usr/bin/env bash
# IDX35 (session 22) device call 1: the listing's count word (indexer T=1 x 256K FP4 keys).
# Binaries: base = main 082824a's bench_attention (/work/main/build-cuda); wip/idx35-variants 17aaf16
# with DSV4_IDX35_MODE (read at the first plan; score_list_keys and the select kernel):
#   m0 = 1 list segment (one count word, main's layout), one add per warp, the select's new gather
#        (2 keys per thread, 2048 in the first trip); m1 / m2 = 8 / 16 segments, one add per warp
#        (word (CTA + warp) % S); m4 / m5 / m6 = 1 / 8 / 16 segments, one add per CTA (word CTA % S).
# 1. --indexer-plan-only --indexer-trace, 3 rounds, order reversed every other round; --indexer-chain
#    twice per config (forward, then reversed).
# 2. parity in parallel: the five families (m0), indexer_fast_fp4 (m0), indexer_fast_fp4_list in
#    m1 m2 m4 m5 m6, test_gpu_model ONE process in the mode with the best chained top-512.
set -uo pipefail
{
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/idx35/idx35_r1.tar.xz
G=build-gpu-idx35; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/idx35_logs; rm -rf $L; mkdir -p $L/parity
mode_of() { case $1 in m0) echo 0;; m1) echo 1;; m2) echo 2;; m4) echo 4;; m5) echo 5;; m6) echo 6;; *) echo "";; esac; }
run_cfg() {  # tag args...
  local tag=$1; shift
  if [ $tag = base ]; then timeout 25 $G/bench_attention_base "$@"
  else DSV4_IDX35_MODE=$(mode_of $tag) timeout 25 $G/bench_attention "$@"; fi
}
summ() {
  local f=$1
  echo "$(grep -E "ceiling|floor" $f | awk '{printf "%s ", $(NF-1)}')| $(grep -E '^  fp4 plan ' $f | awk '{printf "%s ", $(NF-3)}')| $(awk '/^indexer phase trace/ {k = ($0 ~ /top_k=512[^0-9]/) ? 512 : 1024} /trace score_list/ {s=1} /trace collect launch/ {s=0} s && /score listed max|select wait max|select F max|select end max/ {printf "%d:%s%s=%s ", k, substr($1,1,2), $2, $(NF-4)}' $f)| $(grep -E 'list segments' $f | sed -E 's/.*\(sum ([0-9]+), max ([0-9]+)\)/S\1,M\2/' | tr '\n' ' ')"
}
bench() {  # tag round
  local tag=$1 r=$2
  local extra="--no-ceilings"; [ $r -le 1 ] && extra=""
  echo "== $tag r$r t+$(el)" >> $L/bench_$tag.txt
  run_cfg $tag --indexer-plan-only --indexer-trace $extra > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "$tag r$r rc$rc t+$(el) $(summ $L/cur.txt)"
}
chain() {  # tag
  local tag=$1
  echo "== chain $tag t+$(el)" >> $L/chain.txt
  run_cfg $tag --indexer-chain --no-ceilings > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/chain.txt
  echo "chain $tag rc$rc t+$(el) $(grep -E 'calls in one graph' $L/cur.txt | sed -E 's/.*per call ([0-9.]+) us.*/\1/' | tr '\n' ' ') | 1 call: $(grep -E '1 call' $L/cur.txt | awk '{printf "%s ", $(NF-3)}')"
}
CF="base m0 m1 m2 m4 m5 m6"; CR="m6 m5 m4 m2 m1 m0 base"
echo "cols: ceilings | plan top-512 again, top-1024 again | trace (top-512 / 1024 score_list: score listed max, select wait/F/end max) | segments sum,max (512 1024)"
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order=$CF; else order=$CR; fi
  for x in $order; do bench $x $r; done
  [ $(el) -lt 75 ] || break
done
for x in $CF $CR; do chain $x; done
rm -f $L/cur.txt
med() {  # tag k -> median of its top-k plan rows
  grep -E "^  fp4 plan .*top_k=$2 " $L/bench_$1.txt | awk '{print $(NF-3)}' | sort -n | awk '{v[NR]=$1} END {printf "%s (n=%d, min %s, max %s)", v[int((NR+1)/2)], NR, v[1], v[NR]}'
}
for x in $CF; do echo "median plan $x: top-512 $(med $x 512); top-1024 $(med $x 1024)"; done
# chained per call (top-512) per config, mean of its processes; the best mode runs test_gpu_model
awk '/^== chain/ {tag=$3; n=0} /calls in one graph/ {n++; if (n==1) {split($0,a,"per call "); split(a[2],b," "); s[tag]+=b[1]; c[tag]++}} END {for (t in s) printf "chain512 %s %.3f\n", t, s[t]/c[t]}' $L/chain.txt | sort -k3 -n | tee $L/chain_rank.txt
best=$(grep -v " base " $L/chain_rank.txt | head -1 | awk '{print $2}'); [ -z "$best" ] && best=m2
echo "best mode for test_gpu_model: $best ($(mode_of $best))"
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 190 - $(el) )); [ $lim -gt 130 ] && lim=130; [ $lim -lt 40 ] && lim=40
echo "parity limit ${lim}s"
p() { local tag=$1 mode=$2 bin=$3; shift 3; DSV4_IDX35_MODE=$mode timeout $lim $G/$bin "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
F=indexer_fast,indexer_fast_fp8,indexer_fast_fp4_list,indexer_fast_fp4_three,indexer_fp4_pack
p m0_fp4_long 0 test_backend_ops --filter indexer_fast_fp4 &
p m0_families 0 test_backend_ops --filter $F &
for m in 1 2 4 5 6; do p m${m}_fp4_list $m test_backend_ops --filter indexer_fast_fp4_list & done
p ${best}_gpu_model $(mode_of $best) test_gpu_model &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-220; done
grep -h "zero-weights.*sms=3\|zero_weights.*sms=3" $P/*fp4_list*.txt $P/m0_families.txt | cut -c1-200
tar czf $OUT/idx35_r1_logs.tgz -C $L . 2>/dev/null
echo "done t+$(el)"
} 2>&1 | tee /tmp/idx35_stdout.txt
cp /tmp/idx35_stdout.txt $OUT/idx35_r1_stdout.txt
ls -la $OUT
