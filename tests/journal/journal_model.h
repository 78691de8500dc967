// Writes a journal of FrameFor() records and checks one record by record:
// shared by the writer, recovery, crash, integrity and compact tests.
#ifndef ORDERWIRE_TESTS_JOURNAL_JOURNAL_MODEL_H_
#define ORDERWIRE_TESTS_JOURNAL_JOURNAL_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal::testing {

// Appends records [first, first + count) in Append() calls of `per_append`
// frames, each call under session SessionFor(i) and time TimeFor(i) of its
// first record i, waiting whenever the writer answers kFull.
inline void AppendRange(JournalWriter& writer, std::uint64_t first,
                        std::size_t count, std::size_t per_append) {
  std::uint64_t i = first;
  const std::uint64_t end = first + count;
  while (i < end) {
    const std::size_t n = std::min<std::size_t>(per_append, end - i);
    const std::vector<std::byte> frames = FramesFor(i, n);
    while (true) {
      const AppendStatus st = writer.Append(frames, SessionFor(i), TimeFor(i));
      if (st == AppendStatus::kOk) break;
      ASSERT_EQ(st, AppendStatus::kFull) << writer.status();
      ASSERT_TRUE(writer.Wait().ok()) << writer.status();
    }
    ASSERT_LE(writer.Poll(), writer.last_index());
    i += n;
  }
}

// `groups` one-record groups (AppendRange) under kSync in 64 KiB segments
// of format version 1 (what older code wrote; its fixed block layout lets
// tests cut and copy whole groups): 15 groups per segment, group k of a
// segment at offset 4096 * (k + 1). Closed cleanly, so its checkpoint says
// every index is durable.
inline void BuildFormat1Journal(const std::string& dir, int groups) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kSync,
                                     .segment_size = std::uint64_t{64} * 1024,
                                     .group_size = 8192,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendRange(**writer, 1, static_cast<std::size_t>(groups), 1);
  ASSERT_TRUE((*writer)->Close().ok());
}

// What reading a journal gave.
struct ReadBack {
  std::uint64_t records = 0;
  std::uint64_t last_index = 0;
  ReadResult end = ReadResult::kEnd;
  absl::Status status;
  std::vector<SegmentInfo> segments;
};

// Reads the journal in `dir`, checking that record k has index k and the
// frame, session and time the model gives (session and time of the first
// record of its Append call: `per_append` says how calls were cut, 0 for
// "any call start within 64 records").
inline ReadBack ReadAndCheck(const std::string& dir, std::size_t per_append) {
  ReadBack out;
  auto reader = JournalReader::Open(dir);
  if (!reader.ok()) {
    out.end = ReadResult::kError;
    out.status = reader.status();
    return out;
  }
  Record r;
  while (true) {
    out.end = (*reader)->Next(r);
    if (out.end != ReadResult::kRecord) break;
    ++out.records;
    EXPECT_EQ(r.index, out.records);
    const std::vector<std::byte> want = FrameFor(r.index);
    const auto got = r.frame.bytes();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
        << "frame of record " << r.index;
    const std::uint64_t start = r.receive_ns - TimeFor(0);
    if (per_append != 0) {
      EXPECT_EQ(start, (r.index - 1) / per_append * per_append + 1);
    } else {
      EXPECT_TRUE(start <= r.index && start + 64 > r.index) << r.index;
    }
    EXPECT_EQ(r.session_id, SessionFor(start));
    if (::testing::Test::HasFailure()) break;
  }
  out.last_index = (*reader)->last_index();
  out.status = (*reader)->status();
  out.segments = (*reader)->segments();
  return out;
}

}  // namespace orderwire::journal::testing

#endif  // ORDERWIRE_TESTS_JOURNAL_JOURNAL_MODEL_H_
