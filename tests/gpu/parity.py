#!/usr/bin/env python3
"""Parity: the shared greedy references through `h2o-cli generate`, per backend.

Builds each case's command exactly as tests/app/test_reference_greedy.cpp does
(`generate --model M [--tokenizer T] --prompt-ids ... --max-new-tokens N
--prefill-chunk 1 --print-ids --policy ... --slack 0 --backend B`, and `--threads 2` for
the cpu backend alone: a device backend has no CPU threads to set, and
cuda-sim refuses more than one), and compares the printed ids with the
reference. Appends a Markdown table to
--md (row by row, so a timeout keeps what was done) and exits non-zero when a
case differs or fails. The CPU backend is the control: it must match too.

--dry-run prints the commands without running anything (no h2o-cli needed).
"""
import argparse
import json
import os
import subprocess
import sys
import time

# reference file -> (model, tokenizer or None), as tests/app/test_reference_greedy.cpp pairs them.
REFERENCES = [
    ("stories260K-greedy.json", "stories260K.bin", None),
    ("kjv-1M-greedy.json", "kjv-1M.bin", "kjv-tok2k.model"),
    # TOVA: in the shared assets; run when the CLI knows the policy, reported otherwise.
    ("stories260K-tova-greedy.json", "stories260K.bin", None),
]


def policy_flags(case):
    """The same flags as policy_flags() in tests/app/test_reference_greedy.cpp (tova: sinks + window)."""
    policy = case["policy"]
    flags = ["--policy", policy]
    if policy in ("streaming", "tova"):
        flags += ["--sinks", str(int(case["sinks"])), "--window", str(int(case["window"]))]
    if policy == "h2o":
        flags += ["--sinks", str(int(case["sinks"])), "--heavy", str(int(case["heavy"])),
                  "--recent", str(int(case["recent"]))]
    if case.get("rolling", False):
        flags.append("--position-rolling")
    return flags


def case_label(case):
    p = case["policy"]
    if p in ("streaming", "tova"):
        p += "(%d,%d)" % (case["sinks"], case["window"])
    elif p == "h2o":
        p += "(%d,%d,%d)" % (case["sinks"], case["heavy"], case["recent"])
    return p + (" rolling" if case.get("rolling") else "")


def build_args(cli, assets, model, tokenizer, ref, case, backend, extra):
    steps = int(case["steps"]) if "steps" in case else int(case["max_new_tokens"])
    args = [cli, "generate", "--model", os.path.join(assets, model)]
    if tokenizer:
        args += ["--tokenizer", os.path.join(assets, tokenizer)]
    args += ["--prompt-ids", ",".join(str(i) for i in ref["prompt_ids"]),
             "--max-new-tokens", str(steps), "--prefill-chunk", "1", "--print-ids"]
    args += policy_flags(case)
    args += ["--slack", "0"]  # the references are exact: a GPU's default slack would cut later
    args += ["--backend", backend] + (["--threads", "2"] if backend == "cpu" else []) + extra
    return args, steps


def compare(expected, got):
    """'ok' or where the first difference is."""
    for i, (e, g) in enumerate(zip(expected, got)):
        if e != g:
            return "first difference at generated token %d (expected %d, got %d)" % (i, e, g)
    if len(got) != len(expected):
        return "%d ids, expected %d" % (len(got), len(expected))
    return "ok"


def one_line(text):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return (lines[-1] if lines else "").replace("|", "\\|")[:200]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default="build/app/h2o-cli", help="h2o-cli to run")
    ap.add_argument("--assets", default=os.environ.get("H2O_ASSETS", "../shared/assets"),
                    help="folder holding the models and reference/ (default $H2O_ASSETS)")
    ap.add_argument("--backends", default="cpu,cuda", help="comma-separated backends")
    ap.add_argument("--extra", default="", help="extra h2o-cli flags, space-separated (e.g. --precision f32)")
    ap.add_argument("--md", help="append the Markdown table to this file")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per h2o-cli run")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args()
    backends = [b for b in a.backends.split(",") if b]
    extra = a.extra.split()

    md = open(a.md, "a") if a.md and not a.dry_run else None

    def emit(line):
        print(line, flush=True)
        if md:
            md.write(line + "\n")
            md.flush()

    emit("| reference | case | tokens | " + " | ".join(backends) + " |")
    emit("|---|---|---:|" + "---|" * len(backends))
    failures = 0
    # A backend (or a policy) the CLI does not have is reported once, not run case after case.
    missing = {}
    for ref_name, model, tokenizer in REFERENCES:
        path = os.path.join(a.assets, "reference", ref_name)
        if not os.path.exists(path):
            emit("| %s | — | — | %s |" % (ref_name, " | ".join("missing: %s" % path for _ in backends)))
            failures += 1
            continue
        with open(path) as f:
            ref = json.load(f)
        for case in ref["cases"]:
            cells = []
            steps = None
            for backend in backends:
                args, steps = build_args(a.cli, a.assets, model, tokenizer, ref, case, backend, extra)
                if a.dry_run:
                    print(" ".join(args))
                    cells.append("dry run")
                    continue
                if "policy:" + case["policy"] in missing:  # the CLI lacks the policy: n/a, not a backend failure
                    cells.append("n/a (%s)" % missing["policy:" + case["policy"]])
                    continue
                if backend in missing:
                    cells.append("not run (%s)" % missing[backend])
                    failures += 1
                    continue
                t0 = time.time()
                try:
                    r = subprocess.run(args, capture_output=True, text=True, timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    cells.append("FAIL: timeout after %.0f s" % a.timeout)
                    failures += 1
                    continue
                except OSError as e:
                    cells.append("FAIL: %s" % e)
                    failures += 1
                    continue
                secs = time.time() - t0
                sys.stderr.write("%s %s %s: exit %d in %.1f s\n%s" % (ref_name, case_label(case), backend,
                                                                      r.returncode, secs, r.stderr))
                if r.returncode != 0:
                    msg = one_line(r.stderr)
                    if "unknown policy" in msg:
                        missing["policy:" + case["policy"]] = "policy %s not in this CLI" % case["policy"]
                        cells.append("n/a (%s)" % msg)
                        continue
                    if "no CUDA backend" in msg or "unknown backend" in msg:
                        missing[backend] = "no %s backend in this build" % backend
                    cells.append("FAIL (exit %d): %s" % (r.returncode, msg))
                    failures += 1
                    continue
                got = [int(x) for x in r.stdout.split()]
                verdict = compare(list(case["ids"]), got)
                cells.append(("ok (%.1f s)" % secs) if verdict == "ok" else "FAIL: " + verdict)
                failures += verdict != "ok"
            emit("| %s | %s | %s | %s |" % (ref_name, case_label(case), steps, " | ".join(cells)))
    if md:
        md.close()
    if not a.dry_run:
        print("parity: %d case-backend pairs failed or not run" % failures, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
