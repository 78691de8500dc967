// ORDERWIRE_TEST_UNDER_ASAN: 1 when this translation unit is built with
// AddressSanitizer, by g++ (__SANITIZE_ADDRESS__) or clang
// (__has_feature(address_sanitizer)), else 0. Tests whose measurement
// AddressSanitizer owns (malloc interposition, RSS) read it.
#ifndef ORDERWIRE_TESTS_SUPPORT_SANITIZERS_H_
#define ORDERWIRE_TESTS_SUPPORT_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define ORDERWIRE_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ORDERWIRE_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef ORDERWIRE_TEST_UNDER_ASAN
#define ORDERWIRE_TEST_UNDER_ASAN 0
#endif

#endif  // ORDERWIRE_TESTS_SUPPORT_SANITIZERS_H_
