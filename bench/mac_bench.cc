// Candidate MACs for authenticated datagrams (docs/PROTOCOL.md "Authenticated
// datagrams"), measured to choose one: each computes a 16-byte tag with a
// per-session key over a 1-frame datagram (59 bytes: header + one NewLimit)
// and over a full one (1472 bytes less the trailer), from a state prepared
// once per key (as the service and the client keep it), against a memcpy of
// the same bytes in the same run. docs/BENCHMARKS.md has the figures.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "auth/mac.h"
#include "benchmark/benchmark.h"

namespace {

// libsodium picks its implementations for this CPU at sodium_init(), as
// orderwire::auth does: every candidate runs after it.
const int kSodiumReady = sodium_init();

constexpr std::size_t kSmall = 12 + 47;   // header + one NewLimit
constexpr std::size_t kFull = 1472 - 16;  // a full datagram's MACed bytes

std::vector<unsigned char> Message(std::size_t size) {
  std::vector<unsigned char> m(size);
  for (std::size_t i = 0; i < size; ++i) m[i] = static_cast<unsigned char>(i);
  return m;
}

std::array<unsigned char, 32> Key() {
  std::array<unsigned char, 32> key{};
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<unsigned char>(0xA0 + i);
  }
  return key;
}

void Finish(benchmark::State& state, std::size_t size) {
  benchmark::DoNotOptimize(kSodiumReady);
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

void BM_Memcpy(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  std::vector<unsigned char> out(size);
  for (auto _ : state) {
    std::memcpy(out.data(), m.data(), size);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  Finish(state, size);
}

// BLAKE2b keyed, 16-byte output; the keyed state is prepared once and
// copied per message (the key block is compressed once, not per datagram).
void BM_Blake2b(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto key = Key();
  crypto_generichash_state keyed;
  crypto_generichash_init(&keyed, key.data(), key.size(), 16);
  unsigned char tag[16];
  for (auto _ : state) {
    crypto_generichash_state s = keyed;
    crypto_generichash_update(&s, m.data(), size);
    crypto_generichash_final(&s, tag, sizeof(tag));
    benchmark::DoNotOptimize(tag);
  }
  Finish(state, size);
}

// HMAC-SHA-256 (libsodium, no SHA-NI), truncated to 16 bytes; prepared
// inner/outer state copied per message.
void BM_HmacSha256Sodium(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto key = Key();
  crypto_auth_hmacsha256_state keyed;
  crypto_auth_hmacsha256_init(&keyed, key.data(), key.size());
  unsigned char tag[32];
  for (auto _ : state) {
    crypto_auth_hmacsha256_state s = keyed;
    crypto_auth_hmacsha256_update(&s, m.data(), size);
    crypto_auth_hmacsha256_final(&s, tag);
    benchmark::DoNotOptimize(tag);
  }
  Finish(state, size);
}

// HMAC-SHA-512/256 (libsodium), truncated to 16 bytes.
void BM_HmacSha512256Sodium(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto key = Key();
  crypto_auth_hmacsha512256_state keyed;
  crypto_auth_hmacsha512256_init(&keyed, key.data(), key.size());
  unsigned char tag[32];
  for (auto _ : state) {
    crypto_auth_hmacsha512256_state s = keyed;
    crypto_auth_hmacsha512256_update(&s, m.data(), size);
    crypto_auth_hmacsha512256_final(&s, tag);
    benchmark::DoNotOptimize(tag);
  }
  Finish(state, size);
}

// SipHash-2-4 with 128-bit output (libsodium shorthash_siphashx24), key =
// the first 16 bytes.
void BM_SipHash128(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto key = Key();
  unsigned char tag[crypto_shorthash_siphashx24_BYTES];
  for (auto _ : state) {
    crypto_shorthash_siphashx24(tag, m.data(), size, key.data());
    benchmark::DoNotOptimize(tag);
  }
  Finish(state, size);
}

// HMAC-SHA-256 through OpenSSL 3 (SHA-NI where the CPU has it): the
// one-shot HMAC() (keys the context every call), and the deprecated but
// still shipped HMAC_CTX with HMAC_Init_ex(ctx, NULL, 0, NULL, NULL) to
// reuse the prepared key.
void BM_HmacSha256OpenSslOneShot(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto key = Key();
  unsigned char tag[32];
  unsigned int len = 0;
  for (auto _ : state) {
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), m.data(), size,
         tag, &len);
    benchmark::DoNotOptimize(tag);
  }
  Finish(state, size);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void BM_HmacSha256OpenSslPrepared(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto key = Key();
  HMAC_CTX* ctx = HMAC_CTX_new();
  HMAC_Init_ex(ctx, key.data(), static_cast<int>(key.size()), EVP_sha256(),
               nullptr);
  unsigned char tag[32];
  unsigned int len = 0;
  for (auto _ : state) {
    HMAC_Init_ex(ctx, nullptr, 0, nullptr, nullptr);
    HMAC_Update(ctx, m.data(), size);
    HMAC_Final(ctx, tag, &len);
    benchmark::DoNotOptimize(tag);
  }
  HMAC_CTX_free(ctx);
  Finish(state, size);
}
#pragma GCC diagnostic pop

// The chosen one, as orderwire::auth computes and checks it.
void BM_AuthSign(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto raw = Key();
  orderwire::auth::Key key;
  std::memcpy(key.bytes.data(), raw.data(), raw.size());
  const orderwire::auth::Mac mac(key);
  orderwire::auth::Tag tag{};
  for (auto _ : state) {
    tag = mac.Compute(std::as_bytes(std::span(m)));
    benchmark::DoNotOptimize(tag);
  }
  Finish(state, size);
}

void BM_AuthVerify(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto m = Message(size);
  const auto raw = Key();
  orderwire::auth::Key key;
  std::memcpy(key.bytes.data(), raw.data(), raw.size());
  const orderwire::auth::Mac mac(key);
  const orderwire::auth::Tag tag = mac.Compute(std::as_bytes(std::span(m)));
  for (auto _ : state) {
    bool ok = mac.Verify(std::as_bytes(std::span(m)), tag);
    benchmark::DoNotOptimize(ok);
  }
  Finish(state, size);
}

#define SIZES Arg(kSmall)->Arg(kFull)
BENCHMARK(BM_Memcpy)->SIZES;
BENCHMARK(BM_Blake2b)->SIZES;
BENCHMARK(BM_HmacSha256Sodium)->SIZES;
BENCHMARK(BM_HmacSha512256Sodium)->SIZES;
BENCHMARK(BM_SipHash128)->SIZES;
BENCHMARK(BM_HmacSha256OpenSslOneShot)->SIZES;
BENCHMARK(BM_HmacSha256OpenSslPrepared)->SIZES;
BENCHMARK(BM_AuthSign)->SIZES;
BENCHMARK(BM_AuthVerify)->SIZES;

}  // namespace

BENCHMARK_MAIN();
