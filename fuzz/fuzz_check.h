// FUZZ_CHECK: the invariant check of the fuzz targets. A failed check prints
// what failed and aborts, which libFuzzer reports as a crash and saves the
// input. Unlike assert() it is never compiled out.
#ifndef ORDERWIRE_FUZZ_FUZZ_CHECK_H_
#define ORDERWIRE_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                          \
  do {                                                                 \
    if (!(condition)) {                                                \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, \
                   __LINE__, #condition);                              \
      std::abort();                                                    \
    }                                                                  \
  } while (false)

#endif  // ORDERWIRE_FUZZ_FUZZ_CHECK_H_
