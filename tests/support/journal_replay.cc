// The per-session replay of a journal; see journal_replay.h.
#include "tests/support/journal_replay.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "gtest/gtest.h"
#include "journal/reader.h"
#include "state/state_machine.h"

namespace orderwire::test_support {

namespace {

// Applies `records` (consecutive indexes) through a fresh StateMachine with
// `engine`.
SessionReplay ReplayRecordsBySession(
    const std::vector<JournalRecordCopy>& records,
    const engine::EngineConfig& engine) {
  SessionReplay replay;
  state::StateMachineOptions options;
  options.engine = engine;
  auto machine = std::make_unique<state::StateMachine>(options);
  for (const JournalRecordCopy& copy : records) {
    journal::Record record;
    record.index = copy.index;
    record.receive_ns = copy.receive_ns;
    record.session_id = copy.session_id;
    record.flags = copy.flags;
    record.frame = *codec::FrameView::Parse(copy.frame);
    ++replay.records;
    ++replay.records_by_session[record.session_id];
    const absl::Status applied =
        machine->Apply(state::Record::FromJournal(record));
    EXPECT_TRUE(applied.ok()) << applied;
    for (const state::Output& out : machine->outputs()) {
      replay.reports_by_session[out.session_id].emplace_back(out.frame.begin(),
                                                             out.frame.end());
    }
    for (const state::FeedMessage& message : machine->feed()) {
      EXPECT_EQ(message.sequence, replay.feed.size() + 1);
      replay.feed.emplace_back(message.bytes.begin(), message.bytes.end());
    }
    replay.feed_after.push_back(replay.feed.size());
  }
  machine->engine().ForEachLiveOrder([&](const engine::OrderInfo& order) {
    replay.live_orders.push_back(order);
  });
  return replay;
}

}  // namespace

SessionReplay ReplayJournalBySession(const std::string& directory,
                                     const engine::EngineConfig& engine) {
  return ReplayRecordsBySession(ReadJournalRecords(directory), engine);
}

SessionReplay ReplaySeededJournalBySession(const std::string& source,
                                           const std::string& directory,
                                           const engine::EngineConfig& engine) {
  const std::vector<JournalRecordCopy> seeded = ReadJournalRecords(directory);
  std::vector<JournalRecordCopy> records;
  for (JournalRecordCopy& r : ReadJournalRecords(source)) {
    if (seeded.empty() || r.index < seeded.front().index) {
      records.push_back(std::move(r));
    }
  }
  EXPECT_FALSE(records.empty() || seeded.empty());
  EXPECT_TRUE(seeded.empty() || records.empty() ||
              records.back().index + 1 == seeded.front().index)
      << "the source does not reach the seeded journal's first record";
  records.insert(records.end(), seeded.begin(), seeded.end());
  return ReplayRecordsBySession(records, engine);
}

std::size_t ExpectLiveIsReplayPrefix(std::uint32_t session, const Bytes& live,
                                     const std::vector<Bytes>& replayed) {
  SCOPED_TRACE(::testing::Message() << "session " << session);
  Bytes expected;
  std::size_t received = 0;
  while (received < replayed.size() &&
         expected.size() + replayed[received].size() <= live.size()) {
    expected.insert(expected.end(), replayed[received].begin(),
                    replayed[received].end());
    ++received;
  }
  EXPECT_EQ(live.size(), expected.size())
      << "the live reports do not end on a replayed frame's boundary";
  EXPECT_TRUE(live == expected) << "live differs from the replay";
  for (std::size_t f = received; f < replayed.size(); ++f) {
    const auto frame = codec::FrameView::Parse(replayed[f]);
    EXPECT_TRUE(frame.ok()) << "replayed report " << f + 1 << " does not parse";
    if (!frame.ok()) continue;
    const bool caused_by_others =
        (frame->kind() == codec::Kind::kFilled &&
         codec::View<codec::Filled>::FromFrame(*frame)
                 ->Get<&codec::Filled::liquidity>() ==
             codec::Liquidity::kMaker) ||
        (frame->kind() == codec::Kind::kCancelled &&
         codec::View<codec::Cancelled>::FromFrame(*frame)
                 ->Get<&codec::Cancelled::reason>() ==
             codec::CancelReason::kSelfTrade);
    EXPECT_TRUE(caused_by_others)
        << "report " << f + 1 << " (" << codec::Name(frame->kind())
        << ") answers the session's own command but never arrived";
  }
  return received;
}

std::vector<JournalRecordCopy> ReadJournalRecords(
    const std::string& directory) {
  std::vector<JournalRecordCopy> out;
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(directory);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  journal::Record record;
  journal::ReadResult result;
  while ((result = (*reader)->Next(record)) == journal::ReadResult::kRecord) {
    const auto frame = record.frame.bytes();
    out.push_back({record.index, record.receive_ns, record.session_id,
                   record.flags, Bytes(frame.begin(), frame.end())});
  }
  EXPECT_EQ(result, journal::ReadResult::kEnd) << (*reader)->status();
  return out;
}

std::uint64_t JournalIdOf(const std::string& directory) {
  absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
      journal::JournalReader::Open(directory);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return 0;
  journal::Record record;
  journal::ReadResult result;
  while ((result = (*reader)->Next(record)) == journal::ReadResult::kRecord) {
  }
  EXPECT_EQ(result, journal::ReadResult::kEnd) << (*reader)->status();
  if ((*reader)->segments().empty()) return 0;
  return (*reader)->segments().front().header.journal_id;
}

}  // namespace orderwire::test_support
