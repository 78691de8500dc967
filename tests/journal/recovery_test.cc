// Damage and recovery: torn tails of every length, a bit flipped at every
// byte, damaged and foreign segment headers, writes that were in flight at a
// crash, and corruption followed by durable data.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "journal/prune.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "tests/journal/journal_model.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using ::orderwire::journal::testing::AppendRange;
using ::orderwire::journal::testing::FlipBits;
using ::orderwire::journal::testing::FrameFor;
using ::orderwire::journal::testing::ReadAndCheck;
using ::orderwire::journal::testing::SegmentPaths;
using ::orderwire::test_support::ReadFile;
using ::orderwire::test_support::ScratchDir;
using ::orderwire::test_support::WriteFile;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A journal of `groups` groups of `per_group` records in one 64 KiB segment
// of format version 1 (what older code wrote; the damage rules are tested
// on its fixed layout here, and on version 2 in compact_test.cc): written
// under kSync, so each Append() is a group of its own, each group takes one
// 4096-byte block (group k at offset 4096 * (k + 1)), and each group's
// stable_index is the last index of the group before it.
void BuildJournal(const std::string& dir, int groups, int per_group,
                  std::uint64_t segment_size = std::uint64_t{64} * 1024) {
  auto writer = JournalWriter::Open({.directory = dir,
                                     .durability = Durability::kSync,
                                     .segment_size = segment_size,
                                     .group_size = 8192,
                                     .format_version = 1});
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendRange(
      **writer, 1,
      static_cast<std::size_t>(groups) * static_cast<std::size_t>(per_group),
      static_cast<std::size_t>(per_group));
  ASSERT_TRUE((*writer)->Close().ok());
}

// Reads `dir`; returns the records read and the final result and status.
struct Recovered {
  std::uint64_t records = 0;
  ReadResult result = ReadResult::kEnd;
  absl::Status status;
};
Recovered ReadRecovered(const std::string& dir) {
  Recovered out;
  auto reader = JournalReader::Open(dir);
  if (!reader.ok()) {
    out.result = ReadResult::kError;
    out.status = reader.status();
    return out;
  }
  Record r;
  while ((out.result = (*reader)->Next(r)) == ReadResult::kRecord) {
    ++out.records;
    const std::vector<std::byte> want = FrameFor(r.index);
    const auto got = r.frame.bytes();
    // A record handed out is always the original one.
    EXPECT_EQ(r.index, out.records);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
        << "record " << r.index;
  }
  out.status = (*reader)->status();
  return out;
}

// Copies the directory's segment files into a fresh directory.
void CopyJournal(const std::string& from, const std::string& to) {
  for (const std::string& path : SegmentPaths(from)) {
    std::filesystem::copy_file(
        path, to + "/" + std::filesystem::path(path).filename().string());
  }
}

// Sets a group's stable_index and recomputes its checksum, as if the writer
// had sealed it while the groups before it were still in flight.
void RewriteStable(const std::string& path, std::uint64_t offset,
                   std::uint64_t stable) {
  std::vector<std::byte> bytes = ReadFile(path);
  GroupHeader h = LoadStruct<kGroupHeaderLayout, GroupHeader>(&bytes[offset]);
  h.stable_index = stable;
  StoreStruct<kGroupHeaderLayout>(h, &bytes[offset]);
  const std::size_t covered = kGroupHeaderSize + h.records_bytes;
  const std::uint32_t crc = Crc32c({&bytes[offset], covered});
  codec::StoreLE(&bytes[offset + covered], crc);
  WriteFile(path, bytes);
}

// What a crash leaves: the checkpoint lags the groups that became durable
// last (the writer publishes it at a bounded rate). Removing it makes the
// remains below judged on what the segments say alone.
void ForgetCheckpoint(const std::string& dir) {
  ASSERT_TRUE(
      std::filesystem::remove(dir + "/" + std::string(kCheckpointFileName)));
}

void ZeroRange(const std::string& path, std::uint64_t from, std::uint64_t to) {
  std::vector<std::byte> bytes = ReadFile(path);
  for (std::uint64_t i = from; i < to && i < bytes.size(); ++i) {
    bytes[i] = std::byte{0};
  }
  WriteFile(path, bytes);
}

