#!/usr/bin/env bash
# Session 33 lead, call l33o (H200): the attention_decode parity family run 8 times on a9d6374's test_backend_ops (the
# combine code of 1cb9a81), after l33n's binary (the row combine's fma straight from its early loads, not merged) failed
# one PDL case. Run as one command line (the device tool's `command`):
G=build-gpu; rm -rf $G; mkdir -p $G && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .bin/l33o/l33o.tar.xz $G; export LD_LIBRARY_PATH=$PWD/$G/lib; root="$(cat $G/source_root.txt)"; [ ! -e "$root" ] && mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root"; for i in 1 2 3 4 5 6 7 8; do timeout 60 $G/test_backend_ops_a --filter attention_decode > /tmp/o.txt 2>&1; echo "a run $i: $(grep -c FAIL /tmp/o.txt) FAIL; $(tail -1 /tmp/o.txt)"; grep FAIL /tmp/o.txt | cut -c1-170 | head -2; done
# Output (2026-11-28T21:26Z, H200): "a run 1..8: 0 FAIL; 142/142 cases passed (seed 20261122)" each.
