// Helpers for the journal tests: deterministic command frames whose content
// follows from their journal index, file surgery, small journals built the
// same way by several suites, and SKIP_WITHOUT_URING. Scratch directories and
// whole-file reads and writes are the shared ones (tests/support/).
#ifndef ORDERWIRE_TESTS_JOURNAL_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_JOURNAL_TEST_SUPPORT_H_

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/internal/io_queue.h"
#include "journal/writer.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"

// Skips the test when io_uring is not available (a kernel or a sandbox
// without it: the writer cannot run), saying why.
#define SKIP_WITHOUT_URING()                                \
  do {                                                      \
    if (absl::Status uring_status =                         \
            ::orderwire::journal::internal::ProbeIoUring(); \
        !uring_status.ok()) {                               \
      GTEST_SKIP() << uring_status.message();               \
    }                                                       \
  } while (0)

namespace orderwire::journal::testing {

// Whether the file system of `dir` accepts O_DIRECT (tmpfs does not; the
// writer then uses its fdatasync method, and tests of the O_DIRECT method
// skip).
inline bool DirectIoSupported(const std::string& dir) {
  const std::string probe = dir + "/.odirect-probe";
  const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

// Opens a writer on the journal in `dir`, then a second one, which is
// refused while the first holds the journal: the refusal's message in
// `message`.
inline void OpenASecondWriter(const std::string& dir, std::string* message) {
  auto first = JournalWriter::Open({.directory = dir});
  ASSERT_TRUE(first.ok());
  auto second = JournalWriter::Open({.directory = dir});
  ASSERT_FALSE(second.ok());
  *message = std::string(second.status().message());
}

// The command frame journaled at `index` in these tests: the five command
// kinds in turn, every field derived from the index, sequence = index.
inline std::vector<std::byte> FrameFor(std::uint64_t index) {
  std::vector<std::byte> out(codec::kMaxFrameSize);
  const std::span<std::byte> buffer(out);
  std::size_t size = 0;
  switch (index % 5) {
    case 0:
      size = *codec::EncodeFrame(
          index,
          codec::NewLimit{
              .account_id = index % 64 + 1,
              .client_order_id = index,
              .instrument_id = static_cast<std::uint32_t>(index % 8 + 1),
              .side = index % 2 ? codec::Side::kBuy : codec::Side::kSell,
              .time_in_force = codec::TimeInForce::kGoodTillCancel,
              .price = static_cast<std::int64_t>(100000 + index % 50),
              .quantity = index % 100 + 1},
          buffer);
      break;
    case 1:
      size = *codec::EncodeFrame(index,
                                 codec::NewMarket{.account_id = index % 64 + 1,
                                                  .client_order_id = index,
                                                  .instrument_id = 3,
                                                  .side = codec::Side::kSell,
                                                  .quantity = index % 7 + 1},
                                 buffer);
      break;
    case 2:
      size = *codec::EncodeFrame(
          index, codec::CancelByOrder{.account_id = 9, .order_id = index / 2},
          buffer);
      break;
    case 3:
      size = *codec::EncodeFrame(
          index,
          codec::CancelByClient{.account_id = 11, .client_order_id = index - 3},
          buffer);
      break;
    default:
      size = *codec::EncodeFrame(index,
                                 codec::Replace{.account_id = 5,
                                                .order_id = index / 3,
                                                .new_client_order_id = index,
                                                .price = 99990,
                                                .quantity = 17},
                                 buffer);
      break;
  }
  out.resize(size);
  return out;
}

// The frames for indexes [first, first + count), back to back.
inline std::vector<std::byte> FramesFor(std::uint64_t first,
                                        std::size_t count) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::vector<std::byte> frame = FrameFor(first + i);
    out.insert(out.end(), frame.begin(), frame.end());
  }
  return out;
}

