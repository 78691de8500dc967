// UniqueFd: owns a file descriptor and closes it when it goes away.
//
// Move-only. The destructor and reset() close the descriptor they drop and
// ignore close(2)'s result; where a close error matters (a file that was
// written and not yet synced: NFS and some other file systems report
// write-back errors only there), call Close() and look at what it returns.
// Cold paths only: nothing here allocates.
#ifndef ORDERWIRE_BASE_UNIQUE_FD_H_
#define ORDERWIRE_BASE_UNIQUE_FD_H_

#include <unistd.h>

#include <cerrno>

namespace orderwire::base {

class UniqueFd {
 public:
  // An empty UniqueFd (get() == -1).
  constexpr UniqueFd() noexcept = default;
  // Takes ownership of `fd`; a negative fd makes an empty UniqueFd, so the
  // result of open(2) can be wrapped before it is checked.
  constexpr explicit UniqueFd(int fd) noexcept : fd_(fd < 0 ? -1 : fd) {}

  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  // Closes the descriptor, if any; errors are dropped (see Close()).
  ~UniqueFd() { reset(); }

  // The descriptor, or -1. Ownership stays here.
  [[nodiscard]] constexpr int get() const noexcept { return fd_; }
  [[nodiscard]] constexpr bool valid() const noexcept { return fd_ >= 0; }
  constexpr explicit operator bool() const noexcept { return valid(); }

  // Gives up ownership without closing: returns the descriptor (or -1) and
  // leaves this empty.
  [[nodiscard]] constexpr int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Closes the current descriptor (errors dropped) and takes `fd` (a
  // negative one leaves this empty). Resetting to the descriptor already
  // held does nothing.
  void reset(int fd = -1) noexcept {
    if (fd < 0) fd = -1;
    if (fd == fd_) return;
    if (fd_ >= 0) (void)::close(fd_);
    fd_ = fd;
  }

  // Closes the descriptor now and returns 0, or the errno of close(2).
  // Empty afterwards either way: on Linux the descriptor is released even
  // when close fails (EINTR included), so it must not be closed again. On
  // an empty UniqueFd, returns 0.
  [[nodiscard]] int Close() noexcept {
    if (fd_ < 0) return 0;
    const int fd = release();
    return ::close(fd) == 0 ? 0 : errno;
  }

 private:
  int fd_ = -1;
};

}  // namespace orderwire::base

#endif  // ORDERWIRE_BASE_UNIQUE_FD_H_
