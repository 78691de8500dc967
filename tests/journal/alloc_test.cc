// The append path never touches the heap: once warm, 200,000 records
// appended in 31-frame calls, with Poll() after each and a Flush() at the
// end, perform no allocation, in every durability mode.
//
// This binary replaces the global operator new and delete (every form) and,
// except under AddressSanitizer, interposes malloc, calloc and realloc,
// counting calls while a counter is armed, so that allocations by C code
// (liburing, libc) count too. It is a
// separate binary so that the replacement does not reach the other tests.
// Preparing and rotating segments (once per segment) is outside the armed
// window: the segment is large enough not to fill.
#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include "gtest/gtest.h"
#include "journal/internal/io_queue.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"
#include "tests/support/sanitizers.h"

#if ORDERWIRE_TEST_UNDER_ASAN
#define ORDERWIRE_INTERPOSE_MALLOC 0  // AddressSanitizer owns malloc
#else
#define ORDERWIRE_INTERPOSE_MALLOC 1
#endif

#if ORDERWIRE_INTERPOSE_MALLOC
extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);
#endif

namespace {

std::atomic<bool> g_armed{false};
std::atomic<std::size_t> g_allocations{0};

// Frees what the operators below allocated, out of line (GCC's
// -Wmismatched-new-delete cannot see that new here is malloc).
[[gnu::noinline]] void Release(void* p) noexcept { std::free(p); }

void Count() noexcept {
  if (g_armed.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

#if ORDERWIRE_INTERPOSE_MALLOC
extern "C" void* malloc(std::size_t size) {
  Count();
  return __libc_malloc(size);
}
extern "C" void* calloc(std::size_t n, std::size_t size) {
  Count();
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, std::size_t size) {
  Count();
  return __libc_realloc(p, size);
}
#endif

// operator new and delete forward to malloc and free (so that they stay
// correct under AddressSanitizer, whose malloc still checks every block).
void* operator new(std::size_t size) {
  Count();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  Count();
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void* operator new(std::size_t size, std::align_val_t align) {
  Count();
  void* p = nullptr;
  if (posix_memalign(&p,
                     std::max(sizeof(void*), static_cast<std::size_t>(align)),
                     size == 0 ? 1 : size) != 0) {
    throw std::bad_alloc();
  }
  return p;
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return operator new(size, align);
}
void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, std::size_t) noexcept { Release(p); }
void operator delete[](void* p, std::size_t) noexcept { Release(p); }
void operator delete(void* p, std::align_val_t) noexcept { Release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  Release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  Release(p);
}

namespace orderwire::journal {
namespace {

TEST(AllocCounterTest, CountsNewAndMalloc) {
  g_allocations = 0;
  g_armed = true;
  auto* vector = new std::vector<int>(100);
  void* block = std::malloc(64);
  g_armed = false;
  EXPECT_GE(g_allocations.load(), ORDERWIRE_INTERPOSE_MALLOC ? 3u : 1u);
  std::free(block);
  delete vector;
}

class AllocTest : public ::testing::TestWithParam<Durability> {};

TEST_P(AllocTest, AppendPollAndFlushAllocateNothingOnceWarm) {
  if (absl::Status s = internal::ProbeIoUring(); !s.ok()) {
    GTEST_SKIP() << s.message();
  }
  test_support::ScratchDir dir;
  auto writer = JournalWriter::Open({.directory = dir.path(),
                                     .durability = GetParam(),
                                     .segment_size = std::uint64_t{256} << 20,
                                     .prezero = false});
  ASSERT_TRUE(writer.ok()) << writer.status();
  JournalWriter& w = **writer;
  const std::size_t per_append = 31;
  const std::size_t total = GetParam() == Durability::kSync ? 3100 : 200'000;
  // Frames prepared outside the armed window.
  std::vector<std::vector<std::byte>> batches;
  for (std::size_t i = 0; i < 64; ++i) {
    batches.push_back(testing::FramesFor(i * per_append + 1, per_append));
  }
  auto run = [&](std::size_t records) {
    for (std::size_t done = 0, b = 0; done < records;
         done += per_append, b = (b + 1) % batches.size()) {
      AppendStatus st;
      while ((st = w.Append(batches[b], 7, done)) == AppendStatus::kFull) {
        (void)w.Wait();
      }
      ASSERT_EQ(st, AppendStatus::kOk);
      w.Poll();
    }
    ASSERT_TRUE(w.Flush().ok());
  };
  run(total / 10);  // warm up
  g_allocations = 0;
  g_armed = true;
  run(total);
  g_armed = false;
  EXPECT_EQ(g_allocations.load(), 0u);
  EXPECT_EQ(w.durable_index(), w.last_index());
  EXPECT_EQ(w.stats().rotations, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, AllocTest,
    ::testing::Values(Durability::kNone, Durability::kBatch, Durability::kSync),
    [](const auto& p) { return std::string(Name(p.param)); });

}  // namespace
}  // namespace orderwire::journal
