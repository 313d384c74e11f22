#!/usr/bin/env bash
# MOE23 (session 18): routed-MoE decode T = 1, W1/W3 as one stream-K wave (chain 512 / 1024 /
# 2048). One call: parity of the new chain cases and the default families (default 895), then
# A/B vs main's bench_moe_linear (bae20d9 build) in alternating processes.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
B=/tmp/b; mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe23/bins.tar.xz $B
cat $B/commit.txt; echo "unpacked t=$(el)"
P=$OUT/parity; mkdir -p $P
prun() { local name=$1; shift; timeout 42 $B/test_backend_ops "$@" > $P/$name.txt 2>&1; echo "exit $?" >> $P/$name.txt; }
prun a_895 --filter moe_decode_official_repacked_chain895,moe_decode_official_repacked_rtf40_chain895 &
prun b_1407 --filter moe_decode_official_repacked_chain1407 &
prun c_2943 --filter moe_decode_official_repacked_chain2943,moe_decode_official_repacked_chain3455 &
prun d_def --filter moe_decode_official_repacked &
prun e_def --filter moe_decode_repacked,moe_decode_official_repacked_chain383,moe_decode_official_repacked_xs,moe_decode_official_repacked_rtf20_chain383 --per-op 3 &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed' $f | tail -1); $(tail -1 $f)"; grep FAIL $f | head -4; done
cd $P && tar czf ../parity_logs.tgz *.txt && cd - >/dev/null && rm -rf $P
echo "t=$(el)"
C=s0x4.2.4hwlpfgmc
bm() { local tag=$1 bin=$2 cfg=$3 toks=$4 lim=$5; timeout $lim $bin --decode-ab --ab-official --formats mxfp4,nvfp4 --tokens $toks --replays 15 --ab $cfg > $OUT/cur.txt 2>&1; echo "rc=$? t=$(el)" >> $OUT/cur.txt; cat $OUT/cur.txt >> $OUT/bench_$tag.txt; echo "## $tag T=$toks $(tail -1 $OUT/cur.txt)"; grep -E "hbm read-only kernel  4096|launch floor" $OUT/cur.txt; awk '/rp official/{printf "%s %s T=%s %s %s %s\n",$1,$2,$7,$5,$9,$11}' $OUT/cur.txt; }
bm main $B/bench_moe_linear_main $C 1 25
bm ours $B/bench_moe_linear "$C,${C}k,${C}ko,${C}n,${C}no,s-10x4.2.4hwlpfgmc,s-40x4.2.4hwlpfgmc,$C" 1 30
[ $(el) -lt 100 ] && bm main $B/bench_moe_linear_main $C 4,16,64 25
[ $(el) -lt 120 ] && bm ours $B/bench_moe_linear "${C}k" 4,16,64 25
[ $(el) -lt 128 ] && bm main $B/bench_moe_linear_main $C 1 15
[ $(el) -lt 136 ] && bm ours $B/bench_moe_linear "$C,${C}k,${C}ko,$C" 1 $((148 - $(el)))
rm -f $OUT/cur.txt; echo "done t=$(el)"; ls $OUT
