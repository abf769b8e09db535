#pragma once
// The order in which the emulation runs a block's threads between barriers,
// and a grid's blocks. CUDA promises neither order, so a kernel whose result
// depends on one is wrong on the GPU even where the emulation's usual order
// (thread 0 first, block 0 first) happens to give the right answer — for
// example a missing barrier between one thread's load of a global row and
// another thread's store over it. Running the same tests reversed and
// shuffled makes such a dependence show as a wrong result.
//
// Chosen by SIMT_ORDER (read at the first launch): "forward" (the default),
// "reverse", or "shuffle:SEED" (a fresh seeded permutation at every turn
// through the block's threads, and of each grid's blocks); set_order() for tests.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simt {

struct Order {
  enum Kind { Forward, Reverse, Shuffle } kind = Forward;
  uint64_t seed = 0;  // Shuffle only
};

// Parses "forward", "reverse", "shuffle" or "shuffle:SEED"; nothing if malformed.
std::optional<Order> parse_order(const std::string& text);
std::string order_name(const Order& order);

// The order launches use now: SIMT_ORDER until set_order() is called.
Order current_order();
void set_order(const Order& order);

// Sets the order for a scope (a test) and restores the previous one.
class ScopedOrder {
 public:
  explicit ScopedOrder(const Order& order) : saved_(current_order()) { set_order(order); }
  ~ScopedOrder() { set_order(saved_); }
  ScopedOrder(const ScopedOrder&) = delete;
  ScopedOrder& operator=(const ScopedOrder&) = delete;

 private:
  Order saved_;
};

// `out` becomes 0 .. n-1 in `order`'s sequence. `salt` tells apart the turns
// (the block and the pass through its threads; the grid's size for the
// blocks), so that a shuffle differs from turn to turn but is the same for
// the same seed and turn in any run, whatever ran before.
void arrange(const Order& order, uint64_t salt, int n, std::vector<int>& out);

}  // namespace simt
