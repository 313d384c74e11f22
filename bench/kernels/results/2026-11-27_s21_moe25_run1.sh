#!/usr/bin/env bash
# MOE25 (session 21) device call 1: routed-MoE decode, L2 bulk prefetches of W2 while h is not
# ready (chain bits, A/B in one binary; all with C = 383): "k" 512 W2 warps prefetch their rounds
# past the ring (and their tile's scale rows) before the readiness wait; "n" 4096 at most 8 of
# them; "i" 1024 W1/W3 warps prefetch a share of their slot's W2 after their own loop; "j" 2048
# both at T <= 4 (else T = 1 only). Benches first (alone on the GPU): main 462a085's
# bench_moe_linear (_base, C) vs wip/moe25's (C, Ck) at T = 1 / 4 / 16 / 64 alternating, and
# six configurations at T = 1 / 4 in one process (two orders); trace (DSV4_MOE_TRACE build,
# Flash / Pro MXFP4 T = 1); then parity in parallel (new chain cases bit-equal to chain 0,
# default families, test_gpu_model at the default chain, 1919 = C + k + i, 8063 = all bits).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
A=.bin/moe25/moe25_r1.tar.xz
G=build-gpu-moe25; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $A $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/moe25_logs; rm -rf $L; mkdir -p $L/parity
C=s0x4.2.4hwlpfgmc
AB="--decode-ab --ab-official --formats mxfp4,nvfp4 --replays 15"
bm() {  # tag bin tokens configs limit
  local tag=$1 bin=$2 tok=$3 cfg=$4 lim=$5
  echo "== $tag t+$(el) T=$tok $cfg" >> $L/bench_$tag.txt
  timeout $lim $G/$bin $AB --tokens $tok --ab $cfg > $L/cur.txt 2>&1; local rc=$?
  cat $L/cur.txt >> $L/bench_$tag.txt
  echo "## $tag rc=$rc t+$(el) $(grep -E 'hbm read-only kernel  4096' $L/cur.txt | awk '{print $(NF-1)}') GB/s"
  awk '/rp official/{printf "%s %s T=%s %s %s %s\n",$1,$2,$7,$5,$9,$11}' $L/cur.txt | tr '\n' ';' | sed "s/$C//g"; echo
  grep "speed vs" $L/cur.txt | sed -E "s/ +/ /g; s/$C//g"
}
bm base bench_moe_linear_base 1,4,16,64 $C 30
bm ours bench_moe_linear 1,4,16,64 "$C,${C}k" 35
bm six bench_moe_linear 1,4 "$C,${C}k,${C}kn,${C}i,${C}ki,${C}kij" 35
bm base bench_moe_linear_base 1,4,16,64 $C 30
bm ours bench_moe_linear 1,4,16,64 "${C}k,$C" 35
[ $(el) -lt 120 ] && bm six bench_moe_linear 1,4 "${C}kij,${C}ki,${C}i,${C}kn,${C}k,$C" 35
if [ $(el) -lt 135 ]; then
  timeout 25 $G/bench_moe_linear_trace --decode-ab --ab-official --formats mxfp4 --tokens 1 --replays 3 --ab "$C,${C}k,${C}i,${C}ki" > $L/trace.txt 2>&1; echo "## trace rc=$? t+$(el)"
  awk '/^trace/{p=($0 ~ /call [01]:/)} p' $L/trace.txt | sed -E "s/ +/ /g; s/$C//g; s/per-SM last exit.*//" | cut -c1-190
fi
echo "== parity t+$(el)"
P=$L/parity
lim=$(( 192 - $(el) )); [ $lim -gt 70 ] && lim=70; [ $lim -lt 30 ] && lim=30
p() { local tag=$1; shift; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
R=moe_decode_official_repacked
p new_k --filter ${R}_chain895,${R}_rtf1_chain895,${R}_rtf2_chain895,${R}_rt8_chain895,${R}_chain4991 &
p new_i --filter ${R}_chain1407,${R}_rtf1_chain1407,${R}_rtf2_chain1407,${R}_rt8_chain1407 &
p new_all --filter ${R}_chain3967,${R}_chain8063 &
p chains --filter ${R}_chain383,${R}_chain127,${R}_chain31,${R}_chain255 &
p orp --filter ${R} &
p xs_rp_rt2 --filter ${R}_xs,moe_decode_repacked,moe_decode_repacked_rt2,${R}_rt2 --per-op 8 &
(timeout $lim $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt) &
(timeout $lim $G/test_gpu_model --moe-decode-chain 1919 > $P/gpu_model_1919.txt 2>&1; echo "exit $?" >> $P/gpu_model_1919.txt) &
(timeout $lim $G/test_gpu_model --moe-decode-chain 8063 > $P/gpu_model_8063.txt 2>&1; echo "exit $?" >> $P/gpu_model_8063.txt) &
wait
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -3 | cut -c1-220; done
rm -f $L/cur.txt
tar czf $OUT/moe25_r1_logs.tgz -C $L . 2>/dev/null
ls -la $OUT
echo "done t+$(el)"
