// Internal to orderwire::journal, do not depend on: the writer's I/O
// submission queue, over io_uring or over blocking system calls.
//
// The writer speaks to the kernel in ops (a write at an offset, an
// fdatasync, an fsync) tagged with a 64-bit user_data, and learns their
// results from completions, as io_uring works. Two implementations:
//
// - UringQueue: liburing. Writes may use registered buffers (WRITE_FIXED),
//   RWF_DSYNC, and IOSQE_IO_LINK to chain an fdatasync behind a write.
// - BlockingQueue: the documented fallback for a kernel without io_uring.
//   Submit() runs the queued ops one after the other with pwritev2() and
//   fdatasync()/fsync(), honouring links the way io_uring does (the op
//   after a failed or short write completes with -ECANCELED), and queues
//   their completions. It blocks the caller for the duration of the I/O.
//
// FaultyQueue wraps either and passes every op and completion through an
// IoFaults, so tests can inject -EAGAIN, short writes and I/O errors, and
// record what was written and synced when (tests/journal/io_recorder.h).
#ifndef ORDERWIRE_JOURNAL_INTERNAL_IO_QUEUE_H_
#define ORDERWIRE_JOURNAL_INTERNAL_IO_QUEUE_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::journal::internal {

enum class OpCode : std::uint8_t { kWrite, kFdatasync, kFsync };

struct IoOp {
  OpCode code = OpCode::kWrite;
  int fd = -1;
  const std::byte* data = nullptr;  // kWrite
  std::uint32_t length = 0;         // kWrite
  std::uint64_t offset = 0;         // kWrite
  int buffer_index = -1;            // registered buffer holding `data`, or -1
  bool dsync = false;               // kWrite: RWF_DSYNC
  bool link = false;  // the next op pushed runs only if this one succeeds
                      // in full (IOSQE_IO_LINK)
  std::uint64_t user_data = 0;
};

struct IoCompletion {
  std::uint64_t user_data = 0;
  std::int32_t result = 0;  // bytes written, 0, or -errno
};

class IoQueue {
 public:
  virtual ~IoQueue() = default;

  // Queues `op`. False if the queue is full (call Submit() first).
  virtual bool Push(const IoOp& op) noexcept = 0;
  // Starts every queued op. Returns 0 or -errno.
  virtual int Submit() noexcept = 0;
  // Moves up to out.size() completions into `out`. With `wait`, blocks
  // until at least one is available. Returns how many, or -errno.
  virtual int Reap(std::span<IoCompletion> out, bool wait) noexcept = 0;
  // Registers buffers for ops with buffer_index >= 0. Returns 0 or -errno
  // (then ops must use buffer_index -1).
  virtual int RegisterBuffers(std::span<const iovec> buffers) noexcept = 0;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
};

// Whether io_uring can be used here. Error: Unavailable with a sentence
// saying why (the errno of io_uring_queue_init, and for EPERM the sysctl
// kernel.io_uring_disabled). Cold.
absl::Status ProbeIoUring();

// An io_uring with room for `entries` ops in flight. Error as ProbeIoUring.
absl::StatusOr<std::unique_ptr<IoQueue>> MakeUringQueue(unsigned entries);

// The blocking fallback, holding up to `entries` queued ops.
std::unique_ptr<IoQueue> MakeBlockingQueue(unsigned entries);

// Test hook, installed with WriterOptions::faults: sees every op the writer
// pushes and every completion it reaps, and decides the result the writer
// sees. Without one the writer's queue is not wrapped, so none of this costs
// anything. Every method has a default that does nothing (Rewrite: keeps the
// result); a fault injector overrides Rewrite, a recorder the other two.
class IoFaults {
 public:
  virtual ~IoFaults() = default;
  // Called for every op the wrapped queue accepted, in push order, before it
  // is submitted. op.fd is open during the call, so a recorder may fstat()
  // it (which file) or fcntl(F_GETFL) it (O_DSYNC, O_SYNC, O_DIRECT), and
  // op.data holds the bytes the write will put down.
  virtual void Pushed(const IoOp& /*op*/) {}
  // Called after each Submit() of the wrapped queue. An op's `link` does not
  // reach across a submission: io_uring ends a chain at the end of the
  // batch, so the op pushed after the next Submitted() is not linked.
  virtual void Submitted() {}
  // Called for every completion of the wrapped queue with the op and its
  // real result; returns the result to report. A write's data has been
  // written either way, so reporting -EAGAIN or a short count makes the
  // writer write the same bytes again, which is harmless.
  virtual std::int32_t Rewrite(const IoOp& /*op*/, std::int32_t result) {
    return result;
  }
  // Called for every completion with the result the writer will see (after
  // Rewrite, or -ECANCELED for an op whose linked predecessor was rewritten
  // to a failure), in the order the writer sees them and before it handles
  // them: whatever durable_index() says afterwards follows from the
  // completions reported so far.
  virtual void Completed(const IoOp& /*op*/, std::int32_t /*result*/) {}
};

// Wraps `inner`, passing ops and completions through `faults`. When a write's
// result is rewritten to an error or a short count, the op linked behind it
// is reported as -ECANCELED, as io_uring would. For tests (allocates).
std::unique_ptr<IoQueue> MakeFaultyQueue(std::unique_ptr<IoQueue> inner,
                                         IoFaults* faults);

}  // namespace orderwire::journal::internal

#endif  // ORDERWIRE_JOURNAL_INTERNAL_IO_QUEUE_H_
