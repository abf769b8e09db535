// The SIMT emulation's scheduler (simt.h): a block's threads are fibers on
// the launching thread, switched only at barriers.
//
// Why fibers and not one OS thread per CUDA thread: on the 2-core CI machine
// an OS-thread barrier of 32 threads costs ~0.3 ms (every thread must be
// woken and scheduled), a fiber switch ~0.1 µs, and a decode step passes
// thousands of barriers. Fibers also make the emulation deterministic (the
// same interleaving every run) and let a stuck barrier be reported instead of
// hanging. The switch is a few lines of x86-64 assembly (callee-saved
// registers, MXCSR and the x87 control word); elsewhere it falls back to
// ucontext. Under AddressSanitizer every switch is announced with
// __sanitizer_start/finish_switch_fiber, so its stack checks stay valid.
//
// For the race check (race_check.h) the scheduler numbers the barrier
// intervals: a block's interval changes when it starts and whenever its
// __syncthreads() releases, a warp's step whenever its warp barrier releases.
#include "kernels/simt/simt.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/sanitizers.h"

#if H2O_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__)
#define SIMT_ASM_SWITCH 1
// simt_switch(save, load): saves the callee-saved state on this stack, stores
// the stack pointer in *save, and resumes the stack whose pointer is `load`.
asm(R"(
  .pushsection .text
  .globl simt_switch
  .type simt_switch, @function
simt_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size simt_switch, .-simt_switch
  .popsection
)");
extern "C" void simt_switch(void** save, void* load);
#else
#include <ucontext.h>
#endif

namespace simt {
namespace {

constexpr size_t kStackBytes = 256 * 1024;  // kernels keep small frames; ASan's redzones need room
constexpr int kWarp = 32;

enum class State { Runnable, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
  char* stack = nullptr;  // lowest address (a guard page below it)
  State state = State::Done;
  dim3 idx;
  int index = 0, warp = 0, lane = 0;  // index: linear, in the block
  unsigned shuffles = 0;  // in this block: picks the exchange slot (warp_exchange)
#ifdef SIMT_ASM_SWITCH
  void* sp = nullptr;
#else
  ucontext_t context;
#endif
  void* asan_fake_stack = nullptr;
};

// One block being run, and the fibers that run its threads (kept between blocks).
struct Block {
  // Fibers keep their address for life: a parked fiber holds a reference to its own.
  std::vector<std::unique_ptr<Fiber>> fibers;
  const std::function<void()>* kernel = nullptr;
  const char* kernel_name = nullptr;
  uint64_t launch = 0;  // the launch's serial number
  Order order;
  dim3 grid, dim, idx;
  int threads = 0, live = 0, at_block_barrier = 0;
  std::vector<int> warp_live, warp_at_barrier;
  uint64_t interval = 0, block_begin = 0;  // the block's barrier interval now, and its first
  std::vector<uint32_t> warp_step;         // per warp: warp barriers passed in this block
  std::vector<int> turns;                  // the order of one turn through the threads
  std::vector<uint64_t> exchange;  // two slots per thread, used by turns
  Fiber* current = nullptr;
#ifdef SIMT_ASM_SWITCH
  void* scheduler_sp = nullptr;
#else
  ucontext_t scheduler_context;
#endif
  const void* scheduler_stack_bottom = nullptr;
  size_t scheduler_stack_size = 0;
  void* scheduler_fake_stack = nullptr;
};

thread_local Block* g_block = nullptr;
std::mutex g_launch_mutex;  // one grid at a time, whichever thread launches: static shared memory
// Under g_launch_mutex: intervals are unique in the process, so a shadow cell
// stamped in an earlier block (or launch) is never taken for this one.
uint64_t g_intervals = 0, g_launches = 0;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "simt: %s\n", what);
  std::abort();
}

Block& block() {
  if (!g_block) die("a CUDA built-in or barrier was used outside a kernel");
  return *g_block;
}

char* new_stack() {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) die("out of memory for a fiber stack");
  ::mprotect(p, page, PROT_NONE);  // a stack overflow faults instead of corrupting a neighbour
  return static_cast<char*>(p) + page;
}

// ---- switching, with the sanitizer told about every change of stack ----

void switch_to_fiber(Block& b, Fiber& f) {
#if H2O_ASAN
  __sanitizer_start_switch_fiber(&b.scheduler_fake_stack, f.stack, kStackBytes);
#endif
#ifdef SIMT_ASM_SWITCH
  simt_switch(&b.scheduler_sp, f.sp);
#else
  swapcontext(&b.scheduler_context, &f.context);
#endif
#if H2O_ASAN
  __sanitizer_finish_switch_fiber(b.scheduler_fake_stack, nullptr, nullptr);
#endif
}

// From the running fiber back to the scheduler; returns when the fiber is resumed.
void yield_to_scheduler(Block& b, Fiber& f) {
#if H2O_ASAN
  __sanitizer_start_switch_fiber(&f.asan_fake_stack, b.scheduler_stack_bottom, b.scheduler_stack_size);
#endif
#ifdef SIMT_ASM_SWITCH
  simt_switch(&f.sp, b.scheduler_sp);
#else
  swapcontext(&f.context, &b.scheduler_context);
#endif
#if H2O_ASAN
  __sanitizer_finish_switch_fiber(f.asan_fake_stack, nullptr, nullptr);
#endif
}

