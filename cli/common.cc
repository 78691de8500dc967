// The plumbing every orderwire subcommand shares; see common.h.
#include "cli/common.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/legacy_config.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "jsonl/jsonl.h"

namespace orderwire::cli {
namespace {

// The payload that marks a status as a usage error.
constexpr std::string_view kUsagePayload = "orderwire.cli/usage-error";

const FlagSpec* Find(const CommandSpec& spec, std::string_view name) {
  for (const FlagSpec& flag : spec.flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------
// Exit statuses

absl::Status UsageError(std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(
      absl::string_view(message.data(), message.size()));
  const absl::string_view url(kUsagePayload.data(), kUsagePayload.size());
  status.SetPayload(url, absl::Cord("usage"));
  return status;
}

absl::Status FlagError(std::string_view flag, const absl::Status& status) {
  return UsageError(absl::StrFormat("--%s: %s", flag, status.message()));
}

bool IsUsageError(const absl::Status& status) {
  if (status.ok()) return false;
  const absl::string_view url(kUsagePayload.data(), kUsagePayload.size());
  return status.GetPayload(url).has_value();
}

int ExitStatus(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  return IsUsageError(status) ? kExitUsage : kExitFailure;
}

// ---------------------------------------------------------------------------
// Flags

void Args::Set(std::string_view name, std::string value) {
  values_[std::string(name)] = std::move(value);
}

bool Args::Has(std::string_view name) const {
  return values_.contains(std::string(name));
}

std::string Args::String(std::string_view name) const {
  if (auto it = values_.find(std::string(name)); it != values_.end()) {
    return it->second;
  }
  if (const FlagSpec* flag = Find(*spec_, name); flag != nullptr) {
    return std::string(flag->default_value);
  }
  return "";
}

absl::StatusOr<std::int64_t> Args::Int(std::string_view name, std::int64_t min,
                                       std::int64_t max) const {
  const std::string text = String(name);
  std::int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return UsageError(
        absl::StrFormat("--%s: '%s' is not an integer", name, text));
  }
  if (value < min || value > max) {
    return UsageError(absl::StrFormat("--%s: %d is out of range [%d, %d]", name,
                                      value, min, max));
  }
  return value;
}

absl::StatusOr<std::uint64_t> Args::Uint(std::string_view name,
                                         std::uint64_t min,
                                         std::uint64_t max) const {
  const std::string text = String(name);
  std::uint64_t value = 0;
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return UsageError(absl::StrFormat(
        "--%s: '%s' is not a non-negative integer", name, text));
  }
  if (min == 0 && value > max) {
    return UsageError(
        absl::StrFormat("--%s: %d is larger than %d", name, value, max));
  }
  if (value < min || value > max) {
    return UsageError(absl::StrFormat("--%s: %d is out of range [%d, %d]", name,
                                      value, min, max));
  }
  return value;
}

absl::StatusOr<double> Args::Double(std::string_view name, double min,
                                    double max) const {
  const std::string text = String(name);
  double value = 0;
  if (!absl::SimpleAtod(text, &value)) {
    return UsageError(
        absl::StrFormat("--%s: '%s' is not a number", name, text));
  }
  if (!(value >= min && value <= max)) {
    return UsageError(absl::StrFormat("--%s: %g is out of range [%g, %g]", name,
                                      value, min, max));
  }
  return value;
}

absl::Status Args::Require(std::string_view name) const {
  if (Has(name)) return absl::OkStatus();
  const FlagSpec* flag = Find(*spec_, name);
  if (flag != nullptr && !flag->value_name.empty()) {
    return UsageError(
        absl::StrFormat("--%s %s is required", name, flag->value_name));
  }
  return UsageError(absl::StrFormat("--%s is required", name));
}

// ---------------------------------------------------------------------------
// Configuration files

absl::StatusOr<engine::EngineConfig> LoadEngineConfig(const std::string& path) {
  // The same file as serve's: every table is checked, the [engine] one used;
  // key files are not read (match does not need them).
  absl::StatusOr<config::ServiceConfig> config =
      LoadServiceConfig(path, /*load_key_files=*/false);
  if (!config.ok()) return config.status();
  return config->engine;
}

absl::StatusOr<config::ServiceConfig> LoadServiceConfig(const std::string& path,
                                                        bool load_key_files) {
  // One loader (config/service_config.h), the one its tests exercise:
  // errors name the file, line and column; a relative key_file is read from
  // the file's directory; a file in the old key = value form gets the way
  // to convert it (cli/legacy_config.h).
  return config::LoadServiceConfig(path, load_key_files,
                                   legacy::IsLegacyServiceConfig);
}

absl::StatusOr<config::ServiceConfig> ServiceConfigFlag(const Args& args) {
  if (!args.Has("config")) return config::ServiceConfig{};
  return LoadServiceConfig(args.String("config"));
}

// ---------------------------------------------------------------------------
// Report sinks

ReportSink ReportSink::Stdout(ReportFormat format) {
  return ReportSink(stdout, false, "standard output", format);
}

absl::StatusOr<ReportSink> ReportSink::Open(std::string_view flag,
                                            const std::string& path,
                                            ReportFormat format) {
  if (path == "-") return Stdout(format);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrFormat("--%s %s: cannot open: %s", flag,
                                               path, std::strerror(errno)));
  }
  return ReportSink(file, true, path, format);
}

