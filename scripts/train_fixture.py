#!/usr/bin/env python3
"""Train a tiny DeepSeek-V4 on real English text and write it as an oracle fixture
(tests/fixtures/models/trained_small/).

Why: the other fixtures are random models (near-uniform logits, near-tied routers), on which one
bf16 rounding flips argmax / top-k choices; the BF16 model-parity criterion (argmax >= 99%, mean
KL(ref || gpu) <= 1e-3) is meant for trained weights, whose logits are peaked and whose routers
have margins. Nobody can download a real checkpoint here, so this script makes one.

Text: docstrings (module, class, function; `ast.get_docstring`) of the Python standard library that
runs this script (/opt/oracle/bin/python: CPython 3.11.7, `sysconfig.get_paths()["stdlib"]`),
files sorted by relative path, `test/`, `idlelib/`, `site-packages/` and non-UTF-8 files skipped.
Every 10th file (index % 10 == 0) is held out; the others are the training text. Docstrings are
joined with a blank line, encoded as UTF-8.
Tokens: byte-level, id = byte value (vocab 256, the vocab of the other fixtures).

Training: float32, CPU, torch.set_num_threads(1) (the build machine is shared; the oracle runs
below use 2 threads like make_fixtures.py), AdamW, fixed seeds and a fixed number of steps
(deterministic for a given machine/torch build). The router's e_score_correction_bias (a buffer,
no gradient) follows DeepSeek's auxiliary-loss-free balancing: after each step
bias += BIAS_RATE * sign(mean load - expert load). The lightning indexer gets no gradient from the
LM loss (transformers selects its top-k by index only), so its weights stay at their random
initialisation (the real model trains it by distillation; we do not).

The fixture: ids = a held-out window (the first start offset whose indexer and router near-tie gaps
are both >= 1e-4, as make_fixtures.py asks of its exact cases), expected logits from the f32 oracle
(prefill / chunked / decode, make_fixtures.run_oracle), weights via save_pretrained.
Also measured: train / held-out loss, and transformers' own bf16 run against its f32 logits on the
fixture ids (KL(f32 || bf16), argmax agreement) for the README.

Usage: /opt/oracle/bin/python scripts/train_fixture.py [--out tests/fixtures/models]
       [--weights /tmp/trained_small.pt]   (reuse a trained state dict if the file exists)
"""
import argparse
import ast
import hashlib
import math
import os
import shutil
import sys
import sysconfig
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402  (sets threads + deterministic algorithms)

from transformers import DeepseekV4Config, DeepseekV4ForCausalLM  # noqa: E402
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as mdv4  # noqa: E402

NAME = "trained_small"
SEED = 5000
SEQ = 256  # training sequence: 64 CSA (rate 4) and 32 HCA (rate 8) windows
BATCH = 8
STEPS = 600
LR = 3e-3
WARMUP = 50
WEIGHT_DECAY = 0.01
BIAS_RATE = 1e-3
INIT_GAINS = dict(linear=1.0, hc=1.0, head=1.0, expert_in=1.0, expert_out=1.0)

# Fixture ids and schedules (n tokens, uneven chunks incl. 1-token chunks and chunks longer than
# the sliding window crossing compression windows, decode tail of 56 tokens).
N = 256
CHUNKS = [37, 1, 50, 3, 1, 64, 29, 71]
DECODE_FROM = 200

S, C, H = mf.S, mf.C, mf.H
HF = mf._common_hf(4, [S, C, H, C], 2, (4, 8), 32, 8, 16, moe_intermediate_size=32)
DESCRIPTION = (
    "Trained (not random) tiny model: byte-level LM trained on Python 3.11 stdlib docstrings "
    "(scripts/train_fixture.py); ids are held-out text. 4 layers [sliding, csa, hca, csa], rates 4/8, "
    "2 hash + 2 score MoE layers (8 experts x 32, top-2, shared expert), hidden 64, 4 heads x 32, "
    "rope dim 16, sliding_window 32, index_topk 8 of up to 64 visible entries (indexer untrained), "
    "mHC 4 streams, sinks; save_pretrained spelling, F32. Judges the BF16 criterion on peaked logits."
)


