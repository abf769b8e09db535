#!/usr/bin/env python3
"""The transformers peer: Hugging Face LlamaForCausalLM decode speed at our shapes.

Random weights at real shapes (a decode step costs the same whatever the
weights hold), fp16, built directly on the GPU; greedy decoding with the
model's default cache (DynamicCache). For each shape and context length C:

  * loop: prefill a random prompt of C tokens, then time --steps single-token
    forward passes (argmax fed back on the device, no host sync), each between
    two CUDA events, after a warm-up run; report the median ms/step;
  * generate(): model.generate(greedy, min_new_tokens = max_new_tokens) timed
    with 1 and 1+--steps new tokens (synchronised wall clock, median of
    --gen-repeats); the difference over --steps is generate()'s ms/step.

Bytes a step must move (fp16 weights read once + the KV cache read once) over
the step time give GB/s, compared with --copy-gbps (the measured device copy
bandwidth, read+write) when given. Rows are appended to --md as each lands;
--json gets everything. --dry-run needs no torch: it prints the shapes and the plan.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

# The shapes (llama2.c / Hugging Face configs). Tied: the llama2.c stories models share the
# classifier with the embedding; TinyLlama and Llama 2 do not.
SHAPES = {
    "stories15M": dict(dim=288, hidden=768, layers=6, heads=6, kv=6, vocab=32000, tied=True),
    "stories110M": dict(dim=768, hidden=2048, layers=12, heads=12, kv=12, vocab=32000, tied=True),
    "tinyllama-1.1b": dict(dim=2048, hidden=5632, layers=22, heads=32, kv=4, vocab=32000, tied=False),
    "llama2-7b": dict(dim=4096, hidden=11008, layers=32, heads=32, kv=32, vocab=32000, tied=False),
}


def llama_config_kwargs(s, max_positions):
    """LlamaConfig keys (present in transformers 4.x and 5.x alike)."""
    return dict(
        vocab_size=s["vocab"],
        hidden_size=s["dim"],
        intermediate_size=s["hidden"],
        num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"],
        num_key_value_heads=s["kv"],
        max_position_embeddings=max_positions,
        rms_norm_eps=1e-5,
        tie_word_embeddings=s["tied"],
        use_cache=True,
    )


def param_count(s):
    """Parameters as the model holds them (a tied classifier counted once)."""
    d, h, L, v = s["dim"], s["hidden"], s["layers"], s["vocab"]
    kv_dim = d // s["heads"] * s["kv"]
    per_layer = d * d * 2 + d * kv_dim * 2 + 3 * d * h + 2 * d
    return L * per_layer + d + v * d * (1 if s["tied"] else 2)


def step_bytes(s, context, elem=2):
    """Fewest bytes one decode step moves at this context: every weight read once (the embedding:
    one row), the K and V of every cached position read once, one new K and V written."""
    d, h, L, v = s["dim"], s["hidden"], s["layers"], s["vocab"]
    kv_dim = d // s["heads"] * s["kv"]
    weights = L * (d * d * 2 + d * kv_dim * 2 + 3 * d * h + 2 * d) + d + v * d + d
    kv = 2 * L * (context + 1) * kv_dim
    return elem * (weights + kv)


def check_shape(name, s):
    if s["dim"] % s["heads"]:
        raise ValueError("%s: dim %d not divisible by heads %d" % (name, s["dim"], s["heads"]))
    if s["heads"] % s["kv"]:
        raise ValueError("%s: heads %d not divisible by kv heads %d" % (name, s["heads"], s["kv"]))


def fmt(x, nd=2):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else ("%.*f" % (nd, x))


HEADER = ("| shape | params | context | decode steps | ms/step (median, events) | tok/s | ms/step p10–p90 | "
          "generate() ms/step | prefill ms | MB/step | GB/s | % of copy BW | attention | notes |")
RULE = "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|"


class Table:
    def __init__(self, md_path):
        self.md = open(md_path, "a") if md_path else None
        self.emit(HEADER)
        self.emit(RULE)

    def emit(self, line):
        print(line, flush=True)
        if self.md:
            self.md.write(line + "\n")
            self.md.flush()

    def row(self, r, copy_gbps):
        gbps = r.get("gbps")
        pct = (100.0 * gbps / copy_gbps) if (gbps and copy_gbps) else None
        self.emit("| %s | %.1fM | %d | %s | %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %s |" % (
            r["shape"], r["params"] / 1e6, r["context"], r.get("steps", "—"), fmt(r.get("ms_median"), 3),
            fmt(r.get("tok_s"), 1), r.get("ms_p10_p90", "—"), fmt(r.get("generate_ms"), 3),
            fmt(r.get("prefill_ms"), 1), r["bytes_per_step"] / 1e6, fmt(gbps, 0), fmt(pct, 0),
            r.get("attention", "—"), str(r.get("notes", "")).replace("|", "\\|")[:160]))


def dry_run(a, shapes, contexts):
    print("peer_transformers.py --dry-run: nothing is imported or run (no torch needed)")
    print("plan: shapes %s, contexts %s, %d timed decode steps after %d warm-up, generate() x%d, deadline %ss"
          % (",".join(shapes), ",".join(map(str, contexts)), a.steps, a.warmup, a.gen_repeats, a.deadline_s))
    table = Table(None)
    for name in shapes:
        s = SHAPES[name]
        check_shape(name, s)
        kw = llama_config_kwargs(s, max(contexts) + a.steps + a.warmup + 8)
        print("config %s: %s" % (name, json.dumps(kw)), file=sys.stderr)
        for c in contexts:
            table.row(dict(shape=name, params=param_count(s), context=c, steps=a.steps,
                           bytes_per_step=step_bytes(s, c), notes="dry run"), a.copy_gbps)
    return 0


def run(a, shapes, contexts):
    try:  # only here: the dry run must work without torch
        import torch
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:
        print("peer: cannot import the peer stack here: %s" % e, file=sys.stderr)
        return 1

    if not torch.cuda.is_available():
        print("peer: torch sees no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    print("peer: torch %s (CUDA %s), transformers %s, %s" % (torch.__version__, torch.version.cuda,
          transformers.__version__, torch.cuda.get_device_name(0)), file=sys.stderr, flush=True)
    t_start = time.time()
    table = Table(a.md)
    results = []
    failures = 0

    def save_json():
        if a.json:
            with open(a.json, "w") as f:
                json.dump(dict(torch=torch.__version__, transformers=transformers.__version__,
                               device=torch.cuda.get_device_name(0), copy_gbps=a.copy_gbps,
                               steps=a.steps, results=results), f, indent=1)

    def left():
        return a.deadline_s - (time.time() - t_start)

    def argmax_last(logits):
        return logits[:, -1, :].argmax(dim=-1, keepdim=True)

    for name in shapes:
        s = SHAPES[name]
        check_shape(name, s)
        base = dict(shape=name, params=param_count(s))
        if left() < 20:
            for c in contexts:
                r = dict(base, context=c, bytes_per_step=step_bytes(s, c), notes="skipped: deadline")
                results.append(r)
                table.row(r, a.copy_gbps)
            continue
        model = None
        try:
            # Built in fp16 directly on the GPU: no slow CPU init, no fp32 copy of llama2-7b.
            config = LlamaConfig(**llama_config_kwargs(s, max(contexts) + a.steps + a.warmup + 8))
            for key, want in (("hidden_size", s["dim"]), ("intermediate_size", s["hidden"]),
                              ("num_hidden_layers", s["layers"]), ("num_attention_heads", s["heads"]),
                              ("num_key_value_heads", s["kv"]), ("vocab_size", s["vocab"]),
                              ("tie_word_embeddings", s["tied"])):
                if getattr(config, key) != want:
                    raise RuntimeError("LlamaConfig.%s is %r, wanted %r" % (key, getattr(config, key), want))
            torch.manual_seed(0)
            t0 = time.time()
            old = torch.get_default_dtype()
            torch.set_default_dtype(torch.float16)
            try:
                with dev:
                    model = LlamaForCausalLM(config)
            finally:
                torch.set_default_dtype(old)
            # Only if construction left something behind (a cast would also turn RoPE's fp32 buffer to fp16).
            if any(p.dtype != torch.float16 or p.device.type != "cuda" for p in model.parameters()):
                model = model.to(device=dev, dtype=torch.float16)
            model.eval()
            torch.cuda.synchronize()
            init_s = time.time() - t0
            n_params = sum(p.numel() for p in model.parameters())
            w = model.model.layers[0].mlp.up_proj.weight
            wstd = float(w.float().std())
            reinit = ""
            if not (0 < wstd < 1) or not bool(torch.isfinite(w).all()):
                # A transformers that leaves weights uninitialised here: draw them ourselves (N(0, 0.02),
                # norms 1), so the run times real-looking data, never zeros or garbage.
                with torch.no_grad():
                    for p in model.parameters():
                        if p.dim() >= 2:
                            p.normal_(0.0, 0.02)
                        else:
                            p.fill_(1.0)
                reinit = "weights drawn by the peer (constructor left std %r)" % wstd
                wstd = float(w.float().std())
                if not (0 < wstd < 1):
                    raise RuntimeError("weights not initialised (std %r)" % wstd)
            attn = getattr(model.config, "_attn_implementation", None) or "?"
            fwd_params = __import__("inspect").signature(model.forward).parameters
            keep = {}
            if "logits_to_keep" in fwd_params:
                keep = {"logits_to_keep": 1}
            elif "num_logits_to_keep" in fwd_params:
                keep = {"num_logits_to_keep": 1}
            print("peer: %s built in %.1f s: %d parameters (expected %d), attention %s, weight std %.4f"
                  % (name, init_s, n_params, param_count(s), attn, wstd), file=sys.stderr, flush=True)
            base["params"] = n_params
        except Exception as e:  # a shape that cannot be built is a row, not the end of the run
            failures += 1
            for c in contexts:
                r = dict(base, context=c, bytes_per_step=step_bytes(s, c), notes="FAIL build: %s" % e)
                results.append(r)
                table.row(r, a.copy_gbps)
            del model
            torch.cuda.empty_cache()
            continue

        for c in contexts:
            r = dict(base, context=c, steps=a.steps, bytes_per_step=step_bytes(s, c), attention=attn)
            if left() < 10:
                r["notes"] = "skipped: deadline"
                results.append(r)
                table.row(r, a.copy_gbps)
                continue
            try:
                g = torch.Generator().manual_seed(c)
                prompt = torch.randint(3, s["vocab"], (1, c), generator=g).to(dev)
                with torch.inference_mode():
                    def prefill():
                        out = model(input_ids=prompt, use_cache=True, **keep)
                        return out.past_key_values, argmax_last(out.logits)

                    def step(tok, pkv):
                        out = model(input_ids=tok, past_key_values=pkv, use_cache=True)
                        return argmax_last(out.logits), out.past_key_values, out.logits

                    # Warm-up: a whole prefill + a few steps (kernels chosen, allocator filled).
                    pkv, tok = prefill()
                    for _ in range(a.warmup):
                        tok, pkv, _ = step(tok, pkv)
                    torch.cuda.synchronize()
                    del pkv
                    # Timed: prefill once, then each decode step between two CUDA events.
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    pkv, tok = prefill()
                    e1.record()
                    starts = [torch.cuda.Event(enable_timing=True) for _ in range(a.steps)]
                    ends = [torch.cuda.Event(enable_timing=True) for _ in range(a.steps)]
                    torch.cuda.synchronize()
                    w0 = time.perf_counter()
                    for i in range(a.steps):
                        starts[i].record()
                        tok, pkv, logits = step(tok, pkv)
                        ends[i].record()
                    torch.cuda.synchronize()
                    wall_ms = (time.perf_counter() - w0) * 1e3 / a.steps
                    finite = bool(torch.isfinite(logits).all())
                    del pkv
                ms = sorted(st.elapsed_time(en) for st, en in zip(starts, ends))
                med = statistics.median(ms)
                r.update(prefill_ms=e0.elapsed_time(e1), ms_median=med, tok_s=1e3 / med,
                         ms_p10_p90="%.3f–%.3f" % (ms[len(ms) // 10], ms[(len(ms) * 9) // 10]),
                         wall_ms_per_step=wall_ms, gbps=r["bytes_per_step"] / (med * 1e-3) / 1e9)
                notes = ["wall %.3f ms/step" % wall_ms] + ([reinit] if reinit else [])
                if base["params"] != param_count(s):
                    notes.append("params differ from the shape's %d" % param_count(s))
                if not finite:
                    notes.append("NON-FINITE logits")
                    failures += 1
                # generate(): greedy, exactly N new tokens; (T(1+N) - T(1)) / N is its per-step time.
                if a.gen_repeats > 0 and left() > 15:
                    mask = torch.ones_like(prompt)

                    def gen(n):
                        torch.cuda.synchronize()
                        t = time.perf_counter()
                        out = model.generate(input_ids=prompt, attention_mask=mask, max_new_tokens=n,
                                             min_new_tokens=n, do_sample=False, pad_token_id=0)
                        torch.cuda.synchronize()
                        if out.shape[1] != c + n:
                            raise RuntimeError("generate() made %d tokens, asked %d" % (out.shape[1] - c, n))
                        return time.perf_counter() - t

                    gen(2)  # warm-up
                    t1 = statistics.median(gen(1) for _ in range(a.gen_repeats))
                    tn = statistics.median(gen(1 + a.steps) for _ in range(a.gen_repeats))
                    r["generate_ms"] = (tn - t1) * 1e3 / a.steps
                r["notes"] = "; ".join(notes)
            except Exception as e:
                failures += 1
                r["notes"] = "FAIL: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            results.append(r)
            table.row(r, a.copy_gbps)
            save_json()
        del model
        torch.cuda.empty_cache()
    save_json()
    print("peer: done in %.0f s, %d failure(s)" % (time.time() - t_start, failures), file=sys.stderr)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated, from: " + ", ".join(SHAPES))
    ap.add_argument("--contexts", default="512,2048", help="prompt lengths before the timed decode")
    ap.add_argument("--steps", type=int, default=64, help="timed decode steps per context")
    ap.add_argument("--warmup", type=int, default=8, help="untimed decode steps after the warm-up prefill")
    ap.add_argument("--gen-repeats", type=int, default=3, help="generate() timings per length (0: skip generate)")
    ap.add_argument("--deadline-s", type=float, default=420.0, help="stop starting new work after this many seconds")
    ap.add_argument("--copy-gbps", type=float, default=None, help="measured D2D copy bandwidth (read+write), GB/s")
    ap.add_argument("--md", help="append the Markdown table to this file")
    ap.add_argument("--json", help="write all results to this file")
    ap.add_argument("--dry-run", action="store_true", help="print shapes and plan; import nothing")
    a = ap.parse_args()

    shapes = [x for x in a.shapes.split(",") if x]
    for name in shapes:
        if name not in SHAPES:
            ap.error("unknown shape %r (known: %s)" % (name, ", ".join(SHAPES)))
    try:
        contexts = [int(x) for x in a.contexts.split(",") if x]
    except ValueError:
        ap.error("--contexts must be integers, e.g. 512,2048")
    if not contexts or min(contexts) < 1:
        ap.error("--contexts must be positive")
    if a.steps < 2 or a.warmup < 0 or a.gen_repeats < 0:
        ap.error("--steps >= 2, --warmup >= 0, --gen-repeats >= 0")
    if a.dry_run:
        return dry_run(a, shapes, contexts)
    return run(a, shapes, contexts)


if __name__ == "__main__":
    sys.exit(main())
