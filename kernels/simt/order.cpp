// SIMT_ORDER and the permutations it asks for (order.h).
#include "kernels/simt/order.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <utility>

namespace simt {
namespace {

std::mutex g_mutex;
bool g_set = false;  // false: SIMT_ORDER not read yet and set_order() not called
Order g_order;

// splitmix64: a well-mixed 64-bit sequence from any seed, the same everywhere
// (std::shuffle's result depends on the standard library).
uint64_t mix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::optional<Order> parse_order(const std::string& text) {
  Order o;
  if (text == "forward") return o;
  if (text == "reverse") {
    o.kind = Order::Reverse;
    return o;
  }
  if (text == "shuffle") {
    o.kind = Order::Shuffle;
    return o;
  }
  if (text.rfind("shuffle:", 0) == 0 && text.size() > 8) {
    char* end = nullptr;
    o.kind = Order::Shuffle;
    o.seed = std::strtoull(text.c_str() + 8, &end, 10);
    if (*end == '\0') return o;
  }
  return std::nullopt;
}

std::string order_name(const Order& order) {
  switch (order.kind) {
    case Order::Forward:
      return "forward";
    case Order::Reverse:
      return "reverse";
    case Order::Shuffle:
      return "shuffle:" + std::to_string(order.seed);
  }
  return "?";
}

Order current_order() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_set) {
    g_set = true;
    const char* env = std::getenv("SIMT_ORDER");
    if (env && *env) {
      const std::optional<Order> parsed = parse_order(env);
      if (!parsed) {
        // A typo must not quietly run the default order in a CI job meant to vary it.
        std::fprintf(stderr, "simt: SIMT_ORDER=%s: expected forward, reverse or shuffle:SEED\n", env);
        std::abort();
      }
      g_order = *parsed;
    }
  }
  return g_order;
}

void set_order(const Order& order) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_set = true;
  g_order = order;
}

void arrange(const Order& order, uint64_t salt, int n, std::vector<int>& out) {
  out.resize(size_t(n));
  std::iota(out.begin(), out.end(), 0);
  if (order.kind == Order::Reverse) {
    std::reverse(out.begin(), out.end());
  } else if (order.kind == Order::Shuffle) {
    uint64_t state = order.seed * 0x9e3779b97f4a7c15ull ^ salt;
    for (int i = n - 1; i > 0; --i) std::swap(out[size_t(i)], out[size_t(mix(state) % uint64_t(i + 1))]);
  }
}

}  // namespace simt
