// Writes the fuzz seed corpus: PROTOCOL.md's golden frames and datagram
// (tests/codec/golden.h) and MARKETDATA.md's golden packets
// (tests/feed/golden.h), one file each, into DIR/<target>/. Run at build
// time by fuzz/CMakeLists.txt.
//
//   fuzz_make_corpus DIR
#include <array>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
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

std::vector<std::byte> FromHex(std::string_view hex) {
  std::vector<std::byte> out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>(
        std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  }
  return out;
}

bool Write(const std::filesystem::path& path,
           std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

bool Write(const std::filesystem::path& path, std::string_view text) {
  return Write(path, std::as_bytes(std::span(text.data(), text.size())));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const std::filesystem::path frame_dir = dir / "fuzz_frame";
  const std::filesystem::path datagram_dir = dir / "fuzz_datagram";
  const std::filesystem::path json_dir = dir / "fuzz_json";
  const std::filesystem::path paths_dir = dir / "fuzz_decode_paths";
  const std::filesystem::path stream_dir = dir / "fuzz_group_message";
  const std::filesystem::path journal_dir = dir / "fuzz_journal";
  const std::filesystem::path feed_dir = dir / "fuzz_feed_packet";
  for (const auto& d : {frame_dir, datagram_dir, json_dir, paths_dir,
                        stream_dir, journal_dir, feed_dir}) {
    std::filesystem::create_directories(d);
  }
  bool ok = true;
  std::vector<std::byte> commands;  // every golden command, back to back
  std::array<std::byte, codec::kMaxDatagramSize> buffer{};
  codec::DatagramBuilder reports(buffer, 0xCAFE);
  for (const codec::golden::GoldenFrame& g : codec::golden::kFrames) {
    const std::vector<std::byte> bytes = FromHex(g.hex);
    const std::string name(g.name);
    ok &= Write(frame_dir / name, bytes);
    const auto frame = codec::FrameView::Parse(bytes);
    if (!frame.ok()) return 1;
    ok &= Write(json_dir / (name + ".json"), jsonl::FrameToJson(*frame));
    if (frame->is_command()) {
      commands.insert(commands.end(), bytes.begin(), bytes.end());
    } else if (reports.AppendFrame(bytes) != codec::CodecError::kOk) {
      return 1;
    }
  }
  ok &= Write(frame_dir / "AllCommands", commands);
  // fuzz_journal: recipes that once broke an invariant, kept as seeds. A
  // lone segment named past index 1, cut inside its metadata: the reader
  // called it a torn tail, recovery refused it (reader.cc EnterSegment).
  {
    const std::array<std::uint8_t, 14> lone_torn_segment{
        0xf5, 0x22, 0x02, 0x01, 0x41, 0x01, 0x24,
        0x21, 0x03, 0x2c, 0x2c, 0x2c, 0x2c, 0x1c};
    std::vector<std::byte> seed;
    for (const std::uint8_t b : lone_torn_segment) seed.push_back(std::byte{b});
    ok &= Write(journal_dir / "LoneTornSegmentPastTheStart", seed);
  }
  // fuzz_decode_paths: a room byte (64 Commands), then the golden commands
  // over and over, long enough for several 64-byte blocks; and one with a
  // report frame in the middle.
  {
    std::vector<std::byte> seed{std::byte{63}};
    for (int i = 0; i < 8; ++i) {
      seed.insert(seed.end(), commands.begin(), commands.end());
    }
    ok &= Write(paths_dir / "GoldenCommands", seed);
    std::vector<std::byte> report;
    for (const codec::golden::GoldenFrame& g : codec::golden::kFrames) {
      if (codec::Info(g.kind).kind_class == codec::KindClass::kReport) {
        report = FromHex(g.hex);
        break;
      }
    }
    seed.insert(seed.begin() + 1 + static_cast<std::ptrdiff_t>(commands.size()),
                report.begin(), report.end());
    ok &= Write(paths_dir / "GoldenCommandsAndAReport", seed);
  }
  // fuzz_group_message: a mode byte (0: parse as is), then a journal stream
  // message of the golden commands as records 7, 8, ..., and an epoch marker.
  {
    orderwire::replication::GroupMessageBuilder builder;
    builder.Start(2);
    std::uint64_t index = 7;
    for (std::size_t at = 0; at < commands.size();) {
      const auto frame =
          codec::FrameView::Parse(std::span(commands).subspan(at));
      if (!frame.ok()) return 1;
      orderwire::journal::Record record;
      record.index = index;
      record.receive_ns = 1'000'000 * index;
      record.session_id = static_cast<std::uint32_t>(index % 3 + 1);
      record.frame = *frame;
      if (!builder.Add(record).ok()) return 1;
      ++index;
      at += frame->bytes().size();
    }
    std::vector<std::byte> seed{std::byte{0}};
    const auto message = builder.Finish();
    seed.insert(seed.end(), message.begin(), message.end());
    ok &= Write(stream_dir / "GoldenCommands", seed);
    const std::vector<std::byte> marker =
        orderwire::replication::EncodeEpochMarker(3, index);
    seed.assign(1, std::byte{0});
    seed.insert(seed.end(), marker.begin(), marker.end());
    ok &= Write(stream_dir / "EpochMarker", seed);
  }
  ok &= Write(datagram_dir / "GoldenDatagram",
              FromHex(codec::golden::kDatagramHex));
  ok &= Write(datagram_dir / "Reports", reports.bytes());
  // PROTOCOL.md's authenticated golden datagram (flag 0x01, MAC trailer).
  ok &= Write(datagram_dir / "GoldenAuthenticatedDatagram",
              FromHex(codec::golden::kAuthenticatedDatagramHex));
  // fuzz_feed_packet: every golden packet and request of MARKETDATA.md.
  namespace feed_golden = orderwire::feed::golden;
  for (const auto& set :
       {std::span<const feed_golden::GoldenBytes>(
            feed_golden::kSubscriberPackets),
        std::span<const feed_golden::GoldenBytes>(feed_golden::kRequests)}) {
    for (const feed_golden::GoldenBytes& g : set) {
      ok &= Write(feed_dir / std::string(g.name), feed_golden::FromHex(g.hex));
    }
  }
  if (!ok) {
    std::fprintf(stderr, "fuzz_make_corpus: cannot write under %s\n", argv[1]);
    return 1;
  }
  return 0;
}
