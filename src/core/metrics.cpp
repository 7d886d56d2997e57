// Prometheus text exposition format 0.0.4.
#include "core/metrics.hpp"

#include <fmt/format.h>

namespace burrow {

void metrics::describe(const std::string& name, std::string help, std::string type) {
  std::lock_guard lock(mutex_);
  auto& f = families_[name];
  f.help = std::move(help);
  f.type = std::move(type);
}

metrics::counter& metrics::get(const std::string& name, const std::string& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = families_[name].counters[labels];
  if (!slot) slot = std::make_unique<counter>(0);
  return *slot;
}

void metrics::gauge(const std::string& name, const std::string& labels,
                    std::function<double()> read) {
  std::lock_guard lock(mutex_);
  auto& f = families_[name];
  f.type = "gauge";
  f.gauges[labels] = std::move(read);
}

std::string metrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto series = [&out](const std::string& name, const std::string& labels, auto value) {
    if (labels.empty())
      out += fmt::format("{} {}\n", name, value);
    else
      out += fmt::format("{}{{{}}} {}\n", name, labels, value);
  };
  for (auto& [name, f] : families_) {
    if (!f.help.empty()) out += fmt::format("# HELP {} {}\n", name, f.help);
    out += fmt::format("# TYPE {} {}\n", name, f.type);
    for (auto& [labels, c] : f.counters) series(name, labels, c->load(std::memory_order_relaxed));
    for (auto& [labels, read] : f.gauges) series(name, labels, read());
  }
  return out;
}

}  // namespace burrow
