// One link slot kept alive: dial, serve the link until it closes, wait with jittered backoff,
// dial again, until the owner stops or a dial fails in a way that retrying cannot fix. Shared by
// the agent and `burrow connect`.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "link/dial.hpp"

namespace burrow::link {

struct redial_plan {
  std::string relay;  // HOST:PORT, for logs
  unsigned index = 0;
  std::chrono::milliseconds backoff_first{100};
  std::chrono::milliseconds backoff_max{5000};
  const std::atomic<bool>* stopping = nullptr;
  // One attempt; not a coroutine lambda: it returns the owner's coroutine.
  std::function<boost::asio::awaitable<dial_result>()> dial;
  // Runs a connected link until it closes; returns why it closed.
  std::function<boost::asio::awaitable<std::string>(std::shared_ptr<link>)> serve;
  // A dial failed for good (bad token, wrong pin, ...): the owner stops.
  std::function<void(const dial_result&)> fatal;
  // After the first attempt, whatever its outcome (optional).
  std::function<void()> first_attempt_done;
};

boost::asio::awaitable<void> redial(redial_plan plan);

}  // namespace burrow::link
