// The soak's visitors: worker threads that each repeat one kind of checked transfer through the
// tunnels and record how every transfer ended.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster.hpp"

namespace burrow::soak {

using clock = std::chrono::steady_clock;

enum class op_kind { echo_short, echo_long, upload, download, https_get, https_post, e2ee_echo };
inline constexpr op_kind all_op_kinds[] = {
    op_kind::echo_short, op_kind::echo_long,  op_kind::upload,   op_kind::download,
    op_kind::https_get,  op_kind::https_post, op_kind::e2ee_echo};
const char* name_of(op_kind k);

enum class outcome {
  ok,           // completed, every byte (or the checksum) as expected
  interrupted,  // ended early by an error, a reset or a short read: allowed inside fault windows
  timed_out,    // hit its own deadline: allowed inside fault windows only
  corrupted,    // bytes that differ from what was sent or served: always a failure
};

struct op_record {
  op_kind kind = op_kind::echo_short;
  clock::time_point start{}, end{};
  outcome result = outcome::ok;
  std::string detail;  // why, for anything but ok
};

class traffic {
 public:
  // `break_checker` makes one transfer's expected bytes wrong, to show the checker fails the run.
  traffic(endpoints where, std::uint64_t seed, std::filesystem::path scratch, bool break_checker);
  ~traffic();

  void start();
  // Workers finish their current transfer and wait; true once all are idle (within `limit`).
  bool pause(std::chrono::milliseconds limit);
  void resume();
  void stop();  // ends and joins every worker

  std::vector<op_record> records() const;
  // A transfer still running `grace` past its own deadline: something hangs.
  std::optional<std::string> overdue(std::chrono::milliseconds grace) const;

 private:
  struct worker {
    op_kind kind;
    std::thread thread;
    std::atomic<std::int64_t> started_ns{0};  // steady clock; 0 when idle
    std::atomic<std::int64_t> deadline_ms{0};
  };
  void run(worker& w, std::uint64_t seed);
  op_record one(op_kind kind, std::uint64_t seed, std::chrono::milliseconds deadline);
  op_record curl_get(std::uint64_t seed, std::chrono::milliseconds deadline);
  op_record curl_post(std::uint64_t seed, std::chrono::milliseconds deadline);

  endpoints where_;
  std::uint64_t seed_;
  std::filesystem::path scratch_;
  std::atomic<bool> break_checker_;
  std::vector<std::unique_ptr<worker>> workers_;

  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false;
  int busy_ = 0;
  std::vector<op_record> records_;
};

std::chrono::milliseconds deadline_of(op_kind k);

}  // namespace burrow::soak
