#pragma once
// Test controls of the emulated device (device_emu.cpp): a memory size, so
// that an allocation can fail as cudaMalloc does on a full device.
#include <cstdint>

namespace h2o::gpu::emu {

// Bytes the emulated device holds; 0: unlimited (the default).
void set_memory_limit(int64_t bytes);
int64_t allocated_bytes();

}  // namespace h2o::gpu::emu
