// Writes the seed corpus of fuzz_journal and fuzz_config into
// DIR/fuzz_journal/ and DIR/fuzz_config/. Run at build time by
// fuzz/CMakeLists.txt, after fuzz_make_corpus (which empties DIR).
//
//   fuzz_make_parser_corpus DIR
//
// fuzz_journal seeds are damage recipes (fuzz/journal_recipe.h) for the
// valid journal fuzz_journal builds: 16 groups (g = 0..15; group 2 and 5
// take two blocks; groups 0..12 fill the first segment, file 0, and groups
// 13..15 sit at blocks 1..3 of the second, file 1; group 14 holds indexes
// 273..274 and group 15 index 275). Each seed reaches one outcome of
// docs/JOURNAL.md "Recovery". fuzz_config seeds are valid configuration
// files and set lists.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/journal_recipe.h"

namespace {

using orderwire::fuzz::RecipeWriter;

struct Seed {
  std::string_view name;
  std::vector<std::uint8_t> bytes;
};

std::vector<Seed> JournalSeeds() {
  // Offsets in the files back to back (kXorAt): the second segment starts
  // at 65536; its data ends with block 3.
  constexpr std::uint32_t kSecond = 65536;
  return {
      {"clean", {}},
      {"record_flip_is_data_loss",
       RecipeWriter().XorInGroup(3, 100, 4).bytes()},
      {"last_group_flip_is_corruption",
       RecipeWriter().XorInGroup(15, 60, 1).bytes()},
      {"garbage_past_the_end_is_torn",
       RecipeWriter().XorAt(kSecond + 4 * 4096 + 100, 0x5A).bytes()},
      {"missing_trailer_is_torn",
       RecipeWriter().ZeroInGroup(15, 20, 200).bytes()},
      {"cut_in_last_group_is_torn",
       RecipeWriter().TruncateInGroup(15, 50).bytes()},
      {"cut_at_group_boundary", RecipeWriter().TruncateInGroup(14, 0).bytes()},
      {"last_group_zeroed", RecipeWriter().ZeroInGroup(15, 0, 4096).bytes()},
      // Group 14 never landed; group 15 did, sealed while 14 was in flight
      // (stable index 274 -> 272).
      {"in_flight_remains_are_torn", RecipeWriter()
                                         .ZeroInGroup(14, 0, 4096)
                                         .XorInGroup(15, 16, 0x02)
                                         .ResealGroup(1, 3)
                                         .bytes()},
      // Group 14 missing, group 15 proves it durable.
      {"durable_hole_is_data_loss",
       RecipeWriter().ZeroInGroup(14, 0, 4096).bytes()},
      {"resealed_record_is_read",
       RecipeWriter().XorInGroup(15, 40, 0x10).ResealGroup(1, 3).bytes()},
      {"resealed_flags_are_corruption",
       RecipeWriter().XorInGroup(13, 28, 1).ResealGroup(1, 1).bytes()},
      {"wrong_record_count",
       RecipeWriter().XorInGroup(13, 24, 1).ResealGroup(1, 1).bytes()},
      {"last_segment_removed", RecipeWriter().RemoveFile(1).bytes()},
      {"first_segment_removed", RecipeWriter().RemoveFile(0).bytes()},
      {"rename_lost_prepared_segment", RecipeWriter().RenameFile(1, 0).bytes()},
      {"segment_named_wrong", RecipeWriter().RenameFile(1, 7).bytes()},
      // The first segment as next.owj.prep and the second renamed to the
      // first's name: two files claim index 1.
      {"prepared_and_named_claim_one_index",
       RecipeWriter().RenameFile(0, 0).RenameFile(0, 1).bytes()},
      {"header_flip", RecipeWriter().XorInHeader(1, 25, 0x80).bytes()},
      // A rotation cut short: the last segment's header never arrived
      // (torn when only its first group, which claims nothing stable
      // after the previous segment, made it; data loss otherwise).
      {"headerless_last_segment",
       RecipeWriter().TruncateInGroup(14, 0).ZeroAt(1, 0, 64).bytes()},
      {"headerless_last_segment_with_durable_data",
       RecipeWriter().ZeroAt(1, 0, 64).bytes()},
      // The only segment headerless, holding only the first group: a new
      // journal.
      {"headerless_only_segment", RecipeWriter()
                                      .RemoveFile(1)
                                      .TruncateInGroup(1, 0)
                                      .ZeroAt(0, 0, 64)
                                      .bytes()},
      {"lost_sector", RecipeWriter().ZeroAt(0, 3 * 4096 + 512, 512).bytes()},
      {"empty_last_segment", RecipeWriter().TruncateFile(1, 0).bytes()},
      {"short_last_segment", RecipeWriter().TruncateFile(1, 40).bytes()},
      {"version_2_is_unimplemented",
       RecipeWriter().XorInHeader(0, 8, 0x03).ResealHeader(0).bytes()},
      {"larger_capacity_then_torn", RecipeWriter()
                                        .XorInHeader(1, 34, 0x03)
                                        .ResealHeader(1)
                                        .ZeroInGroup(15, 20, 200)
                                        .bytes()},
      {"group_copied_past_the_end", RecipeWriter().CopyGroup(3, 1, 4).bytes()},
      {"group_copied_over_another", RecipeWriter().CopyGroup(14, 1, 3).bytes()},
      {"two_block_group_cut", RecipeWriter().TruncateInGroup(2, 4100).bytes()},
  };
}

struct TextSeed {
  std::string_view name;
  std::string_view text;
};

constexpr TextSeed kConfigSeeds[] = {
    // TOML configuration files (config/service_config.h).
    {"toml_every_key",
     "# Every key of the configuration file.\n"
     "[engine]\n"
     "min_instrument  = 1            # first instrument id that exists\n"
     "max_instrument  = 1024         # last instrument id that exists\n"
     "min_price       = 1            # lowest valid price, in ticks\n"
     "max_price       = 1000000000   # highest valid price, in ticks\n"
     "min_quantity    = 1            # smallest valid quantity, in lots\n"
     "max_quantity    = 1000000000   # largest valid quantity, in lots\n"
     "max_live_orders = 1048576      # capacity; BookFull beyond it\n"
     "\n"
     "[service]\n"
     "max_sessions = 1024\n"
     "max_report_history_bytes = 67108864\n"
     "session_idle_seconds = 60\n"
     "allowed_addresses = [\"127.0.0.1\", \"::1\", \"10.1.0.0/16\"]\n"
     "open_sessions = false\n"
     "open_accounts = \"any\"\n"
     "\n"
     "[sessions.7]\n"
     "accounts = [7, 8, \"100-199\"]\n"
     "addresses = [\"127.0.0.1\"]\n"
     "[sessions.9]\n"
     "accounts = \"any\"\n"
     "key_file = \"/etc/orderwire/session-9.key\"\n"},
    {"toml_engine_edges",
     "[engine]\nmin_instrument = 0\nmax_instrument = 1_048_575\n"
     "min_price = -9_223_372_036_854_775_807\n"
     "max_price = 9223372036854775807\n"
     "min_quantity = 1\nmax_quantity = 137438953471\n"
     "max_live_orders = 67108864\n"},
    {"toml_open",
     "[service]\nopen_sessions = true\n"
     "open_accounts = [\"0-18446744073709551615\"]\n"
     "allowed_addresses = \"any\"\nmax_sessions = 1000000\n"
     "session_idle_seconds = 0.25\n"},
    {"toml_v6",
     "[service]\nallowed_addresses = [\"fe80::/10\", \"2001:db8::1/128\", "
     "\"::ffff:10.0.0.1\", \"10.0.0.0/8\", \"0.0.0.0/0\"]\n"
     "[sessions.4294967295]\naccounts = [1, 1, \"5-5\", \"3-4\"]\n"
     "addresses = [\"::/0\"]\n"
     "[sessions.0]\naccounts = \"any\"\n"},
    {"toml_inline",
     "engine = { max_live_orders = 5 }\n"
     "sessions = { 3 = { accounts = [], addresses = [] } }\n"},
    {"toml_crlf", "[engine]\r\nmax_price = 5\r\n\r\n  min_price=-5 \t\r\n"},
    // Old key = value files (cli/legacy_config.h): the conversion hint
    // and `orderwire config convert`.
    {"old_engine_example",
     "# orderwire engine configuration\n"
     "min_instrument  = 1            # first instrument id that exists\n"
     "max_live_orders = 1048576      # capacity; BookFull beyond it\n"},
    {"old_service_example",
     "# The engine's limits: every key of engine/config.h.\n"
     "max_instrument  = 1024\n"
     "\n"
     "# Sessions.\n"
     "max_sessions      = 1024\n"
     "session_idle_seconds = 0.5\n"
     "allowed_addresses = 127.0.0.1, ::1, 10.1.0.0/16\n"
     "open_sessions     = false\n"
     "open_accounts     = 0-18446744073709551615\n"
     "\n"
     "session.7.accounts  = 7, 8, 100-199\n"
     "session.7.addresses = 127.0.0.1\n"
     "session.9.accounts  = any\n"
     "session.9.key_file  = keys/\"9\".key\n"},
    {"old_engine_crlf", "max_price = 5\r\n\r\n  min_price=-5 \t\r\n"},
    {"accounts", "7, 8, 100-199"},
    {"addresses", "127.0.0.1, ::1, 10.1.0.0/16"},
    // Regressions: an IPv4 address written in IPv6 matches that address; an
    // item with a NUL byte is not an address.
    {"addresses_v4_mapped", "::ffff:10.0.0.1, ::ffff:192.168.0.0/112"},
    {"addresses_nul", std::string_view("10.0.0.1\0/8, ::1", 16)},
};

bool Write(const std::filesystem::path& path, const void* data,
           std::size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_parser_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const std::filesystem::path journal_dir = dir / "fuzz_journal";
  const std::filesystem::path config_dir = dir / "fuzz_config";
  std::filesystem::create_directories(journal_dir);
  std::filesystem::create_directories(config_dir);
  bool ok = true;
  for (const Seed& seed : JournalSeeds()) {
    ok &= Write(journal_dir / std::string(seed.name), seed.bytes.data(),
                seed.bytes.size());
  }
  for (const TextSeed& seed : kConfigSeeds) {
    ok &= Write(config_dir / std::string(seed.name), seed.text.data(),
                seed.text.size());
  }
  if (!ok) {
    std::fprintf(stderr, "fuzz_make_parser_corpus: cannot write under %s\n",
                 argv[1]);
    return 1;
  }
  return 0;
}
