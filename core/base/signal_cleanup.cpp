#include "core/base/signal_cleanup.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>

namespace h2o {
namespace {

// A fixed table, so that the handler reads no memory that could be freed
// under it: a slot is claimed (1), filled, then published (2).
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being written, 2 registered
  bool folder = false;
  char path[4096] = {};
};
std::array<Slot, 64> g_slots;
std::atomic<bool> g_graceful{false};
std::atomic<int> g_signal{0};
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void remove_registered() {
  for (bool folders : {false, true})
    for (Slot& s : g_slots)
      if (s.state.load() == 2 && s.folder == folders) {
        if (folders) ::rmdir(s.path);
        else ::unlink(s.path);
      }
}

void on_signal(int sig) {
  int none = 0;
  if (g_graceful.load() && g_signal.compare_exchange_strong(none, sig)) return;
  remove_registered();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void install_signal_cleanup() {
  for (int sig : kSignals) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int other : kSignals) sigaddset(&sa.sa_mask, other);  // one handler at a time
    sigaction(sig, &sa, nullptr);
  }
  std::signal(SIGXFSZ, SIG_IGN);
}

void stop_at_step_boundaries(bool on) { g_graceful = on; }

int stop_signal() { return g_signal.load(); }

int register_temporary(const std::string& path, bool folder) {
  if (path.size() >= sizeof(Slot::path)) return -1;
  for (size_t i = 0; i < g_slots.size(); ++i) {
    int free = 0;
    if (!g_slots[i].state.compare_exchange_strong(free, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].folder = folder;
    g_slots[i].state = 2;
    return int(i);
  }
  return -1;
}

void unregister_temporary(int ticket) {
  if (ticket >= 0 && size_t(ticket) < g_slots.size()) g_slots[size_t(ticket)].state = 0;
}

}  // namespace h2o
