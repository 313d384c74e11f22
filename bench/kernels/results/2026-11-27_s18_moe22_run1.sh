#!/usr/bin/env bash
# MOE22 (session 18): routed-MoE decode T = 1 hand-off. One call: parity of the new chain bits
# (512 W2 ring 8 deep, 1024 W2 per-group h waits, 2048 largest carveout) and the default families; A/B vs main bae20d9's
# bench_moe_linear (alternating processes); trace of Flash / Pro T = 1 (main's path and 1919).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
B=/tmp/b; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe22/bins.tar.xz $B
cat $B/commit.txt; echo "unpacked t=$(el)"
P=$OUT/parity; mkdir -p $P
A1="moe_decode_official_repacked_chain895,moe_decode_official_repacked_chain2431,moe_decode_official_repacked_chain3199"
A2="moe_decode_official_repacked_chain1919,moe_decode_official_repacked_rtf1_chain1919,moe_decode_official_repacked_rtf2_chain1919"
A3="moe_decode_official_repacked_chain1407,moe_decode_official_repacked_rtf1_chain895,moe_decode_official_repacked_rtf1_chain1407,moe_decode_official_repacked_rtf2_chain895,moe_decode_official_repacked_rtf2_chain1407,moe_decode_official_repacked_rt2_chain1919,moe_decode_official_repacked_rt8_chain1919,moe_decode_official_repacked_xs_chain1919,moe_decode_repacked_chain1919"
prun() { local name=$1; shift; timeout 50 $B/test_backend_ops "$@" > $P/$name.txt 2>&1; echo "exit $?" >> $P/$name.txt; }
prun a_new --filter $A1 &
prun b_new --filter $A2 &
prun c_new --filter $A3 &
prun d_def --filter moe_decode_official_repacked_chain3967,moe_decode_official_repacked,moe_decode_repacked,moe_decode_official_repacked_chain383 --per-op 3 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1); $(tail -1 $f)"; grep FAIL $f | head -4; done
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
A="--decode-ab --ab-official --formats mxfp4,nvfp4 --tokens 1,4,16 --replays 15"
C=s0x4.2.4hwlpfgmc
bm() { local tag=$1 bin=$2 cfg=$3 lim=${4:-40}; timeout $lim $bin $A --ab $cfg > $OUT/cur.txt 2>&1; echo "rc=$? t=$(el)" >> $OUT/cur.txt; cat $OUT/cur.txt >> $OUT/bench_$tag.txt; echo "## $tag $(tail -1 $OUT/cur.txt)"; grep -E "hbm read-only kernel  4096" $OUT/cur.txt; awk '/rp official/{printf "%s %s T=%s %s %s %s\n",$1,$2,$7,$5,$9,$11}' $OUT/cur.txt; }
bm main $B/bench_moe_linear_main $C
bm ours $B/bench_moe_linear "$C,${C}k,${C}ek,${C}rek,${C}re,s0x4.2.4hwlpfgmek,$C"
[ $(el) -lt 110 ] && { timeout 20 $B/bench_moe_linear_trace --decode-ab --ab-official --formats mxfp4 --tokens 1 --replays 5 --ab "$C,${C}k,${C}ek,s0x4.2.4hwlpfgmek" > $OUT/trace.txt 2>&1; echo "trace rc=$? t=$(el)"; awk '/^trace/{p=($0 ~ /call 0:/)} p' $OUT/trace.txt | sed -E 's/ +/ /g' | cut -c1-200 | head -44; }
[ $(el) -lt 112 ] && bm main $B/bench_moe_linear_main $C 25
[ $(el) -lt 120 ] && bm ours $B/bench_moe_linear "$C,${C}ek,${C}rek,s0x4.2.4hwlpfgmek,$C" $((145 - $(el)))
rm -f $OUT/cur.txt; echo "done t=$(el)"; ls $OUT
