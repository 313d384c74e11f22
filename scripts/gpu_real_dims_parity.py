"""Real-dimension parity on the GPU machine (issue "CUDA backend", item 5b).

Builds a transformers DeepseekV4ForCausalLM with V4-Flash per-layer shapes (hidden 4096, 64 heads x
512, q_lora 1024, o_groups 8 x 1024, window 128, indexer 64 x 128, expert intermediate 2048, top-6)
and three layers: sliding, CSA (rate 4) and HCA (rate 128). Smaller than Flash where the layer
shapes are not affected: 16 routed experts instead of 256, vocab 16384, index_topk 64 (so top-k
drops entries within ~1100 tokens). Random weights (constants randomised), fp32, saved with
save_pretrained; transformers computes reference logits in fp32 (no TF32) on the GPU, then dsv4's
CUDA backend (gpu_logits) computes them from the saved checkpoint, with f32 and with bf16 activation
storage (env ACTIVATIONS). Criterion: relative error ||dsv4 - ref|| / ||ref|| <= 1e-2.

usage: python3 scripts/gpu_real_dims_parity.py BUILD_DIR   (writes to $OUT or /tmp)
"""
import json, os, subprocess, sys, time

import numpy as np
import torch
from safetensors.numpy import load_file
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM

build = sys.argv[1]
out = os.environ.get("OUT", "/tmp")
work = "/tmp/dsv4_real_dims"
n_tokens = int(os.environ.get("TOKENS", "1100"))
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

cfg = DeepseekV4Config(
    vocab_size=16384, hidden_size=4096, moe_intermediate_size=2048, num_hidden_layers=3,
    num_attention_heads=64, head_dim=512, q_lora_rank=1024, n_routed_experts=16,
    num_experts_per_tok=6, o_groups=8, o_lora_rank=1024, index_n_heads=64, index_head_dim=128,
    index_topk=64, sliding_window=128, compress_ratios=[0, 4, 128], num_hash_layers=1,
    qk_rope_head_dim=64, rope_theta=10000, compress_rope_theta=160000,
    rope_scaling={"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                  "beta_fast": 32, "beta_slow": 1},
    routed_scaling_factor=1.5, swiglu_limit=10.0)
torch.manual_seed(1234)
t0 = time.time()
with torch.device("cuda"):
    model = DeepseekV4ForCausalLM(cfg).float().eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.endswith("sinks"):
            p.normal_(0, 1)
        elif "position_bias" in name:
            p.normal_(0, 0.5)
        elif name.endswith((".base", "hc_base")):
            p.normal_(0, 0.5)
        elif name.endswith((".scale", "hc_scale")):
            p.uniform_(0.5, 1.5)
        elif "norm" in name and name.endswith("weight"):
            p.copy_(1 + 0.2 * torch.randn_like(p))
    for name, b in model.named_buffers():
        if "e_score_correction_bias" in name:
            b.normal_(0, 0.1)
        elif "tid2eid" in name:
            rows = torch.stack([torch.randperm(cfg.n_routed_experts)[:cfg.num_experts_per_tok]
                                for _ in range(b.shape[0])])
            b.copy_(rows.to(b.device))
ids = torch.randint(0, cfg.vocab_size, (1, n_tokens), device="cuda")
with torch.no_grad():
    ref = model(input_ids=ids, position_ids=torch.arange(n_tokens, device="cuda")[None]).logits[0]
ref = ref.float().cpu().numpy()
print(f"reference: {n_tokens} tokens in {time.time() - t0:.1f} s, logits std {ref.std():.3f}",
      flush=True)
model.save_pretrained(work)
# The oracle's own bf16 noise floor (weights and activations in bf16, as transformers runs bf16):
# how far any bf16 forward lands from the fp32 reference on this model. A figure, not a criterion.
floor = {}
if os.environ.get("BF16_FLOOR", "1") == "1":
    with torch.no_grad():
        model = model.to(torch.bfloat16)
        got16 = model(input_ids=ids, position_ids=torch.arange(n_tokens, device="cuda")[None])
        got16 = got16.logits[0].float().cpu().numpy()
    d16 = got16.astype(np.float64) - ref.astype(np.float64)
    floor = {"relative_error": float(np.linalg.norm(d16) / np.linalg.norm(ref)),
             "median_row_relative_error": float(np.median(
                 np.linalg.norm(d16, axis=1) / np.linalg.norm(ref, axis=1))),
             "argmax_agreement": float((got16.argmax(1) == ref.argmax(1)).mean())}
    print("transformers bf16 vs fp32: " + json.dumps(floor), flush=True)
del model
torch.cuda.empty_cache()
with open(f"{work}/ids.txt", "w") as f:
    f.write(",".join(str(i) for i in ids[0].tolist()))
results = {}
# ACTIVATIONS: the activation dtypes to run (gpu_logits' 6th argument); the criterion is the same.
for act in os.environ.get("ACTIVATIONS", "f32 bf16").split():
    t1 = time.time()
    r = subprocess.run([f"{build}/gpu_logits", work, f"{work}/ids.txt", f"{work}/logits.safetensors",
                        "cuda", "exact", act], capture_output=True, text=True)
    print(r.stderr.strip())
    if r.returncode != 0:
        sys.exit(f"gpu_logits failed ({r.returncode})")
    got = load_file(f"{work}/logits.safetensors")["logits"]
    print(f"dsv4 cuda ({act}): {time.time() - t1:.1f} s including load")
    diff = got.astype(np.float64) - ref.astype(np.float64)
    rel = float(np.linalg.norm(diff) / np.linalg.norm(ref))
    row_rel = np.linalg.norm(diff, axis=1) / np.linalg.norm(ref, axis=1)
    agree = float((got.argmax(1) == ref.argmax(1)).mean())
    results[act] = {"tokens": n_tokens, "activations": act, "relative_error": rel,
                    "max_row_relative_error": float(row_rel.max()),
                    "median_row_relative_error": float(np.median(row_rel)),
                    "max_abs_diff": float(np.abs(diff).max()), "argmax_agreement": agree,
                    "pass": rel <= 1e-2}
    print(json.dumps(results[act]))
results["transformers_bf16_floor"] = floor
with open(f"{out}/real_dims.json", "w") as f:
    json.dump(results, f)
sys.exit(0 if all(v["pass"] for k, v in results.items() if k != "transformers_bf16_floor") else 1)
