// JournalWriter, the checkpoint: what it witnesses (the last group that
// became durable) and its publication, blocking at Open and Close and,
// while appending, through the I/O queue so that no fsync stalls the
// caller; see checkpoint.h and docs/JOURNAL.md "Checkpoint".
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "journal/checkpoint.h"
#include "journal/internal/io_queue.h"
#include "journal/internal/writer_support.h"
#include "journal/writer.h"

namespace orderwire::journal {

using internal::IoOp;
using internal::kTagCheckpointDirSync;
using internal::kTagCheckpointSync;
using internal::kTagCheckpointWrite;
using internal::MonotonicNs;
using internal::OpCode;
using internal::RealtimeNs;

Checkpoint JournalWriter::CurrentCheckpoint() const noexcept {
  Checkpoint c;
  c.journal_id = journal_id_;
  c.written_ns = RealtimeNs();
  c.durable_index = durable_index_;
  // A journal that holds no record yet witnesses nothing, also a seeded one
  // whose durable index is its snapshot's (WriterOptions::
  // new_journal_first_index): no group holds that index.
  if (durable_group_.first_index == 0) {
    c.durable_index = 0;
  } else if (durable_index_ != 0) {
    c.group_first_index = durable_group_.first_index;
    c.segment_first_index = durable_group_.segment_first_index;
    c.group_offset = durable_group_.offset;
    c.group_crc = durable_group_.crc;
  }
  return c;
}

absl::Status JournalWriter::WriteCheckpointNow() {
  const std::uint64_t index = durable_index_;
  if (absl::Status s = WriteCheckpoint(options_.directory, dir_fd_.get(),
                                       CurrentCheckpoint());
      !s.ok()) {
    return s;
  }
  checkpointed_index_ = index;
  ++stats_.checkpoints;
  return absl::OkStatus();
}

// Called from Poll(): starts a publication (no allocation: the paths were
// made at Open) when groups became durable
// since the last one and the interval has passed. Cheap when there is
// nothing to do (two comparisons); otherwise one open() of the temp file
// and two ops pushed (its write, and an fdatasync linked behind it).
void JournalWriter::MaybeCheckpoint() noexcept {
  if (checkpoint_state_ != CheckpointState::kIdle ||
      durable_index_ <= checkpointed_index_ || closing_) {
    return;
  }
  const std::int64_t now = MonotonicNs();
  if (now < next_checkpoint_ns_) return;
  next_checkpoint_ns_ = now + checkpoint_interval_ns_;
  checkpoint_fd_.reset(::open(checkpoint_temp_path_.c_str(),
                              O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
  if (!checkpoint_fd_) {
    CheckpointFailed(errno);
    return;
  }
  EncodeCheckpoint(CurrentCheckpoint(), checkpoint_bytes_);
  checkpoint_pending_ = durable_index_;
  IoOp write;
  write.code = OpCode::kWrite;
  write.fd = checkpoint_fd_.get();
  write.data = checkpoint_bytes_;
  write.length = static_cast<std::uint32_t>(kCheckpointSize);
  write.offset = 0;
  write.link = true;
  write.user_data = kTagCheckpointWrite;
  IoOp sync;
  sync.code = OpCode::kFdatasync;
  sync.fd = checkpoint_fd_.get();
  sync.user_data = kTagCheckpointSync;
  checkpoint_state_ = CheckpointState::kSyncingFile;
  checkpoint_ops_ = 2;
  checkpoint_error_ = 0;
  PushOp(write);
  PushOp(sync);
}

void JournalWriter::HandleCheckpoint(std::uint32_t tag,
                                     std::int32_t result) noexcept {
  --checkpoint_ops_;
  if (tag == kTagCheckpointWrite &&
      result != static_cast<std::int32_t>(kCheckpointSize) &&
      checkpoint_error_ == 0) {
    checkpoint_error_ = result < 0 ? -result : EIO;
  } else if (tag != kTagCheckpointWrite && result < 0 &&
             checkpoint_error_ == 0) {
    checkpoint_error_ = -result;
  }
  if (checkpoint_ops_ != 0) return;
  if (checkpoint_error_ != 0) {
    CheckpointFailed(checkpoint_error_);
    return;
  }
  if (checkpoint_state_ == CheckpointState::kSyncingFile) {
    // The new checkpoint is on disk under its temp name: put it in place
    // (atomically), then make the name durable.
    checkpoint_fd_.reset();
    if (::rename(checkpoint_temp_path_.c_str(), checkpoint_path_.c_str()) !=
        0) {
      CheckpointFailed(errno);
      return;
    }
    IoOp dir_sync;
    dir_sync.code = OpCode::kFsync;
    dir_sync.fd = dir_fd_.get();
    dir_sync.user_data = kTagCheckpointDirSync;
    checkpoint_state_ = CheckpointState::kSyncingDir;
    checkpoint_ops_ = 1;
    PushOp(dir_sync);
    return;
  }
  checkpointed_index_ = checkpoint_pending_;
  ++stats_.checkpoints;
  checkpoint_state_ = CheckpointState::kIdle;
}

// A publication that failed leaves the previous checkpoint in place (it is
// still true, only older); the next one is tried after the interval and at
// Close, which reports its error.
void JournalWriter::CheckpointFailed(int err) noexcept {
  ++stats_.checkpoint_failures;
  last_checkpoint_errno_ = err;
  checkpoint_fd_.reset();
  checkpoint_state_ = CheckpointState::kIdle;
}

}  // namespace orderwire::journal
