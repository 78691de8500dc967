#include "service/feed_ring.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace orderwire::service {
namespace {

// Entries: one per 64 bytes of ring. Packets of fewer bytes (a packet of
// one short message is 12 bytes of blocks) are held by entry count.
constexpr std::size_t kBytesPerEntry = 64;
// A reader overtaken by the writer while it copied tries this many times.
constexpr int kCopyAttempts = 8;

}  // namespace

FeedRing::FeedRing(std::size_t bytes)
    : data_size_(std::bit_ceil(std::max(bytes, kMinFeedRingBytes))),
      data_(data_size_),
      data_mask_(data_size_ - 1),
      entries_(data_size_ / kBytesPerEntry),
      entry_mask_(data_size_ / kBytesPerEntry - 1) {
  data_.Populate();  // no page fault in Append (feed_ring.h "Cost")
  entries_.Populate();
}

void FeedRing::Reset(std::uint64_t next_sequence) noexcept {
  write_position_ = 0;
  written_ = 0;
  oldest_ = 0;
  writer_next_ = next_sequence;
  committed_.store(next_sequence, std::memory_order_relaxed);
  empty_next_.store(next_sequence, std::memory_order_relaxed);
  low_water_.store(0, std::memory_order_relaxed);
  entries_written_.store(0, std::memory_order_release);
}

void FeedRing::Append(std::uint64_t first_sequence, std::uint16_t count,
                      std::span<const std::byte> blocks) noexcept {
  const std::size_t capacity = data_size_;
  std::uint64_t position = write_position_;
  // A packet is never split: one that would cross the end starts at 0.
  if ((position & data_mask_) + blocks.size() > capacity) {
    position += capacity - (position & data_mask_);
  }
  const std::uint64_t end = position + blocks.size();
  const std::uint64_t byte_low = end > capacity ? end - capacity : 0;
  const std::uint64_t slots = entry_mask_ + 1;
  while (oldest_ < written_ && (Load(entry(oldest_).position) < byte_low ||
                                written_ - oldest_ >= slots)) {
    ++oldest_;
  }
  // Readers that copy what follows see the raised mark (seqlock order).
  low_water_.store(oldest_, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(data_.data() + (position & data_mask_), blocks.data(),
              blocks.size());
  Entry& e = entry(written_);
  Store(e.first_sequence, first_sequence);
  Store(e.position, position);
  Store(e.length, static_cast<std::uint32_t>(blocks.size()));
  Store(e.count, static_cast<std::uint32_t>(count));
  write_position_ = end;
  writer_next_ = first_sequence + count;
  ++written_;
  entries_written_.store(written_, std::memory_order_release);
}

FeedRing::Range FeedRing::Retained() const noexcept {
  for (int attempt = 0; attempt < kCopyAttempts; ++attempt) {
    // The mark first: an entry count read after it is at least as new, so
    // [low, written) never runs backwards.
    const std::uint64_t low = low_water_.load(std::memory_order_acquire);
    const std::uint64_t written =
        entries_written_.load(std::memory_order_acquire);
    if (written == 0) {
      const std::uint64_t next = empty_next_.load(std::memory_order_relaxed);
      return {next, next};
    }
    if (low >= written) continue;  // the writer is between the two stores
    Entry& first = entry(low);
    Entry& last = entry(written - 1);
    const Range range{Load(first.first_sequence),
                      Load(last.first_sequence) + Load(last.count)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (low_water_.load(std::memory_order_relaxed) == low &&
        range.first_retained < range.next_sequence) {
      return range;
    }
  }
  // Overtaken every time (the writer wraps the ring faster than this
  // thread reads two entries): nothing is said to be retained.
  overtaken_.fetch_add(1, std::memory_order_relaxed);
  return {0, 0};
}

std::uint64_t FeedRing::Copy(std::uint64_t first, std::size_t max,
                             std::vector<std::byte>& out) const {
  for (int attempt = 0; attempt < kCopyAttempts; ++attempt) {
    out.clear();
    const std::uint64_t low = low_water_.load(std::memory_order_acquire);
    const std::uint64_t written =
        entries_written_.load(std::memory_order_acquire);
    if (written == 0) return 0;
    if (low >= written) continue;  // the writer is between the two stores
    // The last entry of [low, written) whose first sequence <= first.
    std::uint64_t lo = low;
    std::uint64_t hi = written;
    std::uint64_t touched = written;  // the lowest entry read
    while (hi - lo > 1) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      touched = std::min(touched, mid);
      if (Load(entry(mid).first_sequence) <= first) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    touched = std::min(touched, lo);
    const std::uint64_t start = lo;
    const std::uint64_t start_sequence = Load(entry(start).first_sequence);
    std::uint64_t covered = start_sequence;  // one past the copied messages
    for (std::uint64_t i = start; i < written && covered < first + max; ++i) {
      Entry& e = entry(i);
      const std::uint64_t position = Load(e.position);
      const std::uint32_t length = Load(e.length);
      // A torn entry (validated below) must not send the copy outside.
      if ((position & data_mask_) + length > data_size_) break;
      const std::size_t at = out.size();
      out.resize(at + length);
      std::memcpy(out.data() + at, data_.data() + (position & data_mask_),
                  length);
      covered = Load(e.first_sequence) + Load(e.count);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (low_water_.load(std::memory_order_relaxed) > touched) continue;
    if (first < start_sequence || first >= covered) return 0;
    return start_sequence;
  }
  overtaken_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

}  // namespace orderwire::service
