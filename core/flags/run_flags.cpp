#include "core/flags/run_flags.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <stdexcept>

#include "core/backends/make_backend.h"
#include "core/base/error.h"
#include "core/base/system_limits.h"
#include "core/policy/kv_precision.h"
#include "core/policy/policy.h"
#include "core/runtime/backend.h"
#include "core/studio/studio_params.h"
#include "core/studio/studio_setup.h"

// Each entry names the members it sets (designated initializers); the rest
// keep their defaults, which GCC 12's -Wextra reports as missing anyway.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace h2o {
namespace {

constexpr int64_t kMaxMiB = int64_t(1) << 30;  // a KV limit or a recording limit: 1 PiB
constexpr const char* kHeadTokens = "the tokens a KV head may hold";

// The policies' parameters (--sinks, --window, --heavy, --recent), each with
// the help of every kind that takes it; the app takes those its controls show.
void add_policy_params(std::vector<RunFlag>& out) {
  for (const PolicyFlag& p : policy_flags()) {
    // 0 is in bounds: a kind whose part needs 1 at least refuses it with its reason (make_policy).
    RunFlag f{.name = p.name, .kind = FlagKind::Int, .value_name = "n", .help = p.help, .lo = 0, .hi = kMaxCacheTokens,
              .hi_is = kHeadTokens};
    f.default_text = "each kind's above, or its share of --budget";
    f.takers = kCliRun;
    for (const StudioParam& s : studio_params())
      if (s.name == p.name) {
        f.takers |= kApp;
        if (s.automatic)
          f.defaults.push_back({kApp, "its share of the budget (0 too)",
                                "the app always has a budget, and keeps 0 as \"auto\" in its controls"});
      }
    if (p.name == "sinks") {
      f.takers |= kBench;
      f.defaults.push_back({kBench, "4", ""});
    }
    out.push_back(std::move(f));
  }
}

// What runs: the model, its tokenizer, the prompts, the policies.
void add_input_flags(std::vector<RunFlag>& out) {
  out.push_back({.name = "model", .kind = FlagKind::Path, .value_name = "path",
                 .help = "model: a .gguf (any weight type), llama2.c .bin, Hugging Face folder, config.json or "
                         ".safetensors, or synthetic:<shape>[:vocab=N]",
                 .default_text = "the demo model of the assets (kjv-1M)", .takers = kCliRun | kApp});
  out.push_back({.name = "tokenizer", .kind = FlagKind::Path, .value_name = "path",
                 .help = "tokenizer: SentencePiece .model, Hugging Face tokenizer.json or a GGUF vocabulary",
                 .default_text = "the model's own, else the demo's", .takers = kCliRun | kApp});
  out.push_back({.name = "prompts", .kind = FlagKind::Path, .value_name = "path",
                 .help = "MT-Bench questions: FastChat question.jsonl",
                 .default_text = "the assets' mt_bench.jsonl", .takers = kCliStream | kApp});
  out.push_back({.name = "policies", .kind = FlagKind::List, .value_name = "list",
                 .help = "the policies side by side, in order, comma-separated: " + policy_names() +
                         "; an entry may have its own KV precision, h2o@2bit (the app shows 2 to 4)",
                 .default_text = "full,streaming,h2o", .takers = kCliStream | kApp});
}

// Where it runs: the backend, its precision and threads, the KV memory it may take.
void add_device_flags(std::vector<RunFlag>& out) {
  out.push_back({.name = "backend", .kind = FlagKind::Choice, .value_name = "name",
                 .help = "compute backend (cuda-sim: the CUDA backend's code through the SIMT emulation, on the "
                         "CPU: slow, for checking)",
                 .choices = backend_names(), .default_text = "cpu",
                 .defaults = {{kBenchStudio, "none, synthetic steps",
                               "given, it runs the real engine on a random-weight model of each shape and reports the "
                               "engine alone beside the whole pipeline"},
                              {kCliInfo, "none, the files alone",
                               "given, info also makes this backend and says what it holds: its device, and the MiB "
                               "of weights it uploads"}},
                 .takers = kCliRun | kBench | kBenchStudio | kApp | kCliInfo});
  out.push_back({.name = "precision", .kind = FlagKind::Choice, .value_name = "name",
                 .help = "CUDA weights' precision", .choices = {"f32", "f16", "bf16", "native"},
                 .default_text = "native for quantized files, else f32",
                 .takers = kCliRun | kBench | kBenchStudio | kCliInfo});
  out.push_back({.name = "threads", .kind = FlagKind::Int, .value_name = "n", .help = "CPU threads",
                 .lo = 0, .hi = max_threads(),
                 .hi_is = std::to_string(kThreadsPerCore) + " per CPU this process may use",
                 .default_text = "0, every core",
                 .defaults = {{kApp, "0, every core but one", "the window keeps a core to draw on"},
                              {kBench, "2 on the cpu backend", "a benchmark's rows compare at one thread count"},
                              {kBenchStudio, "0, the app's choice", "it measures the app's own run"}},
                 .takers = kCliRun | kBench | kBenchStudio | kApp});
  out.push_back({.name = "kv-limit", .kind = FlagKind::Int, .value_name = "MiB",
                 .help = "KV memory of all sessions together; a session that needs more stops, the others go on",
                 .lo = 0, .hi = kMaxMiB, .default_text = "0, no limit", .takers = kCliRun | kApp});
}

// The caches: budget, slack, the policies' parts, positions, KV precision.
void add_cache_flags(std::vector<RunFlag>& out) {
  out.push_back({.name = "budget", .kind = FlagKind::Int, .value_name = "n",
                 .help = "tokens per KV head for every policy that evicts; the parameters not given split it",
                 .lo = 1, .hi = kMaxCacheTokens, .hi_is = kHeadTokens,
                 .default_text = "each policy's parameters' defaults, 64 in all",
                 .defaults = {{kApp, "64", "a small cache, so that evictions show within the first answer"},
                              {kBench, "64", ""},
                              {kBenchStudio, "1024", "the budget a GPU serves"}},
                 .takers = kCliRun | kBench | kBenchStudio | kApp});
  out.push_back({.name = "slack", .kind = FlagKind::Int, .value_name = "n",
                 .help = "tokens a cache grows past its budget before one cut back to it (0 is exact)",
                 .lo = 0, .hi = kMaxCacheTokens, .hi_is = kHeadTokens,
                 .default_text = "0 on the CPU, " + std::to_string(kDeviceSlack) + " on a GPU",
                 .defaults = {{kBenchStudio, std::to_string(kDeviceSlack), "the device's slack, on any backend"}},
                 .takers = kCliRun | kBenchStudio | kApp});
  add_policy_params(out);
  out.push_back({.name = "position-rolling", .kind = FlagKind::Switch,
                 .help = "RoPE positions from cache slots instead of stream positions", .takers = kCliRun | kApp});
  out.push_back({.name = "kv-bits", .kind = FlagKind::Text, .value_name = "bits",
                 .help = "KV precision of every policy, K[,V]: 16, 8, 4 or 2 bits (KIVI); a policy list may also "
                         "say it per entry, h2o@2bit",
                 .default_text = "the backend's own cache type", .takers = kCliRun | kBench | kApp});
  out.push_back({.name = "kv-group", .kind = FlagKind::Int, .value_name = "n",
                 .help = "quantization group G: tokens of a key group, channels of a value group (it divides the "
                         "head's dimension)",
                 .lo = 1, .hi = KvPrecision::kMaxGroup,
                 .default_text = "the largest of 32, 16, 8 the head and the budget allow",
                 .takers = kCliRun | kBench | kApp});
  out.push_back({.name = "kv-residual", .kind = FlagKind::Int, .value_name = "n",
                 .help = "newest tokens kept in f16: R, a multiple of G", .lo = 1, .hi = KvPrecision::kMaxResidual,
                 .default_text = "2G, or G where the budget is small", .takers = kCliRun | kBench | kApp});
}

std::vector<RunFlag> make_flags() {
  std::vector<RunFlag> out;
  add_input_flags(out);
  add_device_flags(out);
  add_cache_flags(out);
  out.push_back({.name = "recording-limit", .kind = FlagKind::Int, .value_name = "MiB",
                 .help = "most of the run kept for Save recording, logs, reports and the timeline; past it, the "
                         "newest steps and the whole history before them",
                 .lo = 0, .hi = kMaxMiB, .default_text = "512",
                 .defaults = {{kBenchStudio, "0, no limit", "it measures the whole recording unless asked"}},
                 .takers = kBenchStudio | kApp});
  return out;
}

std::string bounds_text(const RunFlag& f) {
  if (f.kind == FlagKind::Int) return std::to_string(f.lo) + " to " + std::to_string(f.hi);
  if (f.kind != FlagKind::Choice) return "";
  std::string s;
  for (size_t i = 0; i < f.choices.size(); ++i) s += (i ? "|" : "") + f.choices[i];
  return s;
}

}  // namespace

