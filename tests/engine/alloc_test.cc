// No heap allocation in steady state: the global operator new is replaced to
// count calls, and 1,000,000 commands run after a warm-up with none.
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "codec/command.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "engine/workload.h"
#include "gtest/gtest.h"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<std::size_t> g_allocations{0};

void* Allocate(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void* AllocateAligned(std::size_t size, std::align_val_t align) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  const auto a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return Allocate(size); }
void* operator new[](std::size_t size) { return Allocate(size); }
void* operator new(std::size_t size, std::align_val_t a) {
  return AllocateAligned(size, a);
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return AllocateAligned(size, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace orderwire::engine {
namespace {

// Runs `warm_up` commands, then counts allocations over the next `counted`.
std::size_t AllocationsInSteadyState(workload::Workload which,
                                     std::size_t warm_up, std::size_t counted) {
  const std::vector<codec::Command> commands =
      workload::Generate(which, warm_up + counted, 1);
  auto engine = std::make_unique<Engine>(EngineConfig{});
  ReportBuffer reports;
  for (std::size_t i = 0; i < warm_up; ++i) {
    reports.Clear();
    (void)engine->Execute(commands[i], reports);
  }
  g_allocations = 0;
  g_counting = true;
  std::size_t executed = 0;
  for (std::size_t i = warm_up; i < commands.size(); ++i) {
    reports.Clear();
    executed += engine->Execute(commands[i], reports) == ExecuteStatus::kOk;
  }
  g_counting = false;
  EXPECT_EQ(executed, counted);
  return g_allocations.load();
}

TEST(Allocation, CountingWorks) {
  g_allocations = 0;
  g_counting = true;
  auto p = std::make_unique<int>(1);
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 1u);
}

TEST(Allocation, NoneOverAMillionMixedCommandsAfterWarmUp) {
  EXPECT_EQ(AllocationsInSteadyState(workload::Workload::kMixed, 1'000'000,
                                     1'000'000),
            0u);
}

// wl1 is not a steady state: its mid price wanders and orders left behind
// are never cancelled, so its book keeps gaining price levels (about 940
// after 1M commands, 1,300 after 2M). A side's level array doubles when it
// passes its largest size so far - log2(levels) times in a book's life - and
// nothing else allocates. Over the second million, that is at most one
// doubling per side.
TEST(Allocation, OnlyBookGrowthAllocatesOverAMillionWl1Commands) {
  EXPECT_LE(
      AllocationsInSteadyState(workload::Workload::kWl1, 1'000'000, 1'000'000),
      2u);
}

}  // namespace
}  // namespace orderwire::engine
