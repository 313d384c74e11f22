# Device side: the decode-path MoE's correctness checks of a call (source after
# scripts/device_call_prelude.sh): parity of the moe_decode families and linear_decode_nvfp4 in 16
# shards (gpu_parity_all.sh; PARITY_SECS a shard, default 210, which every shard finished within in
# sessions 49 / 50) and test_gpu_model (its repacked-vs-checkpoint lines), logs under $L.
moe_decode_checks() {
  local secs=${PARITY_SECS:-210}
  OUT=$L/parity TEST_BIN=$G/test_backend_ops OPS='moe_decode_official_repacked(_chain(0|8|15|31|383))?|moe_decode_official_repacked(_chain383)?_w2p|moe_decode_official_repacked_rtf[0-9]+_chain383|moe_decode_repacked|moe_decode_official|moe_decode|linear_decode_nvfp4' BY=cases bash scripts/gpu_parity_all.sh 16 "$secs" > $L/parity_run.txt 2>&1
  echo "== parity rc=$? t=$(el)"; grep -c Killed $L/parity_run.txt; grep "cases listed\|cases OK" $L/parity_run.txt
  grep -rh FAIL $L/parity 2>/dev/null | grep -v "out of memory" | grep -v " 0 FAIL" | head -8 | cut -c1-300
  echo "OK lines: $(grep -rh ' OK$' $L/parity | wc -l)"; save
  timeout -s KILL 100 $G/test_gpu_model > $L/test_gpu_model.txt 2>&1
  echo "== test_gpu_model rc=$? t=$(el)"; grep -E "repacked-experts.*bitwise|FAIL|passed" $L/test_gpu_model.txt | cut -c1-200; save
}
