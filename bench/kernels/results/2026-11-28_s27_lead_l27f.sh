#!/usr/bin/env bash
# Session 27 lead, call l27f: FP8 records vs bf16 pools on the engine's default schedule (decode step, prefill wall), twice.
set -uo pipefail
nvidia-smi -L
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l27f/l27f.tar.xz $G
cat $G/commit.txt
root="$(cat $G/source_root.txt)"; [ "$root" != "$PWD" ] && [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"
for r in 1 2; do timeout 90 $G/test_gpu_model --only-kv-fp8 > $OUT/kvfp8_r$r.txt 2>&1; echo "exit $?" >> $OUT/kvfp8_r$r.txt; grep -E "gpu-kv-fp8|passed|exit" $OUT/kvfp8_r$r.txt | cut -c1-260; done