# ----------------------------------------------------------------------------------------------
# Text


def stdlib_docstrings():
    """[(relative path, text)] for every stdlib module with docstrings, sorted by path."""
    root = sysconfig.get_paths()["stdlib"]
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        top = rel_dir.split(os.sep)[0]
        if top in ("test", "idlelib", "site-packages", "lib2to3") or "tests" in rel_dir.split(os.sep):
            dirnames[:] = []
            continue
        for f in filenames:
            if f.endswith(".py"):
                files.append(os.path.normpath(os.path.join(rel_dir, f)))
    files.sort()
    out = []
    for rel in files:
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        docs = []
        for node in [tree] + [n for n in ast.walk(tree)
                              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]:
            d = ast.get_docstring(node)
            if d:
                docs.append(d)
        if docs:
            out.append((rel, "\n\n".join(docs)))
    return root, out


def corpus():
    root, docs = stdlib_docstrings()
    train = "\n\n".join(t for i, (_, t) in enumerate(docs) if i % 10 != 0).encode("utf-8")
    held = "\n\n".join(t for i, (_, t) in enumerate(docs) if i % 10 == 0).encode("utf-8")
    info = dict(root=root, files=len(docs), train_bytes=len(train), held_bytes=len(held),
                sha256=hashlib.sha256(train + b"\0" + held).hexdigest()[:16])
    to_ids = lambda b: torch.frombuffer(bytearray(b), dtype=torch.uint8).to(torch.int64)  # noqa: E731
    return to_ids(train), to_ids(held), info


# ----------------------------------------------------------------------------------------------
# Model and training


def build_model():
    cfg = DeepseekV4Config(**HF)
    cfg._attn_implementation = "eager"
    torch.manual_seed(SEED)
    model = DeepseekV4ForCausalLM(cfg).float()
    mf.randomise(model, SEED, INIT_GAINS)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.zero_()
    return model


def lm_loss(model, x):
    B, T = x.shape
    pos = torch.arange(T - 1).view(1, -1).expand(B, -1)
    logits = model(input_ids=x[:, :-1], position_ids=pos, use_cache=False).logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), x[:, 1:].reshape(-1))


