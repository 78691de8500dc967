// DurabilityRecorder: an IoFaults (journal/internal/io_queue.h) that
// rewrites nothing and records every write and sync the writer's queue
// runs, so a test can check that the writer never reports an index durable
// before the bytes of its group are on stable storage by the kernel's own
// rules:
//
// - a write carrying RWF_DSYNC, or any write to a file opened O_DSYNC or
//   O_SYNC, makes the bytes it reports written durable when it completes;
// - an fdatasync or fsync that completes with 0 makes durable every byte of
//   its file (inode) whose write had completed, as the writer saw it, before
//   the sync was pushed, and the bytes of the write it is linked behind
//   (IOSQE_IO_LINK in the same submission: the kernel starts it only once
//   that write completed in full).
//
// Nothing else counts: not a plain O_DIRECT write (the device may cache it,
// and the file's metadata is not written), not a sync pushed while the
// write was still in flight and not linked behind it, not a cancelled one.
//
// A write takes durability away only from the bytes it changes: a byte
// rewritten with the value it had stays durable (the O_DIRECT writer
// rewrites the block a packed group starts in, its old bytes identical).
//
// Check(durable) then asks, for every index up to `durable`, whether the
// bytes of its group (header, records, trailer) and, for a segment whose
// header the writer wrote through the queue, the segment header were
// durable by those rules at that moment.
//
// Besides, the recorder notes as errors (Check returns the first): a write
// that changes a byte of a group already reported durable, and two writes
// in flight at once on the same file that cover the same 4096-byte block
// (under O_DIRECT, where whole blocks are written, so the one landing last
// would undo the other's bytes) or the same bytes (buffered). Tests only.
#ifndef ORDERWIRE_TESTS_JOURNAL_IO_RECORDER_H_
#define ORDERWIRE_TESTS_JOURNAL_IO_RECORDER_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/wire.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "journal/internal/io_queue.h"

namespace orderwire::journal::testing {

class DurabilityRecorder : public internal::IoFaults {
 public:
  // ---- IoFaults.

  void Pushed(const internal::IoOp& op) override {
    ++seq_;
    Pending p;
    p.op = op;
    p.push_seq = seq_;
    struct stat st {};
    if (::fstat(op.fd, &st) == 0) {
      p.file = {static_cast<std::uint64_t>(st.st_dev),
                static_cast<std::uint64_t>(st.st_ino)};
    }
    FileState& file = files_[p.file];
    file.path = PathOf(op.fd);
    const int flags = ::fcntl(op.fd, F_GETFL);
    file.open_flags = flags < 0 ? 0 : flags;
    // O_SYNC includes the O_DSYNC bits on Linux.
    p.dsync = op.dsync || (flags >= 0 && (flags & O_DSYNC) == O_DSYNC);
    p.linked_behind = link_from_;
    link_from_ = op.link ? std::optional(op.user_data) : std::nullopt;
    if (op.code == internal::OpCode::kWrite) {
      CheckOverlap(op, file);
      // New bytes for the range: what was durable or written there before
      // no longer says anything about the bytes that change.
      NoteNewBytes(op, file);
      Trim(file.written, op.offset, op.offset + op.length);
      ++writes_;
      dsync_writes_ += p.dsync ? 1 : 0;
      RecognizeContent(op, p.file);
    } else {
      ++syncs_;
    }
    Log(file, absl::StrFormat("#%d push %s%s", seq_, Describe(p),
                              p.linked_behind ? " (linked behind the op "
                                                "pushed before it)"
                                              : ""));
    pending_[op.user_data] = std::move(p);
  }

  void Submitted() override { link_from_.reset(); }

