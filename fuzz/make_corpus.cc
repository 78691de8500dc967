// Writes the fuzz seed corpus: PROTOCOL.md's golden frames and datagram
// (tests/codec/golden.h) and MARKETDATA.md's golden packets
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
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codec/datagram.h"
#include "codec/frame.h"
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
    if (!frame->is_command() &&
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
