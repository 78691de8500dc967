// HugePageArray: 2 MiB-aligned, zeroed, advised for huge pages, movable.
#include "base/huge_page_array.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace orderwire::base {
namespace {

struct Record {
  std::uint64_t a;
  std::uint32_t b;
};

// The VmFlags line of the mapping that holds `address` (/proc/self/smaps),
// or "" if none does.
std::string VmFlagsOf(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool TransparentHugePagesEnabled() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(file, mode);
  return !mode.empty() && mode.find("[never]") == std::string::npos;
}

TEST(HugePageArrayTest, IsAlignedZeroedAndWritable) {
  HugePageArray<Record> array(200'000);
  ASSERT_NE(array.data(), nullptr);
  EXPECT_EQ(array.size(), 200'000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(array.data()) % kHugePageSize, 0u);
  EXPECT_EQ(array.mapped_bytes(), 2 * kHugePageSize);  // 3.2 MB rounded up
  for (std::size_t i = 0; i < array.size(); i += 997) {
    EXPECT_EQ(array[i].a, 0u);
    array[i] = Record{i, static_cast<std::uint32_t>(i)};
  }
  EXPECT_EQ(array[std::size_t{997} * 7].a, 997u * 7);
}

TEST(HugePageArrayTest, TheMemoryIsAdvisedForHugePages) {
  if (!TransparentHugePagesEnabled()) {
    GTEST_SKIP() << "transparent huge pages are disabled on this machine "
                    "(/sys/kernel/mm/transparent_hugepage/enabled: never)";
  }
  HugePageArray<Record> array(1'000'000);
  array[0].a = 1;
  // "hg": the mapping carries MADV_HUGEPAGE (whether the kernel found a
  // free huge page for it is its business, not this class's).
  const std::string flags = VmFlagsOf(array.data());
  ASSERT_FALSE(flags.empty());
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

// How many of the 4 KiB pages of [data, data + bytes) are resident
// (mincore): what Populate() promises, and what an access would not fault.
std::size_t ResidentPages(const void* data, std::size_t bytes) {
  std::vector<unsigned char> pages(bytes / 4096);
  if (::mincore(const_cast<void*>(data), bytes, pages.data()) != 0) return 0;
  std::size_t resident = 0;
  for (const unsigned char page : pages) resident += page & 1U;
  return resident;
}

TEST(HugePageArrayTest, PopulateBacksEveryPageAndKeepsTheContents) {
  HugePageArray<Record> array(400'000);  // 6.4 MB in 4 MiB-mapped pages
  const std::size_t pages = array.mapped_bytes() / 4096;
  array[5].a = 42;  // one page touched
  EXPECT_LT(ResidentPages(array.data(), array.mapped_bytes()), pages);
  array.Populate();
  EXPECT_EQ(ResidentPages(array.data(), array.mapped_bytes()), pages);
  EXPECT_EQ(array[5].a, 42u);
  EXPECT_EQ(array[399'999].a, 0u);
  HugePageArray<Record> empty(0);
  empty.Populate();  // nothing to do
  EXPECT_EQ(empty.data(), nullptr);
}

TEST(HugePageArrayTest, MovesAndUnmaps) {
  HugePageArray<Record> a(10);
  a[3].b = 7;
  const Record* where = a.data();
  HugePageArray<Record> b(std::move(a));
  EXPECT_EQ(b.data(), where);
  EXPECT_EQ(b[3].b, 7u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  b = HugePageArray<Record>(5);
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(b[3].b, 0u);
  EXPECT_TRUE(VmFlagsOf(where).empty()) << "the old array stayed mapped";
  HugePageArray<Record> empty(0);
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace orderwire::base