std::string RunFlag::default_for(FlagTaker taker) const {
  for (const Default& d : defaults)
    if (d.taker == taker) return d.why.empty() ? d.text : d.text + " — " + d.why;
  return default_text;
}

const std::vector<RunFlag>& run_flags() {
  static const std::vector<RunFlag> flags = make_flags();
  return flags;
}

const RunFlag& run_flag(std::string_view name) {
  for (const RunFlag& f : run_flags())
    if (f.name == name) return f;
  throw std::logic_error("run_flag: no flag " + std::string(name) + " in the table");
}

std::string flag_help(const RunFlag& flag, FlagTaker taker) {
  std::string extra = bounds_text(flag);
  const std::string d = flag.default_for(taker);
  if (!d.empty()) extra += (extra.empty() ? "" : "; ") + ("default: " + d);
  return extra.empty() ? flag.help : flag.help + " (" + extra + ")";
}

std::string flag_problem(const RunFlag& flag, std::string_view text) {
  if (flag.kind == FlagKind::Choice) {
    if (std::find(flag.choices.begin(), flag.choices.end(), text) != flag.choices.end()) return "";
    return "expected " + bounds_text(flag) + ", got '" + std::string(text) + "'";
  }
  if (flag.kind != FlagKind::Int) return "";
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < flag.lo)
    return "expected a whole number from " + bounds_text(flag) + ", got '" + std::string(text) + "'";
  if (v > flag.hi)
    return std::string(text) + " is more than " + (flag.hi_is.empty() ? "" : flag.hi_is + ", ") +
           std::to_string(flag.hi) + " (" + bounds_text(flag) + ")";
  return "";
}