// The session and receive time the tests journal with index i.
inline std::uint32_t SessionFor(std::uint64_t i) {
  return static_cast<std::uint32_t>(i % 7 + 100);
}
inline std::uint64_t TimeFor(std::uint64_t i) {
  return 1'700'000'000'000'000'000ull + i;
}

// XORs one byte of a file in place.
inline void FlipBits(const std::string& path, std::uint64_t offset,
                     std::byte mask) {
  const int fd = ::open(path.c_str(), O_RDWR);
  std::byte b{};
  (void)::pread(fd, &b, 1, static_cast<off_t>(offset));
  b ^= mask;
  (void)::pwrite(fd, &b, 1, static_cast<off_t>(offset));
  ::close(fd);
}

inline void Truncate(const std::string& path, std::uint64_t size) {
  std::filesystem::resize_file(path, size);
}

// The segment files of a journal directory, in order.
inline std::vector<std::string> SegmentPaths(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (ParseSegmentFileName(entry.path().filename().string()).has_value()) {
      paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The seed of a randomized test: $ORDERWIRE_TEST_SEED when set (to rerun a
// failure), else the clock. Printed, with the way to rerun it, so that a
// failure can be reproduced; also attach it to failures with SCOPED_TRACE.
inline std::uint64_t TestSeed() {
  std::uint64_t seed = 0;
  if (const char* env = std::getenv("ORDERWIRE_TEST_SEED");
      env != nullptr && *env != '\0') {
    seed = std::strtoull(env, nullptr, 0);
  } else {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    seed = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
  }
  std::printf("seed %llu (rerun with ORDERWIRE_TEST_SEED=%llu)\n",
              static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

// Appends the records [first, last] (FramesFor, session 1, receive time the
// index), one flushed group each, through a writer without durability in
// format-1 segments of 64 KiB (15 groups a segment), and closes it cleanly:
// its DURABLE file and checkpoint then say `last`.
inline void AppendFlushedRecords(const std::string& dir, std::uint64_t first,
                                 std::uint64_t last) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kNone,
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (std::uint64_t i = first; i <= last; ++i) {
    ASSERT_EQ((*writer)->Append(FramesFor(i, 1), 1, i), AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

// Rewrites completions by a rule given as a function (tests only).
class FaultRule : public internal::IoFaults {
 public:
  using Fn = std::function<std::int32_t(const internal::IoOp&, std::int32_t)>;
  explicit FaultRule(Fn fn) : fn_(std::move(fn)) {}
  std::int32_t Rewrite(const internal::IoOp& op, std::int32_t result) override {
    return fn_(op, result);
  }

 private:
  Fn fn_;
};

// A group of a segment file as walked by its version's framing (the
// checksum is not checked: tests look at the layout).
struct GroupAt {
  std::uint64_t offset = 0;
  std::uint64_t end = 0;  // after the trailer
  GroupHeader header{};
  GroupFormat format{};
};

// The version in the header of the segment file `bytes`.
inline std::uint16_t SegmentVersion(const std::vector<std::byte>& bytes) {
  return LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes.data()).version;
}

// The groups of the segment file `bytes`, from its first group offset to
// the first place without its version's group magic.
inline std::vector<GroupAt> WalkGroups(const std::vector<std::byte>& bytes) {
  const GroupFormat format = GroupFormatOf(SegmentVersion(bytes));
  std::vector<GroupAt> out;
  for (std::uint64_t off = kFirstGroupOffset;
       off + format.header_size <= bytes.size();) {
    const GroupHeader h = DecodeGroupHeader(format, &bytes[off]);
    if (h.magic != format.magic) break;
    const std::uint64_t end =
        off + format.header_size + h.records_bytes + kGroupTrailerSize;
    out.push_back({off, end, h, format});
    off = AlignUpTo(end, format.alignment);
  }
  return out;
}

}  // namespace orderwire::journal::testing

#endif  // ORDERWIRE_TESTS_JOURNAL_TEST_SUPPORT_H_