std::uint64_t GroupBytes(const std::string& path, std::uint64_t offset) {
  const std::vector<std::byte> bytes = ReadFile(path);
  const auto h = LoadStruct<kGroupHeaderLayout, GroupHeader>(&bytes[offset]);
  return kGroupOverhead + h.records_bytes;
}

constexpr std::uint64_t Block(int k) { return kBlockSize * std::uint64_t(k); }

// Options for reopening a test journal (its small segments).
WriterOptions RecoveryReopen(const std::string& dir) {
  return WriterOptions{.directory = dir,
                       .segment_size = std::uint64_t{64} * 1024,
                       .format_version = 1};
}

// Appends the record the model gives index i, waiting while the writer is
// full (it may be preparing its next segment).
void AppendOne(JournalWriter& writer, std::uint64_t i) {
  const std::vector<std::byte> frame = FrameFor(i);
  AppendStatus st;
  while ((st = writer.Append(frame, testing::SessionFor(i),
                             testing::TimeFor(i))) == AppendStatus::kFull) {
    ASSERT_TRUE(writer.Wait().ok()) << writer.status();
  }
  ASSERT_EQ(st, AppendStatus::kOk) << writer.status();
}

// ---------------------------------------------------------------------------
// Torn tails.

TEST(RecoveryTest,
     TruncationAtEveryLengthOfTheLastRecordIsDataLossUnlessAccepted) {
  // The writer preallocates every segment in full, so no crash leaves one
  // shorter than its capacity: a truncated file is data loss wherever it
  // was cut, a group boundary included.
  ScratchDir original;
  BuildJournal(original.path(), 6, 1);  // one record per group
  const std::string segment = SegmentPaths(original.path()).at(0);
  const std::vector<std::byte> bytes = ReadFile(segment);
  const std::uint64_t last = Block(6);  // the sixth group: record 6
  const std::uint64_t group = GroupBytes(segment, last);
  const std::string name = std::filesystem::path(segment).filename().string();

  for (std::uint64_t length = last; length <= last + group; ++length) {
    ScratchDir dir;
    WriteFile(dir.Sub(name), {bytes.data(), length});
    const std::uint64_t kept = length == last + group ? 6 : 5;
    const Recovered read = ReadRecovered(dir.path());
    ASSERT_EQ(read.result, ReadResult::kError) << "length " << length;
    EXPECT_EQ(read.records, kept) << "length " << length;
    EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(read.status.message()),
                HasSubstr(absl::StrFormat(
                    "data loss in segment %s: the file is %d bytes, shorter "
                    "than the 65536 bytes its header promises",
                    dir.Sub(name), length)))
        << read.status;

    auto refused = JournalWriter::Open(RecoveryReopen(dir.path()));
    ASSERT_FALSE(refused.ok()) << "length " << length;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
    if (length % 16 != 0 && length != last + group) continue;  // a sample

    WriterOptions accept = RecoveryReopen(dir.path());
    accept.accept_loss = true;
    auto writer = JournalWriter::Open(accept);
    ASSERT_TRUE(writer.ok()) << "length " << length << ": " << writer.status();
    const RecoveryReport& report = (*writer)->recovery();
    EXPECT_TRUE(report.loss_accepted);
    EXPECT_THAT(report.loss_message, HasSubstr("shorter than the 65536"));
    EXPECT_EQ(report.last_index, kept);
    EXPECT_TRUE(std::filesystem::exists(dir.Sub(name) + ".lost"));
    // The segment has its capacity back; appending goes on after `kept`.
    EXPECT_EQ(std::filesystem::file_size(dir.Sub(name)), 64u * 1024);
    AppendOne(**writer, kept + 1);
    ASSERT_TRUE((*writer)->Close().ok());
    const auto back = ReadAndCheck(dir.path(), 1);
    EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
    EXPECT_EQ(back.records, kept + 1);
  }
}