@torch.no_grad()
def eval_loss(model, ids, max_windows=64):
    """Mean next-byte loss (nats) over non-overlapping SEQ+1 windows (at most max_windows, evenly spaced)."""
    model.eval()
    n_win = (ids.numel() - 1) // SEQ
    step = max(1, n_win // max_windows)
    tot, cnt = 0.0, 0
    for w in range(0, n_win, step)[:max_windows]:
        x = ids[w * SEQ: w * SEQ + SEQ + 1].view(1, -1)
        tot += lm_loss(model, x).item()
        cnt += 1
    return tot / max(cnt, 1)


def train(model, train_ids, log):
    routers = [m for m in model.modules() if isinstance(m, mdv4.DeepseekV4TopKRouter)]
    loads = {}

    def hook(mod, inp, out):
        loads[id(mod)] = torch.bincount(out[2].reshape(-1), minlength=mod.num_experts).float()

    handles = [r.register_forward_hook(hook) for r in routers]
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}], lr=LR, betas=(0.9, 0.95))
    g = torch.Generator().manual_seed(SEED + 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t0 = time.time()
    run = []
    for step in range(STEPS):
        lr = LR * min(1.0, (step + 1) / WARMUP) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / STEPS)))
        for grp in opt.param_groups:
            grp["lr"] = lr
        starts = torch.randint(0, train_ids.numel() - SEQ - 1, (BATCH,), generator=g)
        x = torch.stack([train_ids[s: s + SEQ + 1] for s in starts.tolist()])
        model.train()
        loss = lm_loss(model, x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        with torch.no_grad():
            for r in routers:
                ld = loads[id(r)]
                r.e_score_correction_bias += BIAS_RATE * torch.sign(ld.mean() - ld)
        run.append(loss.item())
        if step % 50 == 0 or step == STEPS - 1:
            log(f"  step {step:5d} loss {sum(run[-50:]) / len(run[-50:]):.4f} lr {lr:.2e} "
                f"{time.time() - t0:.0f} s")
    for h in handles:
        h.remove()
    torch.set_num_threads(threads)
    model.eval()
    return sum(run[-50:]) / len(run[-50:])


# ----------------------------------------------------------------------------------------------
# Fixture


def kl_argmax(ref, got):
    lp, lq = F.log_softmax(ref.double(), -1), F.log_softmax(got.double(), -1)
    kl = (lp.exp() * (lp - lq)).sum(-1)
    return kl.mean().item(), (ref.argmax(-1) == got.argmax(-1)).double().mean().item()


def top2_margin(logits):
    t = torch.topk(logits, 2, dim=-1).values
    return t[:, 0] - t[:, 1]


@torch.no_grad()
def bf16_vs_f32(model, ids, ref_prefill):
    """transformers in bf16 (weights and activations) against its own f32 prefill logits."""
    mb = DeepseekV4ForCausalLM(model.config).eval()
    mb.load_state_dict(model.state_dict())
    mb = mb.to(torch.bfloat16)
    lg = mb(input_ids=ids.view(1, -1), position_ids=torch.arange(ids.numel()).view(1, -1),
            use_cache=False).logits[0].float()
    return kl_argmax(ref_prefill, lg)


@torch.no_grad()
def bf16_activations_vs_f32(model, ids, ref_prefill):
    """Closer to dsv4's bf16 mode (f32 weights, activations stored in bf16): f32 weights, every
    leaf module's output (Linear, norms, ...) rounded to bf16; lm_head output left in f32."""
    hooks = [mod.register_forward_hook(lambda m, i, o: o.bfloat16().float()
                                       if isinstance(o, torch.Tensor) and o.is_floating_point() else None)
             for n, mod in model.named_modules() if not list(mod.children()) and n != "lm_head"]
    lg = model(input_ids=ids.view(1, -1), position_ids=torch.arange(ids.numel()).view(1, -1),
               use_cache=False).logits[0].float()
    for h in hooks:
        h.remove()
    kl, arg = kl_argmax(ref_prefill, lg)
    flipped = (ref_prefill.argmax(-1) != lg.argmax(-1)).nonzero().view(-1)
    return kl, arg, top2_margin(ref_prefill)[flipped].tolist()


def write_fixture(model, held, out_dir, log):
    d = os.path.join(out_dir, NAME)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    # first held-out window (start on a 97-byte grid) without indexer / router near ties
    for start in range(0, held.numel() - N, 97):
        ids = held[start: start + N].clone()
        res = mf.run_oracle(model, ids, CHUNKS, DECODE_FROM)
        ok = (res["index_rows"] > 0 and res["index_gap"] >= mf.TIE_LIMIT_EXACT
              and res["router_gap"] >= mf.TIE_LIMIT_EXACT)
        if ok:
            break
        log(f"  held-out start {start}: index gap {res['index_gap']:.3g}, router gap {res['router_gap']:.3g} -> next")
    else:
        raise RuntimeError("no held-out window without near ties")

    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(tmp, f), os.path.join(d, f))
    rt = DeepseekV4ForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    with torch.no_grad():
        lg = rt(input_ids=ids.view(1, -1), position_ids=torch.arange(N).view(1, -1), use_cache=False).logits[0]
    assert (lg - res["prefill"]).abs().max().item() == 0.0, "from_pretrained round trip differs"

    pre, chk, dec = res["prefill"], res["chunked"], res["decode"]
    d_chk = (chk - pre).abs().max().item()
    d_dec = (dec - pre).abs().max().item()
    nll = F.cross_entropy(pre[:-1], ids[1:]).item()
    margin = top2_margin(pre)
    bf_kl, bf_arg = bf16_vs_f32(model, ids, pre)
    ba_kl, ba_arg, ba_flip_margins = bf16_activations_vs_f32(model, ids, pre)
    meta = {
        "tolerance": "exact",
        "description": DESCRIPTION,
        "near_tie_gap": f"{res['index_gap']:.6e}",
        "router_tie_gap": f"{res['router_gap']:.6e}",
        "seed": str(SEED),
        "heldout_start_byte": str(start),
        "heldout_window_loss_nats": f"{nll:.6f}",
        "min_top2_logit_margin": f"{margin.min().item():.6e}",
        "oracle": "transformers DeepseekV4ForCausalLM float32 eager CPU",
        "oracle_bf16_vs_f32_prefill_mean_kl": f"{bf_kl:.6e}",
        "oracle_bf16_vs_f32_prefill_argmax": f"{bf_arg:.6f}",
        "oracle_bf16_activations_vs_f32_prefill_mean_kl": f"{ba_kl:.6e}",
        "oracle_bf16_activations_vs_f32_prefill_argmax": f"{ba_arg:.6f}",
        "self_consistency_chunked_vs_prefill_maxabs": f"{d_chk:.6e}",
        "self_consistency_decode_vs_prefill_maxabs": f"{d_dec:.6e}",
    }
    exp = {
        "ids": ids.to(torch.int64),
        "logits_prefill": pre.contiguous(),
        "chunks": torch.tensor(CHUNKS, dtype=torch.int64),
        "logits_chunked": chk.contiguous(),
        "decode_from": torch.tensor([DECODE_FROM], dtype=torch.int64),
        "logits_decode": dec.contiguous(),
    }
    assert sum(CHUNKS) == N
    mf.write_safetensors(os.path.join(d, "expected.safetensors"), exp, meta)
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    p = pre.softmax(-1)
    log(f"[{NAME}] n={N} held-out start {start} size={size / 1024:.0f} KiB")
    log(f"  text: {bytes(ids.tolist()).decode('utf-8', 'replace')!r}")
    log(f"  window loss {nll:.4f} nats/byte; max|logits|={pre.abs().max().item():.3f} std={pre.std().item():.3f}; "
        f"mean top-1 prob {p.max(-1).values.mean().item():.3f}; top-2 margin min {margin.min().item():.3e} "
        f"median {margin.median().item():.3f}; rows with margin < 0.05: {(margin < 0.05).sum().item()}")
    log(f"  swiglu clamp fraction={res['clamp_frac']:.4f}; max|chunked-prefill|={d_chk:.3e} "
        f"max|decode-prefill|={d_dec:.3e} max|nocache-prefill|={res['nocache_diff']:.3e}")
    log(f"  indexer near_tie_gap={res['index_gap']:.3e} over {res['index_rows']} dropping rows; "
        f"router tie gap={res['router_gap']:.3e}")
    log(f"  transformers bf16 vs f32 (prefill): mean KL {bf_kl:.3e} argmax {bf_arg:.4f}")
    log(f"  transformers f32 weights + bf16-rounded activations vs f32 (prefill): mean KL {ba_kl:.3e} "
        f"argmax {ba_arg:.4f}; f32 top-2 margins of the flipped rows {[f'{m:.3g}' for m in ba_flip_margins]}")
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                                  "fixtures", "models"))
    ap.add_argument("--weights", default="/tmp/trained_small.pt")
    a = ap.parse_args()

    def log(s):
        print(s)
        sys.stdout.flush()

    train_ids, held_ids, info = corpus()
    log(f"corpus: {info}")
    model = build_model()
    if os.path.exists(a.weights):
        model.load_state_dict(torch.load(a.weights))
        model.eval()
        log(f"loaded trained weights from {a.weights}")
    else:
        log(f"training {STEPS} steps x {BATCH} x {SEQ} bytes")
        last = train(model, train_ids, log)
        torch.save(model.state_dict(), a.weights)
        log(f"final running train loss (last 50 steps) {last:.4f}")
    tr = eval_loss(model, train_ids)
    he = eval_loss(model, held_ids)
    log(f"loss nats/byte: train {tr:.4f} ({tr / math.log(2):.3f} bits), held-out {he:.4f} ({he / math.log(2):.3f} bits)")
    write_fixture(model, held_ids, a.out, log)


if __name__ == "__main__":
    main()
