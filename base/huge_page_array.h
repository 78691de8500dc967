// HugePageArray<T>: a fixed-size array for large, long-lived tables (the
// engine's, the market-data feed's ring), in anonymous memory the kernel
// may back with transparent huge pages (2 MiB) where it offers them
// (`madvise(MADV_HUGEPAGE)`; the Debian default, transparent_hugepage=madvise,
// honours it).
//
// Why: `serve --snapshot-every` forks the serving loop (service/service.h),
// and fork() copies the page table entries of every page the process has
// touched before it returns, so the loop stalls for as long as that copy
// takes: one entry per 2 MiB huge page rather than 512, so far less
// (docs/BENCHMARKS.md "fork() and huge pages"). A huge page also needs one
// TLB entry where 4 KiB pages need 512. Copy-on-write after a fork is still
// per 4 KiB page (the kernel splits a huge page on the first write).
//
// Memory never touched is never backed: a large capacity costs address
// space, not resident memory (the first touch of each 2 MiB page zeroes the
// whole page at once), unless Populate() backs all of it up front, for an
// array a hot path will fill and must not take page faults in. Elements are not
// constructed: T must be trivially default constructible and destructible, and
// starts zeroed. Allocation happens once, in the constructor (cold); failure
// throws std::bad_alloc like `new`. Move-only.
#ifndef ORDERWIRE_BASE_HUGE_PAGE_ARRAY_H_
#define ORDERWIRE_BASE_HUGE_PAGE_ARRAY_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace orderwire::base {

// The size of a transparent huge page on x86-64 and arm64 (4 KiB granule).
inline constexpr std::size_t kHugePageSize = std::size_t{2} << 20;

template <typename T>
class HugePageArray {
  static_assert(std::is_trivially_default_constructible_v<T> &&
                std::is_trivially_destructible_v<T>);
  static_assert(alignof(T) <= 4096);

 public:
  HugePageArray() = default;
  // `size` elements, zeroed. Throws std::bad_alloc when the address space
  // cannot be had.
  explicit HugePageArray(std::size_t size) : size_(size) {
    if (size == 0) return;
    if (size > SIZE_MAX / sizeof(T) - kHugePageSize) throw std::bad_alloc();
    mapped_bytes_ = RoundUp(size * sizeof(T));
    // Mapped one huge page larger, then trimmed to a 2 MiB-aligned start:
    // the kernel backs only aligned 2 MiB ranges with huge pages.
    const std::size_t reserve = mapped_bytes_ + kHugePageSize;
    void* p = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    auto* const start = static_cast<std::byte*>(p);
    const auto address = reinterpret_cast<std::uintptr_t>(start);
    const std::size_t head = RoundUp(address) - address;
    std::byte* const aligned = start + head;
    if (head > 0) ::munmap(start, head);
    const std::size_t tail = reserve - head - mapped_bytes_;
    if (tail > 0) ::munmap(aligned + mapped_bytes_, tail);
    data_ = reinterpret_cast<T*>(aligned);
    // Advice, not a requirement: without THP (EINVAL) the array works in
    // 4 KiB pages.
    ::madvise(data_, mapped_bytes_, MADV_HUGEPAGE);
  }
  HugePageArray(HugePageArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        mapped_bytes_(std::exchange(other.mapped_bytes_, 0)) {}
  HugePageArray& operator=(HugePageArray&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    }
    return *this;
  }
  HugePageArray(const HugePageArray&) = delete;
  HugePageArray& operator=(const HugePageArray&) = delete;
  ~HugePageArray() { Release(); }

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // Bytes of address space mapped: size() * sizeof(T) rounded up to 2 MiB.
  [[nodiscard]] std::size_t mapped_bytes() const noexcept {
    return mapped_bytes_;
  }
  // Backs every page now, writable (madvise MADV_POPULATE_WRITE; a write
  // of a zero to each 4 KiB page where the kernel lacks it, before Linux
  // 5.14), so no later access faults a page in; the memory is then
  // resident. Cold: O(mapped_bytes()), ~0.2 ms a MiB on a VM of
  // docs/BENCHMARKS.md. Contents unchanged.
  void Populate() noexcept {
    if (data_ == nullptr) return;
    if (::madvise(data_, mapped_bytes_, MADV_POPULATE_WRITE) == 0) return;
    auto* const bytes = reinterpret_cast<volatile std::byte*>(data_);
    for (std::size_t at = 0; at < mapped_bytes_; at += 4096) {
      bytes[at] = bytes[at];
    }
  }
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept {
    return data_[i];
  }

 private:
  static constexpr std::size_t RoundUp(std::size_t n) noexcept {
    return (n + kHugePageSize - 1) & ~(kHugePageSize - 1);
  }
  void Release() noexcept {
    if (data_ != nullptr) ::munmap(data_, mapped_bytes_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_bytes_ = 0;
};

}  // namespace orderwire::base

#endif  // ORDERWIRE_BASE_HUGE_PAGE_ARRAY_H_
