// libFuzzer entry point for run_recording (fuzz_recording_target.h).
#include "fuzz_recording_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  h2o::fuzz::run_recording(data, size);
  return 0;
}
