// libFuzzer entry point for run_tokenizer (fuzz_targets.h).
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  h2o::fuzz::run_tokenizer(data, size);
  return 0;
}
