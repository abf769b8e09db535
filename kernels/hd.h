#pragma once
// H2O_HD marks small functions that the host planning code and the kernels
// share, so that both compute an index or a count the same way (defined in
// core/, which the GGUF block decoding shares with the kernels too).
#include "core/base/host_device.h"
