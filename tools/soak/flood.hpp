// A bounded flood from one source address: many connections held open without a word (and a
// truncated TLS record on the HTTPS port), then a burst of connect-and-close.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace burrow::soak {

struct flood_result {
  int held = 0;     // connections established and held
  int churned = 0;  // connect-and-close connections that were accepted
  int refused = 0;  // connections refused or not established in time
};

// From `source` (a loopback address such as 127.0.0.2) to 127.0.0.1: `hold` connections to each
// port held for `hold_for`, then up to `churn` connect-and-close per port within `churn_for`.
flood_result flood(const std::string& source, std::uint16_t public_port, std::uint16_t https_port,
                   int hold, std::chrono::milliseconds hold_for, int churn,
                   std::chrono::milliseconds churn_for);

}  // namespace burrow::soak
