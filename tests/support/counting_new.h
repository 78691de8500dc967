// Counting the heap allocations of a stretch of code, for the tests that
// prove a hot path allocates nothing.
//
// Linking orderwire::counting_new into a test binary replaces the global
// operator new and delete (every form) with ones that forward to malloc and
// free (so AddressSanitizer still checks every block) and count each new
// while counting is on. Only a binary of its own should link it: the
// replacement is global. Counting is process-wide, not per thread.
#ifndef ORDERWIRE_TESTS_SUPPORT_COUNTING_NEW_H_
#define ORDERWIRE_TESTS_SUPPORT_COUNTING_NEW_H_

#include <cstddef>

namespace orderwire::test_support {

// Sets the count to 0 and starts counting.
void StartCountingAllocations();
// Stops counting; returns the allocations since StartCountingAllocations().
std::size_t StopCountingAllocations();

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_COUNTING_NEW_H_
