// The input format of fuzz_subscriber: the options of one
// marketdata::Subscriber, then a script of datagrams handed to it at
// advancing times. Shared by the target and by the seed generator
// (make_corpus.cc), so that both read the bytes the same way.
//
//   input = config u8, step*
//   step  = when u8, length u16 (little-endian), `length` bytes: a datagram
//
//   config bit       meaning
//   0  kFromStart    first_sequence 1 (else 0: join by snapshot)
//   1  kGivenSession session given: the golden packets' (else the first
//                    valid packet's)
//   2  kSmallHold    hold storage of 2 packets and one packet's bytes
//                    (else 16 packets and 4 packets' bytes: both small
//                    enough for a script to fill)
//   3-4              retransmit_tries - 1 (1 to 4)
//   5  kTokenWrap    first_token 0xfffe: the tokens wrap past 0 at once
//
//   when bit         meaning
//   0-3              k: the clock advances k units before the datagram
//   4-5              the unit: 1 ms, 10 ms, 100 ms or 1 s (the subscriber's
//                    timers are 50 ms, 1 s and 3 s)
//   6  kStampToken   the datagram's token field is set to the token of the
//                    last request the subscriber sent, so that the fuzzer
//                    reaches the replies to it (when the datagram holds a
//                    whole packet header)
//   7  kPoll         Poll at that time, after the datagram
//
// A step whose length runs past the input takes what is left; a step of
// length 0 hands no datagram (the clock and Poll only). At most kMaxSteps
// steps are run. Errors: none (every input is a script). Cost: O(input).
// Threading: none.
#ifndef ORDERWIRE_FUZZ_SUBSCRIBER_SCRIPT_H_
#define ORDERWIRE_FUZZ_SUBSCRIBER_SCRIPT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace orderwire::fuzz {

namespace subscriber_config {
inline constexpr std::uint8_t kFromStart = 1u << 0;
inline constexpr std::uint8_t kGivenSession = 1u << 1;
inline constexpr std::uint8_t kSmallHold = 1u << 2;
inline constexpr int kTriesShift = 3;  // 2 bits: retransmit_tries - 1
inline constexpr std::uint8_t kTokenWrap = 1u << 5;
}  // namespace subscriber_config

namespace subscriber_step {
inline constexpr std::uint8_t kStampToken = 1u << 6;
inline constexpr std::uint8_t kPoll = 1u << 7;
inline constexpr std::int64_t kUnitNs[4] = {1'000'000, 10'000'000, 100'000'000,
                                            1'000'000'000};
}  // namespace subscriber_step

inline constexpr std::size_t kMaxSubscriberSteps = 4096;

// The `when` byte of a step: advance `k` (0 to 15) units of kUnitNs[unit]
// (unit 0 to 3), then the flags.
[[nodiscard]] constexpr std::uint8_t SubscriberWhen(int k, int unit,
                                                    std::uint8_t flags = 0) {
  return static_cast<std::uint8_t>((k & 0x0f) | ((unit & 3) << 4) | flags);
}

// How far the clock advances before the step.
[[nodiscard]] constexpr std::int64_t AdvanceNs(std::uint8_t when) {
  return (when & 0x0f) * subscriber_step::kUnitNs[(when >> 4) & 3];
}

struct SubscriberStep {
  std::uint8_t when = 0;
  std::span<const std::byte> datagram;  // empty: none
};

// Reads the steps of a script (the bytes after the config byte).
class SubscriberScriptReader {
 public:
  explicit SubscriberScriptReader(std::span<const std::byte> steps)
      : rest_(steps) {}

  // The next step; false at the end of the input.
  bool Next(SubscriberStep* step) {
    if (rest_.empty()) return false;
    step->when = static_cast<std::uint8_t>(rest_[0]);
    std::size_t length = 0;
    if (rest_.size() >= 2) length = static_cast<std::size_t>(rest_[1]);
    if (rest_.size() >= 3) length |= static_cast<std::size_t>(rest_[2]) << 8;
    rest_ = rest_.subspan(std::min<std::size_t>(3, rest_.size()));
    length = std::min(length, rest_.size());
    step->datagram = rest_.first(length);
    rest_ = rest_.subspan(length);
    return true;
  }

 private:
  std::span<const std::byte> rest_;
};

// Appends one step to a script (the seed generator's side).
inline void AppendSubscriberStep(std::vector<std::byte>& script,
                                 std::uint8_t when,
                                 std::span<const std::byte> datagram) {
  script.push_back(std::byte{when});
  script.push_back(static_cast<std::byte>(datagram.size() & 0xff));
  script.push_back(static_cast<std::byte>(datagram.size() >> 8));
  script.insert(script.end(), datagram.begin(), datagram.end());
}

}  // namespace orderwire::fuzz

#endif  // ORDERWIRE_FUZZ_SUBSCRIBER_SCRIPT_H_
