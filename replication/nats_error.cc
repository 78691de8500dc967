// The transient NATS errors; see nats_error.h.
#include "replication/nats_error.h"

#include <algorithm>

namespace orderwire::replication {

bool IsTransientNatsError(const absl::Status& status) {
  return absl::IsDeadlineExceeded(status) || absl::IsUnavailable(status);
}

std::chrono::milliseconds TransientRetryWait(int failures) {
  // 100, 200, 400, 800, then 1000 ms: four doublings reach the cap.
  const int doublings = std::clamp(failures - 1, 0, 4);
  return std::min(kMaxTransientRetryWait,
                  kFirstTransientRetryWait * (1 << doublings));
}

}  // namespace orderwire::replication
