// FeedProducer: the market-data feed's messages of each journal record
// (docs/MARKETDATA.md "From the journal to the feed"), numbered with the
// feed's sequence. The StateMachine owns one and drives it from Apply and
// Reconfigure, so the feed is a function of the journal alone: live,
// restart, `replay` and a standby make the same messages with the same
// numbers. It reads no clock: a message's timestamp is its record's
// receive_ns.
//
// Per record: Begin() before the engine executes the record's command (it
// notes what the feed needs of the book as it was: a Replace's order),
// Finish() after it, with the engine's reports; messages() then holds the
// record's messages in feed order.
//
// State (the StateMachine's snapshot carries all three): the next feed
// sequence, the instrument directory the feed last announced (range and
// bands), and the index of the journal record that began the feed's
// current session (0: the journal's own session; feed/session.h makes the
// id). NewSession() begins another at a record (record_flags.h
// kRecordNewFeedSession): sequence 1, StartOfFeed and the directory again;
// the books are not re-announced (a subscriber takes a snapshot).
// A record applied under another directory than the one announced (the
// journal pinned a new configuration before it) starts with the changes,
// so where exactly the StateMachine was reconfigured between two records
// changes nothing.
//
// Cost: a few stores per message, one FindOrder per Replace (before the
// engine acts); whether an order rests at the end is read from its reports
// (an accepted GoodTillCancel or PostOnly order, or a crossing replace,
// rests with the leaves its last taker fill left: ENGINE.md "Capacity and
// BookFull"). The directory is compared only after a reconfiguration or a
// restore. No allocation once the buffers have held the most messages a
// record has made so far (the start of the feed makes 1 + 2 x instruments,
// a reconfiguration up to 3 x instruments, a sweep one per maker).
// Not thread-safe: the StateMachine's thread only.
#ifndef ORDERWIRE_STATE_FEED_PRODUCER_H_
#define ORDERWIRE_STATE_FEED_PRODUCER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "codec/command.h"
#include "codec/messages.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "feed/messages.h"

namespace orderwire::state {

// What the feed's instrument directory says: the instrument range and the
// bands of a new order (MARKETDATA.md InstrumentDirectory).
struct FeedDirectory {
  std::uint32_t min_instrument = 0;
  std::uint32_t max_instrument = 0;
  std::int64_t min_price = 0;
  std::int64_t max_price = 0;
  std::uint64_t min_quantity = 0;
  std::uint64_t max_quantity = 0;

  static FeedDirectory Of(const engine::EngineConfig& config);
  friend bool operator==(const FeedDirectory&, const FeedDirectory&) = default;
};

// One message of the feed.
struct FeedMessage {
  std::uint64_t sequence;  // its feed sequence
  // The message, kind byte first (feed/messages.h), as it goes into a
  // block; valid until the next record.
  std::span<const std::byte> bytes;
};

class FeedProducer {
 public:
  // A feed with nothing made yet: the next record starts it.
  FeedProducer();

  // Starts the messages of a record received at `receive_ns` (the
  // timestamp of all of them), before the engine executes `command`: the
  // start of the feed, or the changes of the directory in force
  // (engine.config()) from the one announced, and what a Replace needs of
  // the order it replaces.
  void Begin(std::uint64_t receive_ns, const codec::Command& command,
             const engine::Engine& engine);
  // The messages of the command's reports, in report order, then the
  // resting remainder of a new order or of a crossing replace. `reports`
  // holds exactly this command's reports (a Replaced followed by more
  // reports is a replace that crossed).
  void Finish(const engine::ReportBuffer& reports);

  // The messages of the last record, in feed order; valid until the next
  // Begin or Clear.
  [[nodiscard]] std::span<const FeedMessage> messages() const noexcept {
    return {messages_.data(), count_};
  }
  // No messages until the next Begin (a record refused before it).
  void Clear() noexcept { count_ = 0; }
  // The sequence the next message will get.
  [[nodiscard]] std::uint64_t next_sequence() const noexcept {
    return next_sequence_;
  }
  // The directory the feed announced last (its instrument range and
  // bands; the other fields of EngineConfig are not the feed's). Meaningless
  // while next_sequence() is 1.
  [[nodiscard]] const FeedDirectory& announced() const noexcept {
    return announced_;
  }
  // The timestamp of message next_sequence() - 1: 0 while none was made;
  // unknown (nullopt) after Restore() until a record makes one (the
  // snapshot file does not carry it).
  [[nodiscard]] std::optional<std::uint64_t> last_timestamp() const noexcept {
    return last_timestamp_;
  }
  // The index of the journal record that began the current feed session;
  // 0: the journal's own (feed::FeedSession gives the session id).
  [[nodiscard]] std::uint64_t session_start() const noexcept {
    return session_start_;
  }
  // The record `index`, about to Begin, begins a new feed session: its
  // messages are numbered from 1, starting with StartOfFeed and the
  // directory in force. Precondition: index >= 1.
  void NewSession(std::uint64_t index) noexcept;
  // A state restored from a snapshot: the next message gets `sequence`
  // (>= 1), `announced` was the directory announced last, the session
  // began at record `session_start` (0: the journal's own).
  void Restore(std::uint64_t sequence, const FeedDirectory& announced,
               std::uint64_t session_start);
  // The engine's configuration may have changed (StateMachine::Reconfigure):
  // the next record compares the directory in force with the one announced.
  void ConfigurationChanged() noexcept { check_directory_ = true; }

 private:
  template <typename Model>
  void Emit(const Model& model);
  void StartOfFeed(const FeedDirectory& directory);
  void DirectoryChanges(const FeedDirectory& before,
                        const FeedDirectory& after);
  void Directory(std::uint32_t instrument, const FeedDirectory& directory);
  void OnAccepted(const codec::Accepted& accepted);
  void OnReplaced(const engine::ReportBuffer& reports, std::size_t i);
  // bytes_ grows: the messages made so far point into the new buffer.
  void Grow(std::size_t at_least);

  std::uint64_t next_sequence_ = 1;
  FeedDirectory announced_;
  std::uint64_t session_start_ = 0;
  std::uint64_t timestamp_ = 0;  // of the record being made
  std::optional<std::uint64_t> last_timestamp_ = 0;
  bool check_directory_ = true;
  // Encoded messages of the record, back to back, and each one's view.
  std::vector<std::byte> bytes_;
  std::size_t used_ = 0;
  std::vector<FeedMessage> messages_;
  std::size_t count_ = 0;
  // The record's order that may rest at its end (an accepted
  // GoodTillCancel or PostOnly order, or a replace that crossed and so left
  // the book), with the leaves its taker fills left (0: none rests), and
  // the order a Replace acts on, as it was before the command.
  feed::OrderAdded may_rest_{};
  std::optional<engine::OrderInfo> replaced_;
};

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_FEED_PRODUCER_H_