  void Completed(const internal::IoOp& op, std::int32_t result) override {
    ++seq_;
    const auto it = pending_.find(op.user_data);
    if (it == pending_.end()) {
      errors_.push_back(absl::StrFormat(
          "a completion for user_data %#x that was never pushed",
          op.user_data));
      return;
    }
    const Pending p = std::move(it->second);
    pending_.erase(it);
    FileState& file = files_[p.file];
    file.in_flight.erase(op.user_data);
    Log(file,
        absl::StrFormat("#%d done %s: result %d", seq_, Describe(p), result));
    if (op.code == internal::OpCode::kWrite) {
      if (result <= 0) return;
      const Written w{.offset = op.offset,
                      .length = static_cast<std::uint64_t>(result),
                      .seq = seq_};
      last_write_[op.user_data] = {p.file, w};
      if (p.dsync) {
        file.durable.Add(w.offset, w.offset + w.length);
      } else {
        file.written.push_back(w);
      }
      return;
    }
    if (result != 0) return;  // failed or cancelled: proves nothing
    // Every write of this file completed before the sync was pushed.
    std::vector<Written> still;
    for (const Written& w : file.written) {
      if (w.seq < p.push_seq) {
        file.durable.Add(w.offset, w.offset + w.length);
      } else {
        still.push_back(w);
      }
    }
    file.written = std::move(still);
    // And the write it was linked behind.
    if (p.linked_behind) {
      const auto w = last_write_.find(*p.linked_behind);
      if (w != last_write_.end() && w->second.first == p.file) {
        const Written& lw = w->second.second;
        file.durable.Add(lw.offset, lw.offset + lw.length);
      }
    }
  }

  // ---- Checks.

  // Empty if every index <= durable was durable by the rules above at this
  // moment; otherwise a sentence saying which index, which bytes of which
  // file, and the ops seen on that file. Indexes are checked once: call it
  // with each value durable_index() takes.
  std::string Check(std::uint64_t durable) {
    if (!errors_.empty()) return errors_.front();
    while (checked_ < durable) {
      const auto it = groups_.find(checked_ + 1);
      if (it == groups_.end()) {
        return absl::StrFormat(
            "durable_index() is %d, but no write of a group starting at "
            "index %d was ever pushed",
            durable, checked_ + 1);
      }
      const Group& g = it->second;
      FileState& file = files_[g.file];
      if (!file.durable.Covers(g.offset, g.offset + g.bytes)) {
        return absl::StrFormat(
            "index %d was reported durable (durable_index() = %d) before "
            "its group (indexes %d..%d, bytes [%d, %d) of %s) was: no "
            "completed write carrying RWF_DSYNC (or to a file opened "
            "O_DSYNC/O_SYNC) and no completed fdatasync/fsync pushed after "
            "the write completed or linked behind it covers them; durable "
            "bytes of the file: %s. Ops on the file, last first:\n%s",
            checked_ + 1, durable, g.first, g.last, g.offset,
            g.offset + g.bytes, file.path, file.durable.ToString(),
            History(file));
      }
      if (file.header_via_queue &&
          !file.durable.Covers(0, kSegmentHeaderSize)) {
        return absl::StrFormat(
            "index %d was reported durable (durable_index() = %d) before "
            "the header of its segment %s was durable (durable bytes: %s). "
            "Ops on the file, last first:\n%s",
            checked_ + 1, durable, file.path, file.durable.ToString(),
            History(file));
      }
      file.reported.Add(g.offset, g.offset + g.bytes);
      checked_ = g.last;
    }
    return {};
  }

  // Errors noted so far (see above), in order.
  [[nodiscard]] const std::vector<std::string>& errors() const {
    return errors_;
  }
  // Writes pushed while another write to the same block was in flight.
  [[nodiscard]] std::uint64_t overlapping_writes() const {
    return overlapping_writes_;
  }
  // Writes that rewrote bytes already written (identical or not).
  [[nodiscard]] std::uint64_t rewrites() const { return rewrites_; }

