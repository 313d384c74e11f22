set -o pipefail
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
R=$PWD
mkdir -p /tmp/b && python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .wt/moe18/bins.tar.xz /tmp/b
nvidia-smi -L; ncu --version | tail -1
cd /tmp/b
M=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,dram__bytes_read.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed,lts__d_sectors.avg.pct_of_peak_sustained_elapsed,l1tex__lsu_writeback_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed
echo "=== ncu t16 (clock-control none, full + source)"
timeout 60 ncu --clock-control none --set full --import-source no --metrics $M -k regex:moe_decode_gemm -c 2 -f -o /tmp/t16 \
  ./bench_main --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc --shapes flash --formats mxfp4 --tokens 16 --replays 5 > $OUT/moe18_ncu_log.txt 2>&1
echo "ncu rc=$?"; grep -E "PROF|flash " $OUT/moe18_ncu_log.txt | head -8
ncu -i /tmp/t16.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>/tmp/src.err; head -c 300 /tmp/src.err
python3 $R/.wt/moe18/ncu_split_source.py /tmp/src.csv /tmp/src
for k in 0 1; do echo "=== source top k$k"; python3 $R/scripts/ncu_source_top.py /tmp/src_k$k.csv > $OUT/moe18_src_top_k$k.txt 2>&1; sed -n 2,4p $OUT/moe18_src_top_k$k.txt | cut -c1-900; done
ncu -i /tmp/t16.ncu-rep --page raw --csv > /tmp/raw.csv 2>&1
ncu -i /tmp/t16.ncu-rep --page details > $OUT/moe18_ncu_details.txt 2>&1
grep -E "bank_conflicts|smsp__inst_executed.sum|Mem Busy|L2 Cache Throughput|DRAM Throughput|Issued Warp|Eligible Warps|Duration" $OUT/moe18_ncu_details.txt | head -30
python3 -c "
import csv,gzip,shutil
for s,d in (('/tmp/raw.csv','$OUT/moe18_raw.csv.gz'),('/tmp/src.csv','$OUT/moe18_src.csv.gz')):
  shutil.copyfileobj(open(s,'rb'), gzip.open(d,'wb'))
"
echo "=== bench A/B (main config vs W1/W3 x staged to T=16 with 4 scale slots)"
timeout 50 ./bench_main --decode-ab --ab-official --ab s0x4.2.4hwlpfgmc,s0x16.2.4q2hwlpfgmc --formats mxfp4 --tokens 4,16,64 --replays 10 2>&1 | tee $OUT/moe18_bench_stage16.txt | grep -E "read-only kernel  4096|bf16 |speed vs"