void release_block_barrier(Block& b) {
  if (b.at_block_barrier == 0 || b.at_block_barrier < b.live) return;
  for (int i = 0; i < b.threads; ++i)
    if (b.fibers[size_t(i)]->state == State::AtBlockBarrier) b.fibers[size_t(i)]->state = State::Runnable;
  b.at_block_barrier = 0;
  detail::g_now.interval = b.interval = ++g_intervals;
}

void release_warp_barrier(Block& b, int warp) {
  int& at = b.warp_at_barrier[size_t(warp)];
  if (at == 0 || at < b.warp_live[size_t(warp)]) return;
  const size_t first = size_t(warp) * kWarp, last = std::min(first + kWarp, size_t(b.threads));
  for (size_t i = first; i < last; ++i)
    if (b.fibers[i]->state == State::AtWarpBarrier) b.fibers[i]->state = State::Runnable;
  at = 0;
  // Released by one of its lanes (the last to arrive, or one exiting): the running thread.
  detail::g_now.warp_step = ++b.warp_step[size_t(warp)];
}

extern "C" void simt_fiber_main() {
  Block* b = g_block;
#if H2O_ASAN
  // The first arrival on this stack: learn the scheduler's stack for the way back.
  __sanitizer_finish_switch_fiber(nullptr, &b->scheduler_stack_bottom, &b->scheduler_stack_size);
#endif
  // A fiber runs one thread of a block, then waits to run a thread of the
  // next block: it is made once, so its stack (and, under ASan, its fake
  // stack) is set up once per fiber, not once per thread of every block.
  for (;;) {
    (*b->kernel)();
    Fiber& f = *b->current;
    f.state = State::Done;
    --b->live;
    --b->warp_live[size_t(f.warp)];
    // An exited thread no longer holds a barrier up (as on Volta and later).
    release_block_barrier(*b);
    release_warp_barrier(*b, f.warp);
    yield_to_scheduler(*b, f);
    b = g_block;
  }
}

// Makes fiber `f` ready to run a thread: its first start enters
// simt_fiber_main; later starts resume it where it finished its last thread.
void start_fiber(Fiber& f) {
  f.state = State::Runnable;
  f.shuffles = 0;
  if (f.stack) return;
  f.stack = new_stack();
#ifdef SIMT_ASM_SWITCH
  // The frame simt_switch pops: MXCSR/x87 word, six registers, then the
  // return address, placed so that simt_fiber_main starts with the stack
  // aligned as after a call.
  auto* top = reinterpret_cast<uint64_t*>(f.stack + kStackBytes);
  uint64_t* sp = top - 2;  // 16-byte aligned: the return address sits here
  sp[1] = 0;               // a null "caller" for debuggers and unwinders
  sp[0] = reinterpret_cast<uint64_t>(&simt_fiber_main);
  sp -= 6;
  for (int i = 0; i < 6; ++i) sp[i] = 0;  // r15 r14 r13 r12 rbx rbp
  sp -= 1;
  uint32_t control[2];
  asm volatile("stmxcsr %0" : "=m"(control[0]));
  asm volatile("fnstcw %0" : "=m"(control[1]));
  std::memcpy(sp, control, sizeof control);
  f.sp = sp;
#else
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = f.stack;
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, reinterpret_cast<void (*)()>(&simt_fiber_main), 0);
#endif
}

void run_block(Block& b) {
  for (int i = 0; i < b.threads; ++i) start_fiber(*b.fibers[size_t(i)]);
  b.live = b.threads;
  b.at_block_barrier = 0;
  const int warps = (b.threads + kWarp - 1) / kWarp;
  b.warp_live.assign(size_t(warps), 0);
  b.warp_at_barrier.assign(size_t(warps), 0);
  b.warp_step.assign(size_t(warps), 0);
  b.interval = b.block_begin = ++g_intervals;
  detail::g_now.interval = detail::g_now.block_begin = b.interval;
  // A shuffle's turns depend on the block and the turn only, not on what ran
  // before: a test that fails under a seed fails the same way when run alone.
  const uint64_t block_salt = (uint64_t(b.idx.z) << 42 ^ uint64_t(b.idx.y) << 21 ^ b.idx.x) << 16;
  for (int i = 0; i < b.threads; ++i) ++b.warp_live[size_t(i / kWarp)];
  for (uint64_t pass = 0; b.live > 0; ++pass) {
    bool ran = false;
    arrange(b.order, block_salt ^ pass, b.threads, b.turns);
    for (const int i : b.turns) {
      Fiber& f = *b.fibers[size_t(i)];
      if (f.state != State::Runnable) continue;
      b.current = &f;
      detail::g_now.thread = f.index;
      detail::g_now.warp = f.warp;
      detail::g_now.warp_step = b.warp_step[size_t(f.warp)];
      switch_to_fiber(b, f);
      ran = true;
    }
    if (!ran) {
      int at_block = 0, at_warp = 0;
      for (int i = 0; i < b.threads; ++i) {
        const State st = b.fibers[size_t(i)]->state;
        at_block += st == State::AtBlockBarrier;
        at_warp += st == State::AtWarpBarrier;
      }
      std::fprintf(stderr,
                   "simt: block (%u,%u,%u) of a grid (%u,%u,%u) x (%u,%u,%u) is stuck: %d threads at __syncthreads, "
                   "%d at a warp barrier, %d finished (a barrier in divergent code?)\n",
                   b.idx.x, b.idx.y, b.idx.z, b.grid.x, b.grid.y, b.grid.z, b.dim.x, b.dim.y, b.dim.z, at_block,
                   at_warp, b.threads - b.live);
      std::abort();
    }
  }
  b.current = nullptr;
}