  // Indexes up to `index` were there before the recorder was installed
  // (a reopened journal): Check() starts after them.
  void SkipTo(std::uint64_t index) { checked_ = std::max(checked_, index); }
  // The last index Check() found durable.
  [[nodiscard]] std::uint64_t checked() const { return checked_; }
  [[nodiscard]] std::uint64_t writes() const { return writes_; }
  [[nodiscard]] std::uint64_t dsync_writes() const { return dsync_writes_; }
  [[nodiscard]] std::uint64_t syncs() const { return syncs_; }
  [[nodiscard]] std::uint64_t groups() const { return groups_.size(); }
  // Segments whose header the writer wrote through the queue (rotations).
  [[nodiscard]] int queued_headers() const {
    int n = 0;
    for (const auto& [key, file] : files_) n += file.header_via_queue;
    return n;
  }

 private:
  using FileKey = std::pair<std::uint64_t, std::uint64_t>;  // dev, inode

  // Disjoint [begin, end) byte ranges, merged.
  class Ranges {
   public:
    void Add(std::uint64_t begin, std::uint64_t end) {
      if (begin >= end) return;
      auto it = ranges_.upper_bound(begin);
      if (it != ranges_.begin() && std::prev(it)->second >= begin) --it;
      while (it != ranges_.end() && it->first <= end) {
        begin = std::min(begin, it->first);
        end = std::max(end, it->second);
        it = ranges_.erase(it);
      }
      ranges_.emplace(begin, end);
    }
    void Remove(std::uint64_t begin, std::uint64_t end) {
      if (begin >= end) return;
      auto it = ranges_.upper_bound(begin);
      if (it != ranges_.begin() && std::prev(it)->second > begin) --it;
      std::vector<std::pair<std::uint64_t, std::uint64_t>> keep;
      while (it != ranges_.end() && it->first < end) {
        if (it->first < begin) keep.emplace_back(it->first, begin);
        if (it->second > end) keep.emplace_back(end, it->second);
        it = ranges_.erase(it);
      }
      for (const auto& [b, e] : keep) ranges_.emplace(b, e);
    }
    [[nodiscard]] bool Intersects(std::uint64_t begin,
                                  std::uint64_t end) const {
      auto it = ranges_.upper_bound(begin);
      if (it != ranges_.begin() && std::prev(it)->second > begin) return true;
      return it != ranges_.end() && it->first < end;
    }
    [[nodiscard]] bool Covers(std::uint64_t begin, std::uint64_t end) const {
      auto it = ranges_.upper_bound(begin);
      if (it == ranges_.begin()) return false;
      --it;
      return it->first <= begin && it->second >= end;
    }
    [[nodiscard]] std::string ToString() const {
      if (ranges_.empty()) return "none";
      std::string out;
      for (const auto& [b, e] : ranges_) {
        absl::StrAppendFormat(&out, "%s[%d, %d)", out.empty() ? "" : " ", b, e);
      }
      return out;
    }

   private:
    std::map<std::uint64_t, std::uint64_t> ranges_;
  };

  struct Written {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::uint64_t seq = 0;  // when its completion was seen
  };
  struct FileState {
    std::string path;
    int open_flags = 0;
    bool header_via_queue = false;
    Ranges durable;
    Ranges reported;                 // bytes of groups Check() found durable
    std::vector<std::byte> content;  // the bytes written, as pushed
    std::vector<Written> written;    // completed, not yet made durable
    // Writes pushed and not completed: user_data -> [begin, end).
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> in_flight;
    std::deque<std::string> log;  // the last ops, for messages
  };
  struct Pending {
    internal::IoOp op;
    FileKey file{};
    bool dsync = false;
    std::optional<std::uint64_t> linked_behind;  // user_data of the op
    std::uint64_t push_seq = 0;
  };
  struct Group {
    FileKey file{};
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    std::uint64_t first = 0;
    std::uint64_t last = 0;
  };

