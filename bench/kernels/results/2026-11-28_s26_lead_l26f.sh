#!/usr/bin/env bash
# Session 26 lead, call l26f: parity of the merged tree's families that l26e's 240 s run did not reach (the same binary:
# code of b480e27 / a153b30): FP8-record attention, fake quantization, Hadamard, KV records, compressor records, and
# linear_w8a8_wgmma in full.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l26f/l26f.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
L=/tmp/l26f; rm -rf $L; mkdir -p $L
p() { local tag=$1 lim=$2; shift 2; timeout $lim $G/test_backend_ops "$@" > $L/$tag.txt 2>&1; echo "exit $?" >> $L/$tag.txt; }
p fp8 120 --filter attention_decode_fp8,attention_decode_fold,kv_record_gather,kv_record_pack,kv_record_round_trip,compressor_records &
p quant 120 --filter fake_quant_fp8,fake_quant_kv,hadamard_fp4,hadamard_fp4_rows &
wait
p w8a8 120 --filter linear_w8a8_wgmma
for f in $L/*.txt; do echo "== $(basename $f .txt): $(grep -c ' OK' $f) OK, $(grep -c FAIL $f) FAIL; $(grep -E 'passed|failed' $f | tail -1 | cut -c1-100); $(tail -1 $f)"; grep -E "FAIL" $f | head -8 | cut -c1-220; done
awk '{print $1}' $L/*.txt | sort | uniq -c | grep -v exit
tar czf $OUT/l26f_logs.tgz -C $L . 2>/dev/null
echo "done t=$(el)"
