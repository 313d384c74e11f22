#!/usr/bin/env bash
# Session 23 lead, call l23g (H200): parity of the final tree (main af57880: LIN10's linear_decode ring with the
# narrowed rule, the W8A8 plan change): linear_decode families, fp8act families, MoE decode default families,
# test_gpu_model; one --decode-only for the final defaults.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l23g/l23g.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l23g; rm -rf $L; mkdir -p $L/parity
P=$L/parity
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $P/$tag.txt 2>&1; echo "exit $?" >> $P/$tag.txt; }
p ld 140 --filter linear_decode,linear_decode_grouped,linear_decode_ring &
p fp8act 140 --filter linear_decode_fp8act,linear_decode_fp8act_plans &
p moe 140 --filter moe_decode_official_repacked,moe_decode_official_repacked_chain383 &
wait
echo "parity t=$(el)"
timeout 100 $G/test_gpu_model > $P/gpu_model.txt 2>&1; echo "exit $?" >> $P/gpu_model.txt
for f in $P/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep FAIL $f | head -4 | cut -c1-220; done
timeout 80 $G/bench_linear_gemm --decode-only > $L/decode_final.txt 2>&1; echo "exit $?" >> $L/decode_final.txt
echo "decode-only t=$(el)"; grep -E "^(fl|pro)\.(wq_b|wo_b) .* (1|8) \|" $L/decode_final.txt | awk -F'|' '{printf "%s |%s|%s\n", substr($1,1,44), $3, $4}' | cut -c1-140
tar czf $OUT/l23g_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