  static std::string PathOf(int fd) {
    char buf[4096];
    const std::string link = absl::StrFormat("/proc/self/fd/%d", fd);
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n))
                 : absl::StrFormat("fd %d", fd);
  }

  static std::string FlagsText(int flags) {
    std::string out;
    if (flags & O_DIRECT) out += " O_DIRECT";
    if ((flags & O_SYNC) == O_SYNC) {
      out += " O_SYNC";
    } else if ((flags & O_DSYNC) == O_DSYNC) {
      out += " O_DSYNC";
    }
    return out;
  }

  std::string Describe(const Pending& p) const {
    const auto f = files_.find(p.file);
    const std::string flags =
        f == files_.end() ? "" : FlagsText(f->second.open_flags);
    switch (p.op.code) {
      case internal::OpCode::kWrite:
        return absl::StrFormat(
            "write [%d, %d) %s%s, file opened%s", p.op.offset,
            p.op.offset + p.op.length,
            p.op.dsync ? "with RWF_DSYNC" : "without RWF_DSYNC",
            p.op.link ? ", link" : "", flags.empty() ? " plain" : flags);
      case internal::OpCode::kFdatasync:
        return "fdatasync";
      case internal::OpCode::kFsync:
        return "fsync";
    }
    return "?";
  }

  // Cuts [begin, end) out of completed, unsynced writes.
  static void Trim(std::vector<Written>& written, std::uint64_t begin,
                   std::uint64_t end) {
    std::vector<Written> out;
    for (const Written& w : written) {
      const std::uint64_t w_end = w.offset + w.length;
      if (w_end <= begin || w.offset >= end) {
        out.push_back(w);
        continue;
      }
      if (w.offset < begin) {
        out.push_back(
            {.offset = w.offset, .length = begin - w.offset, .seq = w.seq});
      }
      if (w_end > end) {
        out.push_back({.offset = end, .length = w_end - end, .seq = w.seq});
      }
    }
    written = std::move(out);
  }

  static void Log(FileState& file, std::string line) {
    file.log.push_back(std::move(line));
    if (file.log.size() > 12) file.log.pop_front();
  }

  static std::string History(const FileState& file) {
    std::string out;
    // Last first. (std::views::reverse would do, but clang 14's tidy
    // cannot parse it over libstdc++ 12's ranges.)
    for (auto it = file.log.rbegin(); it != file.log.rend();  // NOLINT
         ++it) {
      absl::StrAppend(&out, "  ", *it, "\n");
    }
    return out;
  }

  // Notes an error if `op` covers a block (O_DIRECT) or a byte (buffered)
  // that a write still in flight on the same file covers, and records it as
  // in flight.
  void CheckOverlap(const internal::IoOp& op, FileState& file) {
    const bool direct = (file.open_flags & O_DIRECT) != 0;
    const std::uint64_t grain = direct ? kBlockSize : 1;
    const std::uint64_t begin = op.offset / grain * grain;
    const std::uint64_t end =
        (op.offset + op.length + grain - 1) / grain * grain;
    for (const auto& [user_data, range] : file.in_flight) {
      const std::uint64_t other_begin = range.first / grain * grain;
      const std::uint64_t other_end =
          (range.second + grain - 1) / grain * grain;
      if (begin < other_end && other_begin < end) {
        ++overlapping_writes_;
        errors_.push_back(absl::StrFormat(
            "two writes in flight at once cover the same %s of %s: [%d, %d) "
            "pushed while [%d, %d) (user_data %#x) had not completed; the one "
            "completing last decides what the disk holds",
            direct ? "4096-byte block" : "bytes", file.path, op.offset,
            op.offset + op.length, range.first, range.second, user_data));
      }
    }
    file.in_flight[op.user_data] = {op.offset, op.offset + op.length};
  }

  // Takes durability from the bytes `op` changes (a byte rewritten with its
  // value stays durable); a change to a byte of a group already reported
  // durable is an error.
  void NoteNewBytes(const internal::IoOp& op, FileState& file) {
    const std::uint64_t begin = op.offset;
    const std::uint64_t end = op.offset + op.length;
    if (op.data == nullptr) {
      file.durable.Remove(begin, end);
      return;
    }
    if (begin < file.content.size()) ++rewrites_;
    if (file.content.size() < end) file.content.resize(end);
    std::uint64_t i = begin;
    while (i < end) {
      const bool same = file.content[i] == op.data[i - begin];
      std::uint64_t j = i + 1;
      while (j < end && (file.content[j] == op.data[j - begin]) == same) ++j;
      if (!same) {
        file.durable.Remove(i, j);
        if (file.reported.Intersects(i, j)) {
          errors_.push_back(absl::StrFormat(
              "a write [%d, %d) to %s changes bytes [%d, %d), which belong "
              "to a group already reported durable",
              begin, end, file.path, i, j));
        }
        std::memcpy(file.content.data() + i, op.data + (i - begin), j - i);
      }
      i = j;
    }
  }

  // Notes the segment header or every whole group (checksum verified) in a
  // write's bytes: packed groups start at any 8-byte boundary, and an
  // O_DIRECT write begins with the old bytes of the block the group starts
  // in.
  void RecognizeContent(const internal::IoOp& op, const FileKey& key) {
    if (op.data == nullptr) return;
    if (op.offset == 0 && op.length >= kSegmentHeaderSize &&
        codec::LoadLE<std::uint64_t>(op.data) == kSegmentMagic) {
      files_[key].header_via_queue = true;
      return;
    }
    if (op.offset < kFirstGroupOffset || op.offset % kGroupAlign != 0) return;
    std::uint64_t p = 0;
    while (p + kCompactGroupHeaderSize <= op.length) {
      // The magic names the framing: version 1/2's or version 3's.
      const auto magic = codec::LoadLE<std::uint32_t>(op.data + p);
      const GroupFormat format =
          GroupFormatOf(magic == kCompactGroupMagic ? kCompactFramingVersion
                                                    : std::uint16_t{2});
      if (magic == format.magic && p + format.header_size <= op.length) {
        const GroupHeader h = DecodeGroupHeader(format, op.data + p);
        const std::uint64_t trailer = p + format.header_size + h.records_bytes;
        if (h.records_bytes < kMaxGroupBytes &&
            trailer + kGroupTrailerSize <= op.length) {
          const auto t =
              LoadStruct<kGroupTrailerLayout, GroupTrailer>(op.data + trailer);
          if (t.magic == kTrailerMagic &&
              t.crc == Crc32c({op.data + p,
                               static_cast<std::size_t>(trailer - p)})) {
            groups_[h.first_index] =
                Group{.file = key,
                      .offset = op.offset + p,
                      .bytes = format.header_size + h.records_bytes +
                               kGroupTrailerSize,
                      .first = h.first_index,
                      .last = h.first_index + h.record_count - 1};
            p = AlignUpTo(trailer + kGroupTrailerSize, kGroupAlign);
            continue;
          }
        }
      }
      p += kGroupAlign;
    }
  }

  std::uint64_t seq_ = 0;
  std::optional<std::uint64_t> link_from_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::map<FileKey, FileState> files_;
  // The last completed write of each user_data: file, bytes.
  std::unordered_map<std::uint64_t, std::pair<FileKey, Written>> last_write_;
  std::map<std::uint64_t, Group> groups_;  // by first index
  std::uint64_t checked_ = 0;
  std::uint64_t writes_ = 0;
  std::uint64_t dsync_writes_ = 0;
  std::uint64_t syncs_ = 0;
  std::uint64_t overlapping_writes_ = 0;
  std::uint64_t rewrites_ = 0;
  std::vector<std::string> errors_;
};

}  // namespace orderwire::journal::testing

#endif  // ORDERWIRE_TESTS_JOURNAL_IO_RECORDER_H_
