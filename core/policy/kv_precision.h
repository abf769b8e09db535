#pragma once
// How many bits a cached key and value keep (../shared/docs/SEMANTICS.md, "KV
// precision"): the backend's own cache type, f16, or KIVI's quantization to
// 8, 4 or 2 bits — keys per channel over groups of G tokens, values per token
// over groups of G channels, the sinks and the newest R..R+G-1 tokens in f16.
// A policy carries one (PolicyConfig::kv), so any policy may run at any
// precision, and the same policy at two precisions side by side.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/policy/low_bit_layout.h"

namespace h2o {

struct KvPrecision {
  static constexpr int kNative = 0;  // the backend's cache type (f32 on the CPU)
  static constexpr int kMaxGroup = 4096, kMaxResidual = 1 << 20;  // validate()'s bounds, every front end's
  int key_bits = kNative;            // 0, 16, 8, 4 or 2
  int value_bits = kNative;
  int group = 32;                    // G: tokens of a key group, channels of a value group
  int residual = 64;                 // R: the newest tokens kept exact (R..R+G-1 of them)
  // G or R was given (a flag, a setting, a recording): both are kept. Else
  // shaped_for() picks both for the model and the budget.
  bool shape_given = false;

  bool native() const { return key_bits == kNative && value_bits == kNative; }
  // Either half below 16 bits: the cache quantizes groups as they leave the residual.
  bool quantized() const { return (key_bits != kNative && key_bits < 16) || (value_bits != kNative && value_bits < 16); }
  // "2bit", "k4v2", "16bit"; "" when native.
  std::string label() const;
  // Throws Error naming the flag (--kv-bits, --kv-group, --kv-residual) of
  // the first impossible value; `rolling`: quantized keys cannot be re-rotated.
  void validate(bool rolling) const;
  // Throws Error naming --kv-group when G does not divide the model's head_dim.
  void validate_for(int head_dim) const;
  // SEMANTICS' "defaults that quantize at every budget", where G and R were
  // not given: G the largest of 32, 16, 8 dividing head_dim, R = 2G; for a
  // bounded `budget` (0: none) with `sinks`, while sinks + R + G > budget / 2
  // and G > 8, G halves and R = G, so that at least half of the cache can be
  // quantized. The result counts as given. Unchanged where G or R was given,
  // below 16 bits nowhere, or no such G divides head_dim (validate_for says why).
  KvPrecision shaped_for(int head_dim, int budget, int sinks) const;
  bool operator==(const KvPrecision&) const = default;
};

// The quantized layout's shape (low_bit_layout.h) of a (layer, KV head) of
// head_dim channels at this precision: its bytes, growth and flush rule.
kvq::Shape low_bit_shape(const KvPrecision& kv, int head_dim);

// "--kv-bits K[,V]" (one value: both): 16, 8, 4 or 2 — one precision
// everywhere ("4,2" is keys 4, values 2). Throws Error naming `flag`; a
// longer list is pointed at --kv-sweep.
KvPrecision parse_kv_bits(std::string_view text, const std::string& flag = "--kv-bits");
// "--kv-sweep" (eval, h2o-bench): precisions to compare, comma-separated, each
// 32 (the backend's own type: native), 16, 8, 4, 2 or k<K>v<V> (k4v2). G and
// R are left as KvPrecision's; the caller sets what was given. Throws Error
// naming `flag` for an empty list or an item that is none of these.
std::vector<KvPrecision> parse_kv_sweep(std::string_view list, const std::string& flag = "--kv-sweep");
// The precisions a run compares (eval, h2o-bench): each of `sweep`, else the
// one of `bits`, else the backend's own; those below it take G, R and
// shape_given from `shape`. Both lists given: Error naming --kv-sweep.
std::vector<KvPrecision> kv_precisions(std::string_view bits, std::string_view sweep, const KvPrecision& shape);
// A pane name's suffix after '@': "2bit", "4bit", "8bit", "16bit"/"f16", "k4v2". Throws Error naming `flag`.
KvPrecision parse_kv_label(std::string_view label, const std::string& flag);

}  // namespace h2o
