// Result<T>: a value or a CodecError, for the hot path.
//
// A tiny, trivially-copyable stand-in for std::expected (C++23): no exception,
// no allocation, no message string. Cold-path code (CLI, configuration,
// recovery) uses absl::Status instead and turns a CodecError into a message
// with the byte offset where it was found. The error type is CodecError
// unless another small enum is named (Result<T, feed::CheckCause>); its value
// 0 must mean "no error".
#ifndef ORDERWIRE_CODEC_RESULT_H_
#define ORDERWIRE_CODEC_RESULT_H_

#include <type_traits>

#include "codec/error.h"

namespace orderwire::codec {

template <typename T, typename E = CodecError>
class [[nodiscard]] Result {
  static_assert(std::is_trivially_copyable_v<T>);
  static_assert(std::is_enum_v<E>, "errors are small enums; E{} is no error");

 public:
  // Implicit from a value or an error, so functions can `return value;` and
  // `return CodecError::kTruncated;`.
  // NOLINTNEXTLINE(google-explicit-constructor): implicit on purpose, above
  constexpr Result(T value) noexcept : value_(value), error_(E{}) {}
  // NOLINTNEXTLINE(google-explicit-constructor): implicit on purpose, above
  constexpr Result(E error) noexcept : empty_{}, error_(error) {}

  [[nodiscard]] constexpr bool ok() const noexcept { return error_ == E{}; }
  [[nodiscard]] constexpr E error() const noexcept { return error_; }
  // Precondition: ok().
  [[nodiscard]] constexpr const T& value() const noexcept { return value_; }
  [[nodiscard]] constexpr const T& operator*() const noexcept { return value_; }
  [[nodiscard]] constexpr const T* operator->() const noexcept {
    return &value_;
  }

 private:
  struct Empty {};
  union {
    T value_;
    Empty empty_;
  };
  E error_;
};

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_RESULT_H_
