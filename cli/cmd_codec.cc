// `orderwire encode` and `orderwire decode`: frames to and from JSON Lines.
//
// Both validate their whole input before writing anything, so a failure
// never leaves a partial result that looks complete on standard output.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/kind_table.h"
#include "jsonl/jsonl.h"

namespace orderwire::cli {
namespace {

const CommandSpec kEncodeSpec{
    .name = "encode",
    .synopsis = "[--hex] < frames.jsonl > frames.bin",
    .summary = "Encode JSON Lines (one frame per line) into binary frames.",
    .details =
        "Each line is one JSON object: \"kind\" (the docs/PROTOCOL.md name, "
        "e.g.\n"
        "\"NewLimit\"), \"sequence\", and every body field under its\n"
        "docs/PROTOCOL.md name, integers as JSON numbers. Blank lines are "
        "skipped.\n"
        "The frames are written back to back to standard output. On the first\n"
        "bad line nothing is written and the error names the line and column.",
    .flags = {{"hex", "", "", "write one lower-case hex line per frame"}},
};

const CommandSpec kDecodeSpec{
    .name = "decode",
    .synopsis = "[--hex | --datagram] < input",
    .summary =
        "Decode binary frames into JSON Lines (the form 'encode' reads).",
    .details =
        "Reads frames back to back from standard input (or, with --hex, hex\n"
        "text holding one or more whole frames per line). With --datagram,\n"
        "each input line is the hex of one datagram: its header is printed as\n"
        "a {\"kind\":\"Datagram\",...} line, then its frames. Input is "
        "checked\n"
        "in full before anything is printed; an error names the byte offset\n"
        "(and line) and the reason, and the exit status is 1.",
    .flags = {{"hex", "", "", "input is hex text, whole frames per line"},
              {"datagram", "", "", "input is one hex datagram per line"}},
};

// Appends the JSON lines of the frames in `bytes` to `out`.
// `line` is the input line they are on (0: binary input, no lines).
absl::Status DecodeFrames(std::span<const std::byte> bytes, std::size_t line,
                          std::string& out) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const auto frame = codec::FrameView::Parse(bytes.subspan(pos));
    if (!frame.ok()) {
      return FrameError(line, pos, frame.error(), bytes.subspan(pos));
    }
    absl::StrAppend(&out, jsonl::FrameToJson(*frame), "\n");
    pos += frame->size();
  }
  return absl::OkStatus();
}

absl::Status Decode(const Args& args) {
  if (args.Bool("hex") && args.Bool("datagram")) {
    return UsageError(
        "--hex and --datagram are exclusive (a datagram line is already hex)");
  }
  absl::StatusOr<std::vector<std::byte>> input = ReadAll(stdin);
  if (!input.ok()) return input.status();
  std::string out;
  if (!args.Bool("hex") && !args.Bool("datagram")) {
    if (absl::Status s = DecodeFrames(*input, 0, out); !s.ok()) return s;
    return WriteAll(stdout, out);
  }
  std::size_t line_number = 0;
  for (std::string_view line : SplitLines(AsText(*input))) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    absl::StatusOr<std::vector<std::byte>> bytes = FromHex(line);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line %d, %s", line_number, bytes.status().message()));
    }
    if (!args.Bool("datagram")) {
      if (absl::Status s = DecodeFrames(*bytes, line_number, out); !s.ok()) {
        return s;
      }
      continue;
    }
    std::size_t error_offset = 0;
    const auto datagram = codec::DatagramView::Parse(
        *bytes, codec::FrameFilter::kAny, &error_offset);
    if (!datagram.ok()) {
      return InputError(line_number, error_offset,
                        absl::StrFormat("datagram rejected: %s (%s)",
                                        codec::Name(datagram.error()),
                                        codec::Describe(datagram.error())));
    }
    absl::StrAppend(&out, jsonl::DatagramHeaderToJson(*datagram), "\n");
    for (codec::FrameView frame : *datagram) {
      absl::StrAppend(&out, jsonl::FrameToJson(frame), "\n");
    }
  }
  return WriteAll(stdout, out);
}

absl::Status Encode(const Args& args) {
  absl::StatusOr<std::vector<std::byte>> input = ReadAll(stdin);
  if (!input.ok()) return input.status();
  const std::string_view text = AsText(*input);
  const bool hex = args.Bool("hex");
  std::vector<std::byte> frames;
  std::string hex_out;
  std::byte frame[codec::kMaxFrameSize];
  std::size_t line_number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    absl::StatusOr<std::size_t> size = jsonl::JsonToFrame(line, frame);
    if (!size.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("line %d: %s", line_number, size.status().message()));
    }
    if (hex) {
      absl::StrAppend(&hex_out, ToHex({frame, *size}), "\n");
    } else {
      frames.insert(frames.end(), frame, frame + *size);
    }
  }
  return hex ? WriteAll(stdout, hex_out) : WriteAll(stdout, frames);
}

}  // namespace

const Command kEncodeCommand{&kEncodeSpec, Encode};

const Command kDecodeCommand{&kDecodeSpec, Decode};

}  // namespace orderwire::cli