TEST(RecoveryTest, AZeroedTailOfEveryLengthIsATornTail) {
  // What a crash leaves in a preallocated file: the end of the last write
  // never arrived, the file keeps its size and reads zeros there.
  ScratchDir original;
  BuildJournal(original.path(), 4, 3);
  const std::string segment = SegmentPaths(original.path()).at(0);
  const std::uint64_t last = Block(4);
  const std::uint64_t group = GroupBytes(segment, last);
  // (keep == 0, the whole group missing, is a clean end at 9 records.)
  for (std::uint64_t keep = 1; keep < group; ++keep) {
    ScratchDir dir;
    CopyJournal(original.path(), dir.path());
    const std::string copy = SegmentPaths(dir.path()).at(0);
    ZeroRange(copy, last + keep, last + group);
    const Recovered read = ReadRecovered(dir.path());
    ASSERT_EQ(read.result, ReadResult::kError) << keep;
    EXPECT_EQ(read.records, 9u);
    EXPECT_THAT(std::string(read.status.message()), HasSubstr("torn tail"));
    if (keep % 16 != 0) continue;  // recovery on a sample: it fsyncs
    auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
    ASSERT_TRUE(writer.ok()) << keep << ": " << writer.status();
    EXPECT_TRUE((*writer)->recovery().torn_tail);
    EXPECT_EQ((*writer)->recovery().last_index, 9u);
  }
}

// ---------------------------------------------------------------------------
// A bit flipped at every byte.