ReportSink::ReportSink(ReportSink&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)),
      owned_(std::exchange(other.owned_, false)),
      name_(std::move(other.name_)),
      format_(other.format_),
      text_(std::move(other.text_)) {}

ReportSink& ReportSink::operator=(ReportSink&& other) noexcept {
  if (this != &other) {
    if (owned_ && file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(other.file_, nullptr);
    owned_ = std::exchange(other.owned_, false);
    name_ = std::move(other.name_);
    format_ = other.format_;
    text_ = std::move(other.text_);
  }
  return *this;
}

ReportSink::~ReportSink() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

absl::Status ReportSink::Write(std::span<const std::byte> frames) {
  // Buffered by stdio (no flush per call: replay writes one frame at a
  // time); Finish() flushes and reports what a late write error says.
  const auto put = [&](std::span<const std::byte> bytes) -> absl::Status {
    if (!bytes.empty() &&
        std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
      return absl::UnavailableError(
          absl::StrFormat("writing %s: %s", name_, std::strerror(errno)));
    }
    return absl::OkStatus();
  };
  if (format_ == ReportFormat::kBinary) return put(frames);
  text_.clear();
  for (std::size_t pos = 0; pos < frames.size();) {
    const auto frame = codec::FrameView::Parse(frames.subspan(pos));
    if (!frame.ok()) {
      return absl::InternalError(
          FormatFrameError(0, pos, frame.error(), frames.subspan(pos)));
    }
    text_ += jsonl::FrameToJson(*frame);
    text_ += '\n';
    pos += frame->size();
  }
  return put(std::as_bytes(std::span(text_.data(), text_.size())));
}

absl::Status ReportSink::Finish() {
  if (file_ == nullptr) return absl::OkStatus();
  absl::Status status;
  if (std::fflush(file_) != 0) {
    status = absl::UnavailableError(
        absl::StrFormat("writing %s: %s", name_, std::strerror(errno)));
  }
  if (owned_) {
    if (std::fclose(file_) != 0 && status.ok()) {
      status = absl::UnavailableError(
          absl::StrFormat("closing %s: %s", name_, std::strerror(errno)));
    }
    file_ = nullptr;
    owned_ = false;
  }
  return status;
}

// ---------------------------------------------------------------------------
// Errors in the input

std::string FormatInputError(std::size_t line, std::size_t offset,
                             std::string_view reason) {
  if (line == 0) return absl::StrFormat("byte offset %d: %s", offset, reason);
  return absl::StrFormat("line %d, byte offset %d: %s", line, offset, reason);
}

std::string DescribeFrameError(codec::CodecError error,
                               std::span<const std::byte> at) {
  std::string detail;
  if (at.size() > codec::kKindOffset) {
    const auto kind = static_cast<std::uint8_t>(at[codec::kKindOffset]);
    const codec::KindInfo& info = codec::kKindTable[kind];
    if (error == codec::CodecError::kUnknownKind) {
      detail = absl::StrFormat(" 0x%02x", kind);
    } else if (error == codec::CodecError::kNotACommand) {
      detail = absl::StrFormat(" (%s)", info.name);
    } else if (error == codec::CodecError::kTruncated && info.frame_size != 0) {
      detail = absl::StrFormat(" (%s needs %d bytes, %d left)", info.name,
                               info.frame_size, at.size());
    }
  } else if (error == codec::CodecError::kTruncated) {
    detail =
        absl::StrFormat(" (%d bytes left, a frame header needs 9)", at.size());
  }
  return absl::StrFormat("%s%s", codec::Describe(error), detail);
}

std::string FormatFrameError(std::size_t line, std::size_t offset,
                             codec::CodecError error,
                             std::span<const std::byte> at) {
  return FormatInputError(line, offset, DescribeFrameError(error, at));
}

absl::Status InputError(std::size_t line, std::size_t offset,
                        std::string_view reason) {
  return absl::InvalidArgumentError(FormatInputError(line, offset, reason));
}

absl::Status FrameError(std::size_t line, std::size_t offset,
                        codec::CodecError error,
                        std::span<const std::byte> at) {
  return absl::InvalidArgumentError(FormatFrameError(line, offset, error, at));
}

// ---------------------------------------------------------------------------
// Byte I/O

absl::StatusOr<std::vector<std::byte>> ReadAll(std::FILE* file) {
  std::vector<std::byte> data;
  std::byte chunk[1 << 16];
  while (true) {
    const std::size_t n = std::fread(chunk, 1, sizeof(chunk), file);
    data.insert(data.end(), chunk, chunk + n);
    if (n < sizeof(chunk)) {
      if (std::ferror(file)) {
        return absl::UnavailableError(
            absl::StrFormat("reading input: %s", std::strerror(errno)));
      }
      break;
    }
  }
  return data;
}

absl::StatusOr<std::vector<std::byte>> ReadFile(std::string_view what,
                                                const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrFormat("%s %s: cannot open: %s", what,
                                               path, std::strerror(errno)));
  }
  absl::StatusOr<std::vector<std::byte>> bytes = ReadAll(file);
  std::fclose(file);
  if (!bytes.ok()) {
    return absl::UnavailableError(
        absl::StrFormat("%s %s: %s", what, path, bytes.status().message()));
  }
  return bytes;
}

