#pragma once
// Test controls of the emulated device (device_emu.cpp): a memory size, so
// that an allocation can fail as cudaMalloc does on a full device.
#include <cstdint>

namespace H2O_GPU_NS::emu {

// Bytes the emulated device holds; 0: unlimited (the default).
void set_memory_limit(int64_t bytes);
int64_t allocated_bytes();

}  // namespace H2O_GPU_NS::emu
