// `orderwire bench-decode`: the codec's own figures on a generated mix.
//
// Generates `--count` command frames (the benchmark mix: 50% NewLimit, 5%
// NewMarket, 25% CancelByOrder, 5% CancelByClient, 15% Replace), decodes them
// `--passes` times into Command values and prints the median ns per command
// and frames/s, beside two baselines measured in the same run on the same
// bytes: a plain sum of the bytes as 64-bit words (the cost of reading them)
// and a memcpy of them.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "codec/command.h"
#include "codec/testing/random_commands.h"

namespace orderwire::cli {
namespace {

const CommandSpec kSpec{
    .name = "bench-decode",
    .synopsis = "[--count N] [--seed S] [--passes P]",
    .summary = "Decode a generated mix of command frames and print figures.",
    .details =
        "Prints ns per command (median of the passes), frames/s and the count\n"
        "of each kind, beside a read-bound baseline (summing the same bytes "
        "as\n"
        "64-bit words) and a memcpy of them, measured in the same run. Pin it\n"
        "for stable figures: taskset -c 1 orderwire bench-decode.",
    .flags = {{"count", "N", "1000000", "frames to generate"},
              {"seed", "S", "1", "generator seed"},
              {"passes", "P", "15", "decode passes; the median is reported"}},
};

using Clock = std::chrono::steady_clock;

template <typename Fn>
double MedianSeconds(int passes, Fn&& fn) {
  std::vector<double> seconds;
  for (int i = 0; i < passes; ++i) {
    const auto start = Clock::now();
    fn();
    seconds.push_back(
        std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

absl::Status BenchDecode(const Args& args) {
  absl::StatusOr<std::uint64_t> count = args.Uint("count", 1, 100'000'000);
  if (!count.ok()) return count.status();
  absl::StatusOr<std::uint64_t> seed = args.Uint("seed", UINT64_MAX);
  if (!seed.ok()) return seed.status();
  absl::StatusOr<std::int64_t> passes = args.Int("passes", 1, 1000);
  if (!passes.ok()) return passes.status();

  const std::vector<std::byte> stream = codec::testing::EncodeRandomStream(
      *count, *seed, codec::testing::kDecodeBenchMix);
  const std::span<const std::byte> bytes(stream);

  std::array<std::uint64_t, 256> by_kind{};
  std::uint64_t checksum = 0;
  std::uint64_t decoded = 0;
  std::vector<codec::Command> commands(256);
  const double decode_s = MedianSeconds(static_cast<int>(*passes), [&] {
    decoded = 0;
    std::size_t pos = 0;
    while (pos < bytes.size()) {
      const codec::DecodeBatch batch =
          codec::DecodeCommands(bytes.subspan(pos), commands);
      if (batch.error != codec::CodecError::kOk || batch.frames == 0) break;
      pos += batch.bytes;
      for (std::size_t i = 0; i < batch.frames; ++i) {
        const codec::Command& command = commands[i];
        checksum += command.account_id.value() ^ command.quantity.value() ^
                    static_cast<std::uint64_t>(command.price.value());
      }
      decoded += batch.frames;
    }
  });
  // Counting by kind is done outside the timed passes: a per-frame counter
  // increment is a store-to-load chain that would be timed as decoding.
  for (std::size_t pos = 0; pos < bytes.size();) {
    const auto frame = codec::FrameView::Parse(bytes.subspan(pos));
    if (!frame.ok()) break;
    ++by_kind[static_cast<std::uint8_t>(frame->kind())];
    pos += frame->size();
  }
  if (decoded != *count) {
    return absl::InternalError(
        absl::StrFormat("decoded %d of %d generated frames", decoded, *count));
  }

  std::uint64_t sum = 0;
  const double read_s = MedianSeconds(static_cast<int>(*passes), [&] {
    const std::size_t words = bytes.size() / 8;
    for (std::size_t i = 0; i < words; ++i) {
      std::uint64_t w;
      std::memcpy(&w, bytes.data() + i * 8, 8);
      sum += w;
    }
    asm volatile("" : : "r"(sum) : "memory");
  });
  std::vector<std::byte> copy(bytes.size());
  const double memcpy_s = MedianSeconds(static_cast<int>(*passes), [&] {
    std::memcpy(copy.data(), bytes.data(), bytes.size());
    asm volatile("" : : "r"(copy.data()) : "memory");
  });

  const double n = static_cast<double>(*count);
  std::string out = absl::StrFormat(
      "orderwire bench-decode: %d frames (%d bytes), seed %d, "
      "median of %d passes\n\n",
      *count, bytes.size(), *seed, *passes);
  absl::StrAppendFormat(&out, "  %-30s %10s %14s\n", "", "ns/frame",
                        "frames/s");
  absl::StrAppendFormat(&out, "  %-30s %10.2f %14.0f\n",
                        "decode into Command (batch)", decode_s * 1e9 / n,
                        n / decode_s);
  absl::StrAppendFormat(&out, "  %-30s %10.2f %14.0f\n",
                        "baseline: read-bound sum", read_s * 1e9 / n,
                        n / read_s);
  absl::StrAppendFormat(&out, "  %-30s %10.2f %14.0f\n", "baseline: memcpy",
                        memcpy_s * 1e9 / n, n / memcpy_s);
  absl::StrAppendFormat(&out,
                        "\n  decode / read-bound = %.2fx\n\n  frames by "
                        "kind:\n",
                        decode_s / read_s);
  for (std::size_t k = 0; k < by_kind.size(); ++k) {
    if (by_kind[k] == 0) continue;
    absl::StrAppendFormat(&out, "    %-16s %10d  (%.1f%%)\n",
                          codec::kKindTable[k].name, by_kind[k],
                          100.0 * static_cast<double>(by_kind[k]) / n);
  }
  absl::StrAppendFormat(&out, "\n  (checksum %016x)\n", checksum ^ sum);
  // An error writing the figures (e.g. a full disk) is a failure: exit 1.
  return WriteAll(stdout, out);
}

}  // namespace

const Command kBenchDecodeCommand{&kSpec, BenchDecode};

}  // namespace orderwire::cli