TEST(RecoveryTest, ABitFlippedAtEveryByteIsNeverAcceptedSilently) {
  ScratchDir dir;
  BuildJournal(dir.path(), 4, 3);  // 12 records, groups at blocks 1..4
  const std::string segment = SegmentPaths(dir.path()).at(0);
  const std::uint64_t size = std::filesystem::file_size(segment);
  ASSERT_EQ(size, 64u * 1024);
  const Recovered clean = ReadRecovered(dir.path());
  ASSERT_EQ(clean.result, ReadResult::kEnd);
  ASSERT_EQ(clean.records, 12u);

  // Every byte of the header and the groups (blocks 0..4) and of the block
  // after them; past that the segment is zeros that the reader checks in
  // one loop, so every 7th byte and the last 7 (every byte: 90 s of the
  // suite, mostly in the zeros).
  const std::uint64_t every_byte_until = Block(6);
  for (std::uint64_t offset = 0; offset < size;
       offset += offset < every_byte_until || offset + 7 >= size ? 1 : 7) {
    const std::byte mask{static_cast<unsigned char>(1u << (offset % 8))};
    FlipBits(segment, offset, mask);
    const Recovered read = ReadRecovered(dir.path());
    FlipBits(segment, offset, mask);
    ASSERT_EQ(read.result, ReadResult::kError) << "offset " << offset;
    EXPECT_THAT(read.status.code(), AnyOf(absl::StatusCode::kDataLoss,
                                          absl::StatusCode::kUnimplemented))
        << "offset " << offset;
    // Only records of groups before the damaged block were handed out.
    const std::uint64_t block = offset / kBlockSize;
    EXPECT_LE(read.records, block == 0 ? 0 : 3 * (block - 1))
        << "offset " << offset;
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(RecoveryTest, RecoveryRefusesFlipsBeforeDurableDataAndCutsOnlyATornTail) {
  ScratchDir original;
  BuildJournal(original.path(), 4, 3);
  const std::uint64_t used = Block(5);
  for (std::uint64_t offset = 0; offset < used + 64; offset += 29) {
    ScratchDir dir;
    CopyJournal(original.path(), dir.path());
    const std::string segment = SegmentPaths(dir.path()).at(0);
    FlipBits(segment, offset, std::byte{0x10});
    auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
    if (offset < Block(4)) {
      // The header, or a group followed by groups written after it was
      // durable: refused, with the file named.
      ASSERT_FALSE(writer.ok()) << "offset " << offset;
      EXPECT_THAT(
          writer.status().code(),
          AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kUnimplemented));
      EXPECT_THAT(std::string(writer.status().message()), HasSubstr(segment));
      continue;
    }
    if (offset >= used) {
      // Garbage past the end: a torn tail; all 12 records stay.
      ASSERT_TRUE(writer.ok()) << writer.status();
      EXPECT_TRUE((*writer)->recovery().torn_tail);
      EXPECT_EQ((*writer)->recovery().last_index, 12u);
      EXPECT_EQ((*writer)->recovery().discarded_bytes, 1u);
      continue;
    }
    // The last group: refused as corruption, or (header magic, size
    // fields, trailer magic) cut as a torn tail; never accepted.
    if (!writer.ok()) {
      EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(std::string(writer.status().message()),
                  HasSubstr(absl::StrFormat("offset %d", Block(4))));
      continue;
    }
    EXPECT_TRUE((*writer)->recovery().torn_tail) << "offset " << offset;
    EXPECT_EQ((*writer)->recovery().last_index, 9u);
    ASSERT_TRUE((*writer)->Close().ok());
    const Recovered read = ReadRecovered(dir.path());
    EXPECT_EQ(read.result, ReadResult::kEnd);
    EXPECT_EQ(read.records, 9u);
  }
}

TEST(RecoveryTest, CorruptionInTheMiddleIsDataLossNamingFileAndOffset) {
  ScratchDir dir;
  BuildJournal(dir.path(), 5, 3);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  FlipBits(segment, Block(2) + 100, std::byte{0x04});  // a record of group 2
  const Recovered read = ReadRecovered(dir.path());
  ASSERT_EQ(read.result, ReadResult::kError);
  EXPECT_EQ(read.records, 3u);
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  const std::string message(read.status.message());
  EXPECT_THAT(message, HasSubstr("data loss in segment " + segment));
  EXPECT_THAT(message, HasSubstr(absl::StrFormat("at offset %d", Block(2))));
  EXPECT_THAT(message, HasSubstr("after index 3"));

  // Open reads only from the checkpoint's group on (bounded recovery,
  // docs/JOURNAL.md "Recovery"): the damage below it is not read there and
  // stays for the full read to report. Without a checkpoint Open reads
  // everything and refuses.
  {
    auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_EQ((*writer)->recovery().read_from_index, 13u);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  EXPECT_EQ(ReadRecovered(dir.path()).status.message(), message);
  ForgetCheckpoint(dir.path());
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(writer.status().message()), HasSubstr(segment));
  // Nothing was changed by the refusal.
  FlipBits(segment, Block(2) + 100, std::byte{0x04});
  EXPECT_EQ(ReadRecovered(dir.path()).records, 15u);
}

// ---------------------------------------------------------------------------
// Writes in flight at a crash.

TEST(RecoveryTest, GroupsThatLandedPastAMissingOneAreInFlightRemainsAndCut) {
  ScratchDir dir;
  BuildJournal(dir.path(), 5, 3);  // indexes 1..15, group 4 = 10..12
  ForgetCheckpoint(dir.path());
  const std::string segment = SegmentPaths(dir.path()).at(0);
  // Group 4 never reached the disk; group 5 did, sealed while group 4 was
  // still in flight (stable_index 9 < 10).
  ZeroRange(segment, Block(4), Block(5));
  RewriteStable(segment, Block(5), 9);
  const Recovered read = ReadRecovered(dir.path());
  ASSERT_EQ(read.result, ReadResult::kError);
  EXPECT_EQ(read.records, 9u);
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("torn tail"));
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("in flight"));

  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().torn_tail);
  EXPECT_EQ((*writer)->recovery().torn_offset, Block(4));
  EXPECT_EQ((*writer)->recovery().discarded_groups, 1u);
  EXPECT_EQ((*writer)->last_index(), 9u);
  ASSERT_TRUE((*writer)->Close().ok());
  // The remains are gone: the journal reads 9 records to a clean end.
  const Recovered after = ReadRecovered(dir.path());
  EXPECT_EQ(after.result, ReadResult::kEnd) << after.status;
  EXPECT_EQ(after.records, 9u);
}

TEST(RecoveryTest, AHalfWrittenGroupBeforeInFlightRemainsIsATornTail) {
  ScratchDir dir;
  BuildJournal(dir.path(), 5, 3);
  ForgetCheckpoint(dir.path());
  const std::string segment = SegmentPaths(dir.path()).at(0);
  const std::uint64_t group = GroupBytes(segment, Block(4));
  ZeroRange(segment, Block(4) + group / 2, Block(5));  // its trailer missing
  RewriteStable(segment, Block(5), 9);
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().torn_tail);
  EXPECT_EQ((*writer)->last_index(), 9u);
}