int64_t flag_int(const RunFlag& flag, std::string_view text) {
  if (std::string p = flag_problem(flag, text); !p.empty()) fail("--" + flag.name, p);
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string flag_choice(const RunFlag& flag, std::string_view text) {
  if (std::string p = flag_problem(flag, text); !p.empty()) fail("--" + flag.name, p);
  return std::string(text);
}

void keep_in_bounds(StudioConfig& c, const StudioConfig& defaults) {
  const auto keep = [](const char* flag, auto& value, auto fallback, std::optional<int64_t> unset = std::nullopt) {
    const RunFlag& f = run_flag(flag);
    if ((value < f.lo || value > f.hi) && (!unset || value != *unset)) value = fallback;
  };
  keep("budget", c.budget, defaults.budget);
  keep("threads", c.threads, defaults.threads);
  keep("kv-limit", c.kv_limit_mib, defaults.kv_limit_mib);
  keep("slack", c.slack, defaults.slack, -1);
  keep("kv-group", c.kv_group, defaults.kv_group, 0);
  keep("kv-residual", c.kv_residual, defaults.kv_residual, 0);
  for (auto& [name, value] : c.params) {
    const auto d = defaults.params.find(name);
    if (d != defaults.params.end()) keep(name.c_str(), value, d->second);  // the controls' parameters, each a flag
  }
}

}  // namespace h2o
