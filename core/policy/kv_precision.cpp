#include "core/policy/kv_precision.h"

#include <charconv>

#include "core/base/error.h"
#include "core/base/format.h"

namespace h2o {
namespace {

bool valid_bits(int b) { return b == 16 || b == 8 || b == 4 || b == 2; }

int parse_bits(std::string_view text, const std::string& flag, std::string_view whole) {
  int bits = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bits);
  if (ec != std::errc() || end != text.data() + text.size() || !valid_bits(bits))
    fail(flag, "'" + std::string(whole) + "': bits must be 16, 8, 4 or 2 (K or K,V)");
  return bits;
}

}  // namespace

std::string KvPrecision::label() const {
  if (native()) return "";
  if (key_bits == value_bits) return std::to_string(key_bits) + "bit";
  // Appended in place: GCC 12 warns -Wrestrict (falsely) on "k" + std::string&&.
  std::string mixed = "k";
  mixed += std::to_string(key_bits);
  mixed += 'v';
  mixed += std::to_string(value_bits);
  return mixed;
}

kvq::Shape low_bit_shape(const KvPrecision& kv, int head_dim) {
  return kvq::Shape{head_dim, kv.key_bits, kv.value_bits, kv.group, kv.residual};
}

void KvPrecision::validate(bool rolling) const {
  if (native()) return;
  if (!valid_bits(key_bits) || !valid_bits(value_bits))
    fail("--kv-bits", "must be 16, 8, 4 or 2 bits (K or K,V), got " + std::to_string(key_bits) + "," +
                          std::to_string(value_bits));
  if (group < 1 || group > kMaxGroup)
    fail("--kv-group", "must be between 1 and " + std::to_string(kMaxGroup) + ", got " + std::to_string(group));
  if (residual < group || residual % group != 0 || residual > kMaxResidual)
    fail("--kv-residual", "must be a multiple of --kv-group (" + std::to_string(group) + ") and at least it, got " +
                              std::to_string(residual));
  if (rolling && quantized())
    fail("--kv-bits", label() + " with --position-rolling: a quantized key cannot be re-rotated exactly; "
                      "use 16 bits or stream positions");
}

void KvPrecision::validate_for(int head_dim) const {
  if (!quantized()) return;  // f16 has no groups
  if (head_dim % group != 0)
    fail("--kv-group", std::to_string(group) + " does not divide the model's head_dim " + std::to_string(head_dim) +
                           " (value groups run over channels)");
  if (head_dim % 8 != 0)
    fail("--kv-bits", "the model's head_dim " + std::to_string(head_dim) + " is not a multiple of 8, which packed codes need");
}

KvPrecision KvPrecision::shaped_for(int head_dim, int budget, int sinks) const {
  if (shape_given || !quantized()) return *this;
  int g = 0;
  for (int candidate : {32, 16, 8})
    if (head_dim % candidate == 0) {
      g = candidate;
      break;
    }
  if (g == 0) return *this;
  int r = 2 * g;
  while (budget > 0 && sinks + r + g > budget / 2 && g > 8) {
    g /= 2;
    r = g;
  }
  KvPrecision out = *this;
  out.group = g;
  out.residual = r;
  out.shape_given = true;
  return out;
}

KvPrecision parse_kv_bits(std::string_view text, const std::string& flag) {
  KvPrecision p;
  const size_t comma = text.find(',');
  if (comma != std::string_view::npos && text.find(',', comma + 1) != std::string_view::npos)
    fail(flag, "'" + std::string(text) + "' is a list: give one precision, K or K,V (keys, values); eval and h2o-bench "
                                         "compare several with --kv-sweep");
  p.key_bits = parse_bits(text.substr(0, comma), flag, text);
  p.value_bits = comma == std::string_view::npos ? p.key_bits : parse_bits(text.substr(comma + 1), flag, text);
  return p;
}

KvPrecision parse_kv_label(std::string_view label, const std::string& flag) {
  // Throws; the callers write `return bad()` so that no compiler sees a path off the end.
  const auto bad = [&]() -> KvPrecision {
    fail(flag, "'@" + std::string(label) + "': say the KV precision as 16bit, 8bit, 4bit, 2bit or k4v2");
  };
  if (label == "f16") return parse_kv_bits("16", flag);
  if (label.size() > 3 && label.substr(label.size() - 3) == "bit") {
    const std::string_view digits = label.substr(0, label.size() - 3);
    if (digits.find(',') != std::string_view::npos) return bad();
    try {
      return parse_kv_bits(digits, flag);
    } catch (const Error&) {
      return bad();
    }
  }
  if (label.size() >= 4 && label[0] == 'k') {
    const size_t v = label.find('v');
    if (v == std::string_view::npos) return bad();
    try {
      return parse_kv_bits(std::string(label.substr(1, v - 1)) + "," + std::string(label.substr(v + 1)), flag);
    } catch (const Error&) {
      return bad();
    }
  }
  return bad();
}

std::vector<KvPrecision> parse_kv_sweep(std::string_view list, const std::string& flag) {
  std::vector<KvPrecision> out;
  for (const std::string& item : split_list(std::string(list))) {
    if (item == "32") {  // the backend's own type: a row of each policy beside the quantized ones
      out.push_back(KvPrecision{});
      continue;
    }
    try {
      out.push_back(item.starts_with('k') ? parse_kv_label(item, flag) : parse_kv_bits(item, flag));
    } catch (const Error&) {  // in the list's own words (the pane form "@4bit" is not this flag's)
      fail(flag, "'" + item + "' is not a precision of the sweep: give 32 (the backend's own type), 16, 8, 4, 2 or "
                              "k<K>v<V> (k4v2), comma-separated");
    }
  }
  if (out.empty()) fail(flag, "no precision given in '" + std::string(list) + "'");
  return out;
}

std::vector<KvPrecision> kv_precisions(std::string_view bits, std::string_view sweep, const KvPrecision& shape) {
  if (!sweep.empty() && !bits.empty())
    fail("--kv-sweep", "give --kv-bits (one precision) or --kv-sweep (several), not both");
  std::vector<KvPrecision> out =
      !sweep.empty() ? parse_kv_sweep(sweep) : std::vector<KvPrecision>{bits.empty() ? KvPrecision{} : parse_kv_bits(bits)};
  for (KvPrecision& kv : out)
    if (!kv.native()) kv.group = shape.group, kv.residual = shape.residual, kv.shape_given = shape.shape_given;
  return out;
}

}  // namespace h2o
