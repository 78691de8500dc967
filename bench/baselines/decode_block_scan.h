// The block-scan command decoder: a baseline, not part of the codec.
//
// An AVX-512 VBMI batch decoder that was measured beside the codec's pair
// step and not chosen (docs/BENCHMARKS.md "Codec", `BM_DecodeMixBlockScan`;
// how it works: decode_block_scan.cc). It lives here so that codec_bench can
// measure it again on another machine, and so that the codec tests
// (tests/codec/decode_paths_test.cc) and the differential fuzz target
// (fuzz/fuzz_decode_paths.cc) can check every decode path against an
// independent one. Library orderwire::bench_baselines; nothing shipped links
// it and nothing of it is installed.
#ifndef ORDERWIRE_BENCH_BASELINES_DECODE_BLOCK_SCAN_H_
#define ORDERWIRE_BENCH_BASELINES_DECODE_BLOCK_SCAN_H_

#include <cstddef>
#include <span>

#include "codec/command.h"

namespace orderwire::bench {

// codec::DecodeCommands by the block scan: the same DecodeBatch and the same
// first batch.frames Commands for any input (Commands after those may be
// overwritten). On a CPU without AVX-512 VBMI it is the codec's portable path
// (codec::internal::DecodeCommandsScalar). No allocation, no exception;
// never reads past `bytes`. Thread-safe (no state).
[[nodiscard]] codec::DecodeBatch DecodeCommandsBlockScan(
    std::span<const std::byte> bytes, std::span<codec::Command> out) noexcept;

}  // namespace orderwire::bench

#endif  // ORDERWIRE_BENCH_BASELINES_DECODE_BLOCK_SCAN_H_