TEST(RecoveryTest,
     AMissingGroupFollowedByAGroupWrittenAfterItWasDurableIsDataLoss) {
  ScratchDir dir;
  BuildJournal(dir.path(), 5, 3);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  ZeroRange(segment, Block(4), Block(5));  // group 5 still says stable 12
  const Recovered read = ReadRecovered(dir.path());
  ASSERT_EQ(read.result, ReadResult::kError);
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("data loss"));
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("every index up to 12"));
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
}

TEST(RecoveryTest,
     AWhollyWrittenGroupThatFailsItsChecksumIsCorruptionEvenAtTheTail) {
  ScratchDir dir;
  BuildJournal(dir.path(), 5, 3);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  // A frame byte of the last group's first record.
  FlipBits(segment, Block(5) + kGroupHeaderSize + kRecordHeaderSize + 4,
           std::byte{0x01});
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()),
              HasSubstr("corruption, not a write cut short"));
}

// ---------------------------------------------------------------------------
// Segment headers.

TEST(RecoveryTest, ABadMagicIsAClearError) {
  ScratchDir dir;
  BuildJournal(dir.path(), 2, 1);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  std::vector<std::byte> bytes = ReadFile(segment);
  std::memcpy(bytes.data(), "NOTAJRNL", 8);
  WriteFile(segment, bytes);
  const Recovered read = ReadRecovered(dir.path());
  ASSERT_EQ(read.result, ReadResult::kError);
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("bad magic"));
  EXPECT_THAT(std::string(read.status.message()), HasSubstr(segment));
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()), HasSubstr("bad magic"));
}

TEST(RecoveryTest, AnotherFormatVersionIsUnimplemented) {
  ScratchDir dir;
  BuildJournal(dir.path(), 2, 1);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  std::vector<std::byte> bytes = ReadFile(segment);
  SegmentHeader h =
      LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes.data());
  h.version = kFormatVersion + 1;
  EncodeSegmentHeader(h, bytes.data());  // a valid header of version 4
  WriteFile(segment, bytes);
  const Recovered read = ReadRecovered(dir.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr(absl::StrFormat("unsupported format version %d",
                                        kFormatVersion + 1)));
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(RecoveryTest, ADamagedHeaderChecksumIsAClearError) {
  ScratchDir dir;
  BuildJournal(dir.path(), 2, 1);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  FlipBits(segment, 25, std::byte{0x80});  // created_ns
  const Recovered read = ReadRecovered(dir.path());
  EXPECT_THAT(std::string(read.status.message()),
              HasSubstr("segment header checksum mismatch"));
  EXPECT_FALSE(JournalWriter::Open(RecoveryReopen(dir.path())).ok());
}

TEST(RecoveryTest, EmptyAndShortSegmentFilesAreClearErrors) {
  for (const std::size_t size : {std::size_t{0}, std::size_t{10}}) {
    ScratchDir dir;
    WriteFile(dir.Sub(SegmentFileName(1)), std::vector<std::byte>(size));
    const Recovered read = ReadRecovered(dir.path());
    ASSERT_EQ(read.result, ReadResult::kError);
    const std::string message(read.status.message());
    if (size == 0) {
      EXPECT_THAT(message, HasSubstr("the file is empty (0 bytes)"));
      EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
      auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
      ASSERT_FALSE(writer.ok());
      EXPECT_THAT(std::string(writer.status().message()),
                  HasSubstr("the file is empty"));
    } else {
      EXPECT_THAT(message, HasSubstr("shorter than a 64-byte segment header"));
    }
  }
}