// The grid's blocks in the launch's order: block k of the turn is block
// index(k) in CUDA's numbering (x fastest).
void run_blocks(Block& b) {
  const uint64_t count = uint64_t(b.grid.x) * b.grid.y * b.grid.z;
  std::vector<int> shuffled;
  if (b.order.kind == Order::Shuffle) {
    if (count > uint64_t(INT32_MAX)) die("a grid too large to shuffle");
    arrange(b.order, count, int(count), shuffled);
  }
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t i = b.order.kind == Order::Forward ? k
                       : b.order.kind == Order::Reverse ? count - 1 - k
                                                        : uint64_t(shuffled[size_t(k)]);
    b.idx = dim3(unsigned(i % b.grid.x), unsigned(i / b.grid.x % b.grid.y), unsigned(i / (uint64_t(b.grid.x) * b.grid.y)));
    run_block(b);
  }
}

}  // namespace

namespace detail {

LaunchInfo current_launch() {
  const Block& b = block();
  return LaunchInfo{b.kernel_name, b.launch, {b.idx.x, b.idx.y, b.idx.z}};
}

}  // namespace detail

const dim3& thread_idx() { return block().current->idx; }
const dim3& block_idx() { return block().idx; }
const dim3& block_dim() { return block().dim; }
const dim3& grid_dim() { return block().grid; }
int lane_id() { return block().current->lane; }

void syncthreads() {
  Block& b = block();
  Fiber& f = *b.current;
  ++b.at_block_barrier;
  f.state = State::AtBlockBarrier;
  release_block_barrier(b);
  if (f.state == State::Runnable) return;  // the last to arrive goes on
  yield_to_scheduler(b, f);
}

void syncwarp() {
  Block& b = block();
  Fiber& f = *b.current;
  ++b.warp_at_barrier[size_t(f.warp)];
  f.state = State::AtWarpBarrier;
  release_warp_barrier(b, f.warp);
  if (f.state == State::Runnable) return;
  yield_to_scheduler(b, f);
}

uint64_t warp_exchange(uint64_t mine, int src_lane) {
  Block& b = block();
  Fiber& self = *b.current;
  const size_t base = size_t(self.warp) * kWarp;
  if (src_lane < 0 || src_lane >= kWarp || base + size_t(src_lane) >= size_t(b.threads))
    die("a shuffle read a lane outside the warp");
  // Slots by turns, so one barrier per shuffle suffices: a lane offers into
  // this slot again two shuffles later, past the next shuffle's barrier,
  // which no lane passes before every lane has read this one.
  const size_t turn = size_t(self.shuffles++ & 1u) * size_t(b.threads);
  b.exchange[turn + base + size_t(self.lane)] = mine;
  syncwarp();  // every lane has offered
  return b.exchange[turn + base + size_t(src_lane)];
}

void run_grid(dim3 grid, dim3 block_dim_, const char* name, const std::function<void()>& kernel) {
  const int threads = int(block_dim_.x * block_dim_.y * block_dim_.z);
  if (threads <= 0 || threads > 1024) die("a block must have 1 to 1024 threads");
  if (threads % kWarp != 0) die("this emulation wants whole warps (a multiple of 32 threads per block)");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) die("invalid grid");
  std::lock_guard<std::mutex> lock(g_launch_mutex);
  thread_local Block b;  // fibers and stacks are reused by every launch of this thread
  if (g_block) die("a kernel launched another kernel");
  b.kernel = &kernel;
  b.kernel_name = name;
  b.launch = ++g_launches;
  b.order = current_order();
  b.grid = grid;
  b.dim = block_dim_;
  b.threads = threads;
  while (b.fibers.size() < size_t(threads)) b.fibers.push_back(std::make_unique<Fiber>());
  b.exchange.assign(2 * size_t(threads), 0);
  for (int i = 0; i < threads; ++i) {
    Fiber& f = *b.fibers[size_t(i)];
    f.idx = dim3(unsigned(i) % block_dim_.x, (unsigned(i) / block_dim_.x) % block_dim_.y,
                 unsigned(i) / (block_dim_.x * block_dim_.y));
    f.index = i;
    f.warp = i / kWarp;
    f.lane = i % kWarp;
  }
  g_block = &b;
  run_blocks(b);
  g_block = nullptr;
}

}  // namespace simt