absl::Status WriteAll(std::FILE* file, std::span<const std::byte> bytes,
                      std::string_view what) {
  if (!bytes.empty() &&
      std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
    return absl::UnavailableError(
        absl::StrFormat("writing %s: %s", what, std::strerror(errno)));
  }
  if (std::fflush(file) != 0) {
    return absl::UnavailableError(
        absl::StrFormat("writing %s: %s", what, std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteAll(std::FILE* file, std::string_view text,
                      std::string_view what) {
  return WriteAll(file, std::as_bytes(std::span(text.data(), text.size())),
                  what);
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, end));
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string ToHex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    const auto v = static_cast<unsigned>(b);
    out.push_back(kDigits[v >> 4]);
    out.push_back(kDigits[v & 0xF]);
  }
  return out;
}

absl::StatusOr<std::vector<std::byte>> FromHex(std::string_view text) {
  std::vector<std::byte> out;
  out.reserve(text.size() / 2);
  int pending = -1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("column %d: '%c' is not a hex digit", i, c));
    }
    if (pending < 0) {
      pending = v;
    } else {
      out.push_back(static_cast<std::byte>((pending << 4) | v));
      pending = -1;
    }
  }
  if (pending >= 0) {
    return absl::InvalidArgumentError("odd number of hex digits");
  }
  return out;
}

}  // namespace orderwire::cli
