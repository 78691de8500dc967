// Writes the fuzz seed corpus: PROTOCOL-GOLDEN.md's golden frames and datagram
// (tests/codec/golden.h) and MARKETDATA-GOLDEN.md's golden packets
// (tests/feed/golden.h), and what is built from them, into DIR/<target>/,
// one writer per target. Run at build time by fuzz/CMakeLists.txt.
//
//   fuzz_make_corpus DIR
//
// Exit 0: every seed written; 1: a golden vector did not parse or a file
// could not be written (the target named on stderr); 2: usage.
#include <array>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/wire.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "fuzz/subscriber_script.h"
#include "journal/reader.h"
#include "jsonl/jsonl.h"
#include "replication/group_message.h"
#include "tests/codec/golden.h"
#include "tests/feed/golden.h"

namespace {

namespace codec = orderwire::codec;
namespace jsonl = orderwire::jsonl;
namespace feed_golden = orderwire::feed::golden;
namespace fs = std::filesystem;
using feed_golden::FromHex;
using Bytes = std::vector<std::byte>;

// One target's seed directory; a write that fails makes ok() false.
class SeedDir {
 public:
  explicit SeedDir(fs::path dir) : dir_(std::move(dir)) {
    std::error_code error;
    fs::create_directories(dir_, error);
    ok_ = !error;
  }

  void Write(std::string_view name, std::span<const std::byte> bytes) {
    std::ofstream out(dir_ / std::string(name), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    ok_ &= static_cast<bool>(out);
  }
  void Write(std::string_view name, std::string_view text) {
    Write(name, std::as_bytes(std::span(text.data(), text.size())));
  }
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  fs::path dir_;
  bool ok_ = true;
};

// Every golden command frame, back to back (empty if one does not parse).
Bytes GoldenCommands() {
  Bytes commands;
  for (const codec::golden::GoldenFrame& g : codec::golden::kFrames) {
    const Bytes bytes = FromHex(g.hex);
    const auto frame = codec::FrameView::Parse(bytes);
    if (!frame.ok()) return {};
    if (frame->is_command()) {
      commands.insert(commands.end(), bytes.begin(), bytes.end());
    }
  }
  return commands;
}

// fuzz_frame: every golden frame, and all the commands back to back.
bool WriteFrameSeeds(const fs::path& dir) {
  SeedDir seeds(dir);
  for (const codec::golden::GoldenFrame& g : codec::golden::kFrames) {
    seeds.Write(g.name, FromHex(g.hex));
  }
  const Bytes commands = GoldenCommands();
  seeds.Write("AllCommands", commands);
  return seeds.ok() && !commands.empty();
}

// fuzz_json: every golden frame in its JSON form.
bool WriteJsonSeeds(const fs::path& dir) {
  SeedDir seeds(dir);
  for (const codec::golden::GoldenFrame& g : codec::golden::kFrames) {
    const Bytes bytes = FromHex(g.hex);
    const auto frame = codec::FrameView::Parse(bytes);
    if (!frame.ok()) return false;
    seeds.Write(std::string(g.name) + ".json", jsonl::FrameToJson(*frame));
  }
  return seeds.ok();
}

// fuzz_datagram: the golden datagrams (plain and authenticated: flag 0x01,
// MAC trailer) and a datagram of every golden frame that is no command.
bool WriteDatagramSeeds(const fs::path& dir) {
  SeedDir seeds(dir);
  std::array<std::byte, codec::kMaxDatagramSize> buffer{};
  codec::DatagramBuilder reports(buffer, 0xCAFE);
  for (const codec::golden::GoldenFrame& g : codec::golden::kFrames) {
    const Bytes bytes = FromHex(g.hex);
    const auto frame = codec::FrameView::Parse(bytes);
    if (!frame.ok()) return false;
    if (frame->info().kind_class == codec::KindClass::kReport &&
        reports.AppendFrame(bytes) != codec::CodecError::kOk) {
      return false;
    }
  }
  seeds.Write("GoldenDatagram", FromHex(codec::golden::kDatagramHex));
  seeds.Write("Reports", reports.bytes());
  seeds.Write("GoldenAuthenticatedDatagram",
              FromHex(codec::golden::kAuthenticatedDatagramHex));
  return seeds.ok();
}

// fuzz_journal: recipes that once broke an invariant, kept as seeds. A
// lone segment named past index 1, cut inside its metadata: the reader
// called it a torn tail, recovery refused it (reader.cc EnterSegment).
bool WriteJournalSeeds(const fs::path& dir) {
  SeedDir seeds(dir);
  seeds.Write("LoneTornSegmentPastTheStart",
              FromHex("f522020141012421032c2c2c2c1c"));
  return seeds.ok();
}

// fuzz_decode_paths: a room byte (64 Commands), then the golden commands
// over and over, long enough for several 64-byte blocks; and one with a
// report frame in the middle.
bool WriteDecodePathsSeeds(const fs::path& dir) {
  SeedDir seeds(dir);
  const Bytes commands = GoldenCommands();
  Bytes seed{std::byte{63}};
  for (int i = 0; i < 8; ++i) {
    seed.insert(seed.end(), commands.begin(), commands.end());
  }
  seeds.Write("GoldenCommands", seed);
  Bytes report;
  for (const codec::golden::GoldenFrame& g : codec::golden::kFrames) {
    if (codec::Info(g.kind).kind_class == codec::KindClass::kReport) {
      report = FromHex(g.hex);
      break;
    }
  }
  seed.insert(seed.begin() + 1 + static_cast<std::ptrdiff_t>(commands.size()),
              report.begin(), report.end());
  seeds.Write("GoldenCommandsAndAReport", seed);
  return seeds.ok() && !commands.empty();
}

// fuzz_group_message: a mode byte (0: parse as is), then a journal stream
// message of the golden commands as records 7, 8, ..., and an epoch marker.
bool WriteGroupMessageSeeds(const fs::path& dir) {
  SeedDir seeds(dir);
  const Bytes commands = GoldenCommands();
  orderwire::replication::GroupMessageBuilder builder;
  builder.Start(2);
  std::uint64_t index = 7;
  for (std::size_t at = 0; at < commands.size();) {
    const auto frame = codec::FrameView::Parse(std::span(commands).subspan(at));
    if (!frame.ok()) return false;
    orderwire::journal::Record record;
    record.index = index;
    record.receive_ns = 1'000'000 * index;
    record.session_id = static_cast<std::uint32_t>(index % 3 + 1);
    record.frame = *frame;
    if (!builder.Add(record).ok()) return false;
    ++index;
    at += frame->bytes().size();
  }
  Bytes seed{std::byte{0}};
  const auto message = builder.Finish();
  seed.insert(seed.end(), message.begin(), message.end());
  seeds.Write("GoldenCommands", seed);
  const Bytes marker = orderwire::replication::EncodeEpochMarker(3, index);
  seed.assign(1, std::byte{0});
  seed.insert(seed.end(), marker.begin(), marker.end());
  seeds.Write("EpochMarker", seed);
  return seeds.ok() && !commands.empty();
}

// fuzz_feed_packet: every golden packet and request of MARKETDATA.md.
bool WriteFeedPacketSeeds(const fs::path& dir) {
  SeedDir seeds(dir);
  for (const feed_golden::GoldenBytes& g : feed_golden::kSubscriberPackets) {
    seeds.Write(g.name, FromHex(g.hex));
  }
  for (const feed_golden::GoldenBytes& g : feed_golden::kRequests) {
    seeds.Write(g.name, FromHex(g.hex));
  }
  return seeds.ok();
}

// A fuzz_subscriber script (fuzz/subscriber_script.h) being written.
class Script {
 public:
  explicit Script(std::uint8_t config) : bytes_{std::byte{config}} {}

