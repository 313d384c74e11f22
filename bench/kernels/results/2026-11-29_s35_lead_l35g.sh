#!/usr/bin/env bash
# Session 35 lead, call l35g (H200): scripts/gpu_parity_all.sh on the session's final test_backend_ops (d3048c9): the
# first 2 cases of every op in 14 balanced processes.
set -uo pipefail
nvidia-smi -L
N=l35g
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/$N/$N.tar.xz $G
cat $G/commit.txt
export LD_LIBRARY_PATH=$PWD/$G/lib
mkdir -p /tmp/$N; OUT_SAVE=$OUT
OUT=/tmp/$N bash scripts/gpu_parity_all.sh $G/test_backend_ops 14 150 --per-op 2; echo "rc=$?"
tar czf $OUT_SAVE/${N}_logs.tgz -C /tmp/$N . 2>/dev/null