TEST(RecoveryTest, AnEmptyOrMissingDirectoryIsNotFoundForTheReader) {
  ScratchDir dir;
  EXPECT_EQ(JournalReader::Open(dir.path()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(JournalReader::Open(dir.Sub("nope")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(RecoveryTest, AHeaderlessLastSegmentIsARotationCutShort) {
  // 15 one-record groups fill the first 64 KiB segment; the 16th starts the
  // second. Its header never reached the disk, its first group did.
  ScratchDir dir;
  BuildJournal(dir.path(), 16, 1);
  auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 2u);
  ZeroRange(paths[1], 0, kSegmentHeaderSize);
  ForgetCheckpoint(dir.path());
  const Recovered read = ReadRecovered(dir.path());
  ASSERT_EQ(read.result, ReadResult::kError);
  EXPECT_EQ(read.records, 15u);
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("torn tail"));
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("all zeros"));

  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().torn_tail);
  EXPECT_THAT((*writer)->recovery().removed_files,
              ::testing::Contains(paths[1]));
  EXPECT_EQ((*writer)->last_index(), 15u);
  AppendOne(**writer, 16);
  ASSERT_TRUE((*writer)->Close().ok());
  const auto back = ReadAndCheck(dir.path(), 1);
  EXPECT_EQ(back.end, ReadResult::kEnd) << back.status;
  EXPECT_EQ(back.records, 16u);
}

// A journal whose only segment never got its header (its creation cut
// short) is created again, with WriterOptions::new_journal_id when given
// (a standby's journal takes its stream's journal_id: cluster/standby.h).
TEST(RecoveryTest, AJournalCreatedAgainTakesTheNewJournalId) {
  ScratchDir dir;
  BuildJournal(dir.path(), 0, 1);
  auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 1u);
  ZeroRange(paths[0], 0, kSegmentHeaderSize);
  WriterOptions options = RecoveryReopen(dir.path());
  options.new_journal_id = 0x5eed0001;
  auto writer = JournalWriter::Open(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->recovery().created);
  EXPECT_EQ((*writer)->journal_id(), 0x5eed0001u);
  AppendOne(**writer, 1);
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReadAndCheck(dir.path(), 1).records, 1u);
}

TEST(RecoveryTest, AHeaderlessSegmentFollowedByDurableGroupsIsDataLoss) {
  ScratchDir dir;
  BuildJournal(dir.path(), 17, 1);  // the second segment has two groups
  auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 2u);
  ZeroRange(paths[1], 0, kSegmentHeaderSize);
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
}

TEST(RecoveryTest, AHeaderlessSegmentInTheMiddleIsRefused) {
  ScratchDir dir;
  BuildJournal(dir.path(), 40, 1);  // three segments
  auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 3u);
  ZeroRange(paths[1], 0, kSegmentHeaderSize);
  EXPECT_EQ(ReadRecovered(dir.path()).status.code(),
            absl::StatusCode::kDataLoss);
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()),
              HasSubstr("only the last segment may be incomplete"));
}

TEST(RecoveryTest, AMissingSegmentIsDetected) {
  ScratchDir dir;
  BuildJournal(dir.path(), 40, 1);
  auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 3u);
  std::filesystem::remove(paths[1]);
  const Recovered read = ReadRecovered(dir.path());
  ASSERT_EQ(read.result, ReadResult::kError);
  EXPECT_EQ(read.records, 15u);
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss);
  std::filesystem::remove(paths[0]);
  EXPECT_THAT(std::string(ReadRecovered(dir.path()).status.message()),
              HasSubstr("segments before it are missing"));
}

TEST(RecoveryTest, ASegmentOfAnotherJournalIsRefused) {
  ScratchDir dir;
  BuildJournal(dir.path(), 40, 1);
  auto paths = SegmentPaths(dir.path());
  std::vector<std::byte> bytes = ReadFile(paths[0]);
  SegmentHeader h =
      LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes.data());
  h.journal_id ^= 1;
  EncodeSegmentHeader(h, bytes.data());
  WriteFile(paths[0], bytes);
  const Recovered read = ReadRecovered(dir.path());
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("another journal"));
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()),
              HasSubstr("another journal"));
}

TEST(RecoveryTest, ASegmentNamedForAnotherIndexIsRefused) {
  ScratchDir dir;
  BuildJournal(dir.path(), 2, 1);
  const std::string segment = SegmentPaths(dir.path()).at(0);
  std::filesystem::rename(segment, dir.Sub(SegmentFileName(1) + ".x"));
  std::filesystem::rename(dir.Sub(SegmentFileName(1) + ".x"),
                          dir.Sub(SegmentFileName(7)));
  EXPECT_THAT(std::string(ReadRecovered(dir.path()).status.message()),
              HasSubstr("file name says 7"));
}