  // A packet after k units of time, with the step's flags.
  Script& Send(std::span<const std::byte> packet, int k = 0, int unit = 0,
               std::uint8_t flags = 0) {
    orderwire::fuzz::AppendSubscriberStep(
        bytes_, orderwire::fuzz::SubscriberWhen(k, unit, flags), packet);
    return *this;
  }
  Script& Send(const feed_golden::GoldenBytes& packet, int k = 0, int unit = 0,
               std::uint8_t flags = 0) {
    return Send(FromHex(packet.hex), k, unit, flags);
  }
  // A packet 1 ms later, a reply to the last request (its token stamped).
  Script& Reply(std::span<const std::byte> packet) {
    return Send(packet, 1, 0, orderwire::fuzz::subscriber_step::kStampToken);
  }
  Script& Reply(const feed_golden::GoldenBytes& packet) {
    return Reply(FromHex(packet.hex));
  }
  // No datagram: Poll after k units.
  Script& Poll(int k, int unit) {
    orderwire::fuzz::AppendSubscriberStep(
        bytes_,
        orderwire::fuzz::SubscriberWhen(
            k, unit, orderwire::fuzz::subscriber_step::kPoll),
        {});
    return *this;
  }
  [[nodiscard]] const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
};

// The golden snapshot reply, at S = `s` instead of 6.
Bytes GoldenSnapshotAt(std::uint64_t s) {
  namespace feed = orderwire::feed;
  Bytes packet = FromHex(feed_golden::kSnapshotReply.hex);
  // Its first block is the SnapshotStart, its last the SnapshotEnd.
  codec::StoreLE(
      packet.data() + feed::kPacketHeaderSize + feed::kBlockLengthSize +
          feed::MessageOffsetOf<&feed::SnapshotStart::feed_sequence>(),
      s);
  codec::StoreLE(packet.data() + packet.size() -
                     feed::kMessageSize<feed::SnapshotEnd> +
                     feed::MessageOffsetOf<&feed::SnapshotEnd::feed_sequence>(),
                 s);
  return packet;
}

// A golden packet at `sequence` (its header's).
Bytes GoldenAt(const feed_golden::GoldenBytes& golden, std::uint64_t sequence) {
  namespace feed = orderwire::feed;
  Bytes packet = FromHex(golden.hex);
  codec::StoreLE(
      packet.data() + feed::PacketOffsetOf<&feed::PacketHeader::sequence>(),
      sequence);
  return packet;
}

// fuzz_subscriber: MARKETDATA-GOLDEN.md's golden exchange as scripts: the feed
// in order, a gap filled, a gap given up on, a late join, each refusal, a small
// hold storage, staleness, tokens that wrap, and sequences at the top of their
// range. The golden snapshot is at S = 6 (StartOfFeed and ExecutedAdded are 1
// to 6; Heartbeat 7).
bool WriteSubscriberSeeds(const fs::path& dir) {
  namespace config = orderwire::fuzz::subscriber_config;
  constexpr std::uint8_t kFromStart = config::kFromStart;
  SeedDir seeds(dir);
  seeds.Write("InOrder", Script(kFromStart | config::kGivenSession)
                             .Send(feed_golden::kStartOfFeed)
                             .Send(feed_golden::kExecutedAdded, 1, 0)
                             .Send(feed_golden::kHeartbeat, 1, 3)
                             .Send(feed_golden::kEndOfSession, 1, 0)
                             .bytes());
  seeds.Write("GapFilled", Script(kFromStart)
                               .Send(feed_golden::kExecutedAdded)
                               .Reply(feed_golden::kStartOfFeed)
                               .Send(feed_golden::kHeartbeat, 1, 2)
                               .bytes());
  seeds.Write("GapGivenUp", Script(kFromStart | (1u << config::kTriesShift))
                                .Send(feed_golden::kExecutedAdded)
                                .Poll(6, 1)
                                .Poll(6, 1)
                                .Reply(feed_golden::kSnapshotReply)
                                .Send(feed_golden::kHeartbeat, 1, 0)
                                .bytes());
  seeds.Write("LateJoin", Script(0)
                              .Poll(0, 0)
                              .Send(feed_golden::kExecutedAdded, 1, 0)
                              .Reply(feed_golden::kSnapshotReply)
                              .Send(feed_golden::kHeartbeat, 1, 0)
                              .bytes());
  for (const feed_golden::GoldenBytes& refusal :
       {feed_golden::kRefusedNotRetained, feed_golden::kRefusedBeyondEnd}) {
    seeds.Write(refusal.name, Script(kFromStart)
                                  .Send(feed_golden::kExecutedAdded)
                                  .Reply(refusal)
                                  .Reply(feed_golden::kSnapshotReply)
                                  .Send(feed_golden::kHeartbeat, 1, 0)
                                  .bytes());
  }
  seeds.Write("SmallHoldAndStale", Script(kFromStart | config::kSmallHold)
                                       .Send(feed_golden::kHeartbeat)
                                       .Send(feed_golden::kExecutedAdded)
                                       .Send(feed_golden::kExecutedAdded)
                                       .Poll(4, 3)
                                       .Reply(feed_golden::kStartOfFeed)
                                       .bytes());
  seeds.Write("TokensWrap", Script(config::kTokenWrap)
                                .Poll(0, 0)
                                .Poll(1, 3)
                                .Poll(1, 3)
                                .Reply(feed_golden::kSnapshotReply)
                                .bytes());
  constexpr std::uint64_t kLast = std::numeric_limits<std::uint64_t>::max();
  // The snapshot at 2^64 - 6, the feed's 4 next messages, then 2 past the
  // last sequence.
  seeds.Write("NearTheLastSequence",
              Script(0)
                  .Poll(0, 0)
                  .Reply(GoldenSnapshotAt(kLast - 5))
                  .Send(GoldenAt(feed_golden::kStartOfFeed, kLast - 4), 1, 0)
                  .Send(GoldenAt(feed_golden::kExecutedAdded, kLast), 1, 0)
                  .bytes());
  seeds.Write("SnapshotAtTheLastSequence",
              Script(0).Poll(0, 0).Reply(GoldenSnapshotAt(kLast)).bytes());
  return seeds.ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
    return 2;
  }
  const std::pair<const char*, bool (*)(const fs::path&)> writers[] = {
      {"fuzz_frame", WriteFrameSeeds},
      {"fuzz_json", WriteJsonSeeds},
      {"fuzz_datagram", WriteDatagramSeeds},
      {"fuzz_journal", WriteJournalSeeds},
      {"fuzz_decode_paths", WriteDecodePathsSeeds},
      {"fuzz_group_message", WriteGroupMessageSeeds},
      {"fuzz_feed_packet", WriteFeedPacketSeeds},
      {"fuzz_subscriber", WriteSubscriberSeeds},
  };
  for (const auto& [target, write] : writers) {
    if (!write(fs::path(argv[1]) / target)) {
      std::fprintf(stderr,
                   "fuzz_make_corpus: cannot write the seeds of %s under %s\n",
                   target, argv[1]);
      return 1;
    }
  }
  return 0;
}
