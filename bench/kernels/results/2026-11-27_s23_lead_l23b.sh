#!/usr/bin/env bash
# Session 23 lead, call l23b (H200): chain 512 (W1/W3 split into a one-wave launch + a tail launch at
# half the row tiles) A/B in one binary (383 vs 895) + main 79f2e8d's bench_moe_linear; trace of Pro T=1;
# parity of the tree (chain 895 cases, default families, fp8act with the new default plan, test_gpu_model).
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l23b/l23b.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l23b; rm -rf $L; mkdir -p $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p c895 150 --filter moe_decode_official_repacked_chain895,moe_decode_official_repacked_rt2_chain895,moe_decode_official_repacked_rt8_chain895,moe_decode_official_repacked_rtf44_chain895,moe_decode_official_repacked_rtf14_chain895,moe_decode_official_repacked_xs_chain895,moe_decode_repacked_chain895 &
p c383 100 --filter moe_decode_official_repacked_chain383,moe_decode_official_repacked &
p fp8act 150 --filter linear_decode_fp8act,linear_decode_fp8act_plans &
wait
echo "parity t=$(el)"
timeout 100 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
AB="s0x4.2.4hwlpfgmc,s0x4.2.4hwlpfgmcz"
for r in 1 2; do
  timeout 100 $G/bench_moe_linear --decode-ab --ab-official --ab $AB --shapes pro,flash --formats mxfp4,nvfp4 --tokens 1,4,16 > $L/cur.txt 2>&1; echo "exit $?" >> $L/cur.txt; cat $L/cur.txt >> $L/ab_new.txt
  echo "ab new r$r t=$(el):"; grep -E "speed vs" $L/cur.txt | cut -c1-160
  timeout 60 $G/bench_moe_linear_base --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --shapes pro,flash --formats mxfp4 --tokens 1,4 > $L/cur.txt 2>&1; echo "exit $?" >> $L/cur.txt; cat $L/cur.txt >> $L/ab_base.txt
  echo "ab base r$r t=$(el): $(grep -E '^(flash|pro) .* rp official' $L/cur.txt | awk '{printf "%s %s T=%s %s us | ", $1, $2, $6, $8}')"
done
grep -E "^(flash|pro) .* rp official" $L/ab_new.txt | awk '{print $1, $2, $5, $6, $8, $10}' | sort | uniq | head -40
timeout 80 $G/bench_moe_linear_trace --decode-ab --ab-official --ab $AB --shapes pro --formats mxfp4 --tokens 1 > $L/trace.txt 2>&1; echo "exit $?" >> $L/trace.txt
grep -E "^trace|^  (W1|W2|comb)" $L/trace.txt | head -40
rm -f $L/cur.txt
tar czf $OUT/l23b_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
