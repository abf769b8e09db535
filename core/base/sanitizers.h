// H2O_ASAN is 1 in a build under AddressSanitizer, whichever compiler made it:
// GCC says so with __SANITIZE_ADDRESS__, clang only through
// __has_feature(address_sanitizer), and CI's sanitizer stage uses clang.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define H2O_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define H2O_ASAN 1
#endif
#endif
#ifndef H2O_ASAN
#define H2O_ASAN 0
#endif
