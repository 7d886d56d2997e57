// Worker threads and stop signals.
#include "core/workers.hpp"

#include <sched.h>

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/signal_set.hpp>
#include <thread>

#include "core/stop_signals.hpp"

namespace burrow {

namespace asio = boost::asio;

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned threads_for_links(unsigned links) {
  return std::max(1u, std::min(links, usable_cores()));
}

unsigned default_links() {
  return std::min(2u, usable_cores());
}

void log_link_plan(unsigned links, std::size_t threads, const std::string& relay) {
  spdlog::info("keeping {} link{} to relay {} on {} thread{}", links, links == 1 ? "" : "s", relay,
               threads, threads == 1 ? "" : "s");
}

workers::workers(unsigned count) {
  for (unsigned i = 0; i < std::max(1u, count); ++i)
    contexts_.push_back(std::make_unique<asio::io_context>(1));
}

void workers::run(std::function<void()> graceful) {
  asio::signal_set signals(at(0), SIGINT, SIGTERM);
  handle_stop_signals(
      signals, [graceful = std::move(graceful)](int) { graceful(); }, [this] { stop(); });
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  for (auto& c : contexts_) guards.push_back(asio::make_work_guard(*c));
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts_.size(); ++i)
    threads.emplace_back([c = contexts_[i].get()] { c->run(); });
  at(0).run();
  stop();
  for (auto& t : threads) t.join();
}

void workers::stop() {
  for (auto& c : contexts_) c->stop();
}

}  // namespace burrow