// A journal whose only segment file begins past index 1 and holds no whole
// header block: not a torn tail (nothing to cut), since its name says the
// records before it are missing, and the reader and recovery must say the same.
// fuzz_journal found the two disagreeing (the reader calling it a torn tail
// that a writer would recover, the writer refusing it as data loss) on an
// input that cut the header block at a byte this test does not reach; this
// test pins the behaviour on a journal built here.
TEST(RecoveryTest, ALoneTornSegmentNamedPastTheStartIsDataLoss) {
  ScratchDir dir;
  BuildJournal(dir.path(), 17, 1);
  const auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 2u);
  // The second segment alone, cut inside its metadata (after its whole
  // 64-byte header, which names its first index): the first is gone.
  std::filesystem::remove(paths[0]);
  std::filesystem::resize_file(paths[1], 100);
  const Recovered read = ReadRecovered(dir.path());
  EXPECT_EQ(read.result, ReadResult::kError);
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
  EXPECT_THAT(std::string(read.status.message()), HasSubstr("are missing"));
  EXPECT_THAT(std::string(read.status.message()),
              Not(HasSubstr("recovers it by cutting the torn tail off")));
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kDataLoss);
}

TEST(RecoveryTest, ASegmentWhoseRenameWasLostIsReadAndPutInPlace) {
  // A power failure can lose the rename of the prepared file into place
  // (the writer does not wait for the directory fsync): the segment is then
  // still called next.owj.prep.
  ScratchDir dir;
  BuildJournal(dir.path(), 17, 1);
  auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 2u);
  std::filesystem::rename(paths[1], dir.Sub(std::string(kPreparedFileName)));
  const Recovered read = ReadRecovered(dir.path());
  EXPECT_EQ(read.result, ReadResult::kEnd) << read.status;
  EXPECT_EQ(read.records, 17u);
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_FALSE((*writer)->recovery().torn_tail);
  EXPECT_EQ((*writer)->last_index(), 17u);
  EXPECT_TRUE(std::filesystem::exists(paths[1]));
  AppendOne(**writer, 18);
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReadAndCheck(dir.path(), 1).records, 18u);
}

TEST(RecoveryTest, APreparedSegmentRenamedAfterItWasListedIsStillRead) {
  // A reader beside a live writer (journal follow) lists next.owj.prep
  // while it holds the new segment's header; the writer then renames it
  // into place and creates the next, empty next.owj.prep. The reader must
  // read the file it checked, not whatever carries the name later.
  ScratchDir dir;
  BuildJournal(dir.path(), 17, 1);
  auto paths = SegmentPaths(dir.path());
  ASSERT_EQ(paths.size(), 2u);
  const std::string prepared = dir.Sub(std::string(kPreparedFileName));
  std::filesystem::rename(paths[1], prepared);
  auto reader = JournalReader::Open(dir.path());
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::filesystem::rename(prepared, paths[1]);
  WriteFile(prepared, std::vector<std::byte>(std::uint64_t{64} * 1024));
  Record record;
  std::uint64_t records = 0;
  ReadResult result;
  while ((result = (*reader)->Next(record)) == ReadResult::kRecord) ++records;
  EXPECT_EQ(result, ReadResult::kEnd) << (*reader)->status();
  EXPECT_EQ(records, 17u);
}

TEST(RecoveryTest, AnUnusedPreparedSegmentIsIgnoredAndRemoved) {
  ScratchDir dir;
  BuildJournal(dir.path(), 3, 1);
  WriteFile(dir.Sub(std::string(kPreparedFileName)),
            std::vector<std::byte>(std::uint64_t{64} * 1024));
  EXPECT_EQ(ReadRecovered(dir.path()).records, 3u);
  auto writer = JournalWriter::Open(RecoveryReopen(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_FALSE(
      std::filesystem::exists(dir.Sub(std::string(kPreparedFileName))));
}

TEST(RecoveryTest, ANonZeroByteInTheHeaderBlockPaddingIsDetected) {
  ScratchDir dir;
  BuildJournal(dir.path(), 2, 1);
  FlipBits(SegmentPaths(dir.path()).at(0), 1000, std::byte{0x02});
  EXPECT_THAT(std::string(ReadRecovered(dir.path()).status.message()),
              HasSubstr("non-zero byte at offset 1000 of the header block"));
}

}  // namespace
}  // namespace orderwire::journal

