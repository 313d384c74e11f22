#!/usr/bin/env bash
# PREFILL11 call 1 (session 16): w4a8_ws breakdown (diagnostic variants), A/B of lean / cfence /
# plean / lead variants, ncu of main's kernel (variant 0 = main's SASS), parity of the candidates.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
R=$PWD; W=$R/.wt/prefill11; B=/tmp/b11
mkdir -p $B && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' $W/bins.tar.xz $B || exit 1
nvidia-smi -L; cat $B/commit.txt
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
BM=$B/bench_kernels/bench_moe_linear
summ(){ grep -E "w4a8_ws|dense|W4A16|differ" $1 | sed -E 's/ +/ /g; s/ BF16 values differ//; s/y differs from w4a8/ydiff/' | cut -c1-140; }
echo "=== 1. bench Flash T=4096 (variants + diagnostics, 2 passes) t=$(el)"
DSV4_W4A8_WS_AB=6:0,6:64,6:128,6:192,6:320,6:448,0:0,0:64,0:320,4:0,4:64,4:448,6:1,6:2,6:4,6:8,6:16,6:32,6:15,6:48 \
  DSV4_W4A8_WS_AB_PASSES=2 timeout 58 $BM --prefill-w4a8 --w4a8-flash-t 4096 --w4a8-pro-t "" > $OUT/bench_flash4096.txt 2>&1
echo "rc=$? t=$(el)"; summ $OUT/bench_flash4096.txt
echo "=== 2. ncu main's w4a8_ws (L1 + L2, Flash T=4096) t=$(el)"
timeout 40 ncu --clock-control none --set full --import-source no -k regex:moe_prefill_w4a8_ws_kernel -c 2 -f -o /tmp/ncu_base \
  $BM --prefill-w4a8 --w4a8-profile --w4a8-flash-t 4096 --w4a8-pro-t "" > /tmp/ncu_log.txt 2>&1
echo "ncu rc=$? t=$(el)"; grep -E "==PROF==|==ERROR==" /tmp/ncu_log.txt | head -4
if [ -f /tmp/ncu_base.ncu-rep ]; then
  ncu -i /tmp/ncu_base.ncu-rep --page details > $OUT/ncu_details.txt 2>&1
  grep -E "Duration|Issue Slots Busy|Issued Warp Per|Eligible Warps|No Eligible|highest-utilized|SM Frequency|Warp Cycles Per Issued" $OUT/ncu_details.txt | cut -c1-120
  ncu -i /tmp/ncu_base.ncu-rep --page raw --csv > /tmp/raw.csv 2>&1
  python3 $R/bench/kernels/results/2026-11-27_s15_moe20_pipes.py /tmp/raw.csv > $OUT/ncu_pipes.txt 2>&1
  python3 - /tmp/raw.csv >> $OUT/ncu_pipes.txt <<'PY'
import csv, sys, re
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next(i for i, r in enumerate(rows) if "Kernel Name" in r); h = rows[hi]
for r in rows[hi + 2:]:
    if len(r) != len(h): continue
    print("== stalls", r[h.index("Kernel Name")][:90])
    for i, c in enumerate(h):
        if re.search(r"smsp__pcsamp_warps_issue_stalled_\w+$|smsp__average_warp_latency_issue_stalled_\w+\.ratio$|gmma|sm__inst_executed_pipe_uniform|smsp__inst_executed\.sum$|lts__t_bytes\.sum\.per_second|l1tex__m_xbar2l1tex_read_bytes", c):
            try: v = float(r[i].replace(",", ""))
            except ValueError: continue
            if v > 0: print(f"  {c:80s} {v:16.2f}")
PY
  grep -E "^==|tensor|gmma|issue_active|inst_executed.avg|duration" $OUT/ncu_pipes.txt | cut -c1-110 | head -30
  ncu -i /tmp/ncu_base.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>/dev/null
  python3 $R/scripts/ncu_split_source.py /tmp/src.csv /tmp/src
  for f in /tmp/src_k*.csv; do echo "### $f"; python3 $R/scripts/ncu_source_top.py $f 2>&1 | cut -c1-1500; done > $OUT/ncu_src_top.txt
  head -c 2500 $OUT/ncu_src_top.txt; echo
  python3 -c 'import gzip,shutil,sys; shutil.copyfileobj(open("/tmp/src.csv","rb"), gzip.open(sys.argv[1],"wb"))' $OUT/ncu_src.csv.gz
fi
echo "=== 3. parity 6:448 then 0:320 t=$(el)"
DSV4_W4A8_WS_VARIANT=448 timeout 16 $B/test_backend_ops --filter moe_prefill_official_w4a8_ws --per-op 14 > $OUT/parity_6_448.txt 2>&1
echo "rc=$? t=$(el)"; grep -cE " OK$" $OUT/parity_6_448.txt; grep -E "FAIL|passed" $OUT/parity_6_448.txt | tail -3
DSV4_W4A8_WS_LEAD=0 DSV4_W4A8_WS_VARIANT=320 timeout 16 $B/test_backend_ops --filter moe_prefill_official_w4a8_ws --per-op 14 > $OUT/parity_0_320.txt 2>&1
echo "rc=$? t=$(el)"; grep -cE " OK$" $OUT/parity_0_320.txt; grep -E "FAIL|passed" $OUT/parity_0_320.txt | tail -3
echo "=== 4. bench Flash T=8192 + Pro T=4096 (variants, 2 passes) t=$(el)"
DSV4_W4A8_WS_AB=6:0,6:64,6:448,0:0,0:320,4:448 DSV4_W4A8_WS_AB_PASSES=2 \
  timeout $(( 146 - $(el) )) $BM --prefill-w4a8 --w4a8-flash-t 8192 --w4a8-pro-t 4096 > $OUT/bench_f8192_p4096.txt 2>&1
echo "rc=$? t=$(el)"; summ $OUT/bench_f8192_p4096.txt
ls -la $OUT