namespace orderwire::journal {
namespace {

// Segments of different capacities in one journal (the writer makes the
// next one smaller on a disk too full for a whole one; a restart with
// another --segment-size starts new ones at that size): recovery, a torn
// tail in the smallest, the reader, the checkpoint and a prune each go by
// every segment's own header, and every record reads back as written.
TEST(RecoveryTest, SegmentsOfMixedCapacitiesRecoverAndReadBackRecordForRecord) {
  ScratchDir dir;
  constexpr std::uint64_t kSizes[] = {std::uint64_t{1} << 20, 256 << 10,
                                      64 << 10};
  constexpr std::size_t kPerSize = 12'000;  // about two 1 MiB segments
  std::uint64_t next = 1;
  for (const std::uint64_t size : kSizes) {
    auto writer = JournalWriter::Open({.directory = dir.path(),
                                       .durability = Durability::kNone,
                                       .segment_size = size,
                                       .group_size = 16 << 10});
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_EQ((*writer)->last_index(), next - 1);
    AppendRange(**writer, next, kPerSize, 3);
    next += kPerSize;
    ASSERT_TRUE((*writer)->Close().ok());
  }
  const std::uint64_t last = next - 1;
  testing::ReadBack back = ReadAndCheck(dir.path(), 3);
  ASSERT_TRUE(back.status.ok()) << back.status;
  EXPECT_EQ(back.records, last);
  std::vector<std::uint64_t> capacities;
  for (const SegmentInfo& segment : back.segments) {
    if (capacities.empty() || capacities.back() != segment.header.capacity) {
      capacities.push_back(segment.header.capacity);
    }
  }
  // The first restart continues the 1 MiB segment it found, then starts
  // 256 KiB ones; the second the same with 64 KiB.
  EXPECT_THAT(capacities,
              ::testing::ElementsAre(kSizes[0], kSizes[1], kSizes[2]));

  // A torn tail in the last (smallest) segment: the last group's write cut
  // short, in a journal without a checkpoint (as older code wrote), so that
  // nothing witnessed it durable. Recovery cuts it off; the rest reads back.
  const std::vector<std::string> paths = SegmentPaths(dir.path());
  ASSERT_GE(paths.size(), 4u);
  const SegmentInfo tail = back.segments.back();
  ASSERT_GT(tail.data_end, kFirstGroupOffset + 64);
  ASSERT_TRUE(std::filesystem::remove(dir.Sub(kCheckpointFileName)));
  std::vector<std::byte> torn = ReadFile(paths.back());
  std::fill(torn.begin() + static_cast<std::ptrdiff_t>(tail.data_end - 16),
            torn.end(), std::byte{0});
  WriteFile(paths.back(), torn);
  std::uint64_t kept = 0;
  {
    auto writer = JournalWriter::Open(
        {.directory = dir.path(), .durability = Durability::kNone});
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_TRUE((*writer)->recovery().torn_tail);
    kept = (*writer)->last_index();
    // The torn group is gone, and nothing before it.
    EXPECT_EQ(kept, tail.last_group_first_index - 1);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  back = ReadAndCheck(dir.path(), 3);
  ASSERT_TRUE(back.status.ok()) << back.status;
  EXPECT_EQ(back.records, kept);

  // A prune of the oldest segments (both 1 MiB ones and the first 256 KiB
  // one): what is left starts at a segment boundary and reads back.
  ASSERT_GE(back.segments.size(), 4u);
  const std::uint64_t before = back.segments[3].header.first_index;
  absl::StatusOr<PruneReport> pruned =
      PruneJournal({.directory = dir.path(), .before_index = before});
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_EQ(pruned->first_index_after, before);
  auto reader = JournalReader::Open(dir.path());
  ASSERT_TRUE(reader.ok()) << reader.status();
  Record record;
  std::uint64_t expect = before;
  while ((*reader)->Next(record) == ReadResult::kRecord) {
    ASSERT_EQ(record.index, expect);
    const std::vector<std::byte> want = FrameFor(record.index);
    const auto got = record.frame.bytes();
    ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
        << "record " << record.index;
    ++expect;
  }
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status();
  EXPECT_EQ(expect, kept + 1);
}

}  // namespace
}  // namespace orderwire::journal
