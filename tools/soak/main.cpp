// burrow-soak: mixed traffic through a real relay and agents while faults are injected (relay
// restarts, agent kills, local service restarts, a flood from one address). Fails on a corrupted
// transfer, a hang, too many failures outside fault windows, a process that dies by itself, a
// sanitizer report, or relay descriptors and memory that do not return to their baseline.
// See docs/testing.md.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "cluster.hpp"
#include "flood.hpp"
#include "traffic.hpp"

namespace burrow::soak {
namespace {

struct options {
  std::string burrow = BURROW_BINARY;
  std::chrono::seconds duration{600};
  std::uint64_t seed = 0;  // 0: from the clock, printed
  unsigned workers = 2;
  int fd_slack = 8;
  double rss_slack_percent = 15;
  double rss_slack_mib = 6;
  double min_success = 0.98;  // of transfers outside fault windows
  bool break_checker = false;
  bool keep = false;
};

void usage() {
  std::puts(
      "usage: burrow-soak [--duration 10m|60s] [--seed N] [--burrow PATH] [--workers N]\n"
      "                   [--fd-slack N] [--rss-slack-percent P] [--rss-slack-mib M]\n"
      "                   [--min-success FRACTION] [--break-checker] [--keep]\n"
      "Child process logs go to stderr; the summary to stdout. Exit 0 when every check passed.\n"
      "--break-checker corrupts the expected bytes of one transfer: the run must then fail.");
}

std::optional<std::chrono::seconds> parse_duration(std::string s) {
  if (s.empty()) return std::nullopt;
  long mult = 1;
  if (s.back() == 'm')
    mult = 60, s.pop_back();
  else if (s.back() == 's')
    s.pop_back();
  else if (s.back() == 'h')
    mult = 3600, s.pop_back();
  try {
    return std::chrono::seconds(std::stol(s) * mult);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<options> parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    try {
      if (a == "--duration") {
        auto d = parse_duration(value());
        if (!d || d->count() < 30) throw std::invalid_argument("--duration: at least 30s");
        o.duration = *d;
      } else if (a == "--seed")
        o.seed = std::stoull(value());
      else if (a == "--burrow")
        o.burrow = value();
      else if (a == "--workers")
        o.workers = static_cast<unsigned>(std::stoul(value()));
      else if (a == "--fd-slack")
        o.fd_slack = std::stoi(value());
      else if (a == "--rss-slack-percent")
        o.rss_slack_percent = std::stod(value());
      else if (a == "--rss-slack-mib")
        o.rss_slack_mib = std::stod(value());
      else if (a == "--min-success")
        o.min_success = std::stod(value());
      else if (a == "--break-checker")
        o.break_checker = true;
      else if (a == "--keep")
        o.keep = true;
      else {
        usage();
        return std::nullopt;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "burrow-soak: bad %s: %s\n", a.c_str(), e.what());
      return std::nullopt;
    }
  }
  return o;
}

int fd_count(pid_t pid) {
  int n = 0;
  if (DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (auto* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

double rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

enum class fault { relay_restart, agent_kill, service_restart, flood, baseline };
const char* name_of(fault f) {
  switch (f) {
    case fault::relay_restart:
      return "relay-restart";
    case fault::agent_kill:
      return "agent-kill";
    case fault::service_restart:
      return "service-restart";
    case fault::flood:
      return "flood";
    case fault::baseline:
      return "baseline";
  }
  return "?";
}

struct event {
  std::chrono::milliseconds at;
  fault what;
};

// Relay restarts in the first half (the last one early enough to measure a baseline for the
// final relay); the other faults with jitter through 85% of the run, each kind in turn.
std::vector<event> schedule(std::chrono::seconds duration, std::mt19937_64& rng) {
  using ms = std::chrono::milliseconds;
  const double d = static_cast<double>(ms(duration).count());
  auto at = [](double x) { return ms(static_cast<long>(x)); };
  std::uniform_real_distribution<double> jitter(-0.3, 0.3);
  std::vector<event> plan;
  const int restarts = std::max(1, static_cast<int>(duration.count() / 150));
  for (int i = 0; i < restarts; ++i) {
    double slot = (0.45 - 0.15) * d / restarts;
    plan.push_back({at(0.15 * d + slot * (i + 0.5 + jitter(rng))), fault::relay_restart});
  }
  // The baseline follows the last restart once traffic has warmed the new relay up.
  const double warm = std::clamp(0.05 * d, 4000.0, 30000.0);
  plan.push_back({at(static_cast<double>(plan.back().at.count()) + warm), fault::baseline});
  const double gap = std::clamp(d / 50, 3000.0, 12000.0);
  std::vector<fault> bag;  // each kind once per round, in a shuffled order
  for (double t = 0.1 * d; t < 0.85 * d; t += gap * (1 + jitter(rng))) {
    if (bag.empty()) {
      bag = {fault::agent_kill, fault::service_restart, fault::flood};
      std::shuffle(bag.begin(), bag.end(), rng);
    }
    plan.push_back({at(t), bag.back()});
    bag.pop_back();
  }
  // Nothing but the restart itself just before the baseline, so that it measures a quiet relay.
  const auto baseline_at = plan[static_cast<std::size_t>(restarts)].at;
  std::erase_if(plan, [&](const event& e) {
    return e.what != fault::relay_restart && e.what != fault::baseline &&
           e.at > baseline_at - ms(15000) && e.at < baseline_at;
  });
  std::stable_sort(plan.begin(), plan.end(), [](auto& a, auto& b) { return a.at < b.at; });
  return plan;
}

struct window {
  clock::time_point begin, end;
};

int run(const options& o) {
  std::printf("burrow-soak: seed %llu, duration %llds, relay --workers %u, binary %s\n",
              static_cast<unsigned long long>(o.seed), static_cast<long long>(o.duration.count()),
              o.workers, o.burrow.c_str());
  std::fflush(stdout);
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 65536);
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("burrow-soak-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(dir / "scratch");

  std::vector<std::string> failures;
  auto fail = [&](std::string why) {
    std::printf("FAIL: %s\n", why.c_str());
    std::fflush(stdout);
    failures.push_back(std::move(why));
  };

  std::mt19937_64 rng(o.seed);
  auto plan = schedule(o.duration, rng);
  std::map<std::string, int> injected;
  std::vector<window> faults;
  int flood_held = 0, flood_churned = 0;
  int baseline_fds = -1, end_fds = -1;
  double baseline_rss = 0, end_rss = 0;
  std::vector<op_record> records;
  {
    cluster c(o.burrow, dir, o.workers);
    if (!c.start()) {
      fail("the tunnels did not come up");
    } else {
      traffic t(c.where(), o.seed, dir / "scratch", o.break_checker);
      const auto t0 = clock::now();
      t.start();
      // Sleeps until `until`, checking for hung transfers and processes that died by themselves.
      bool hung = false;
      auto watch_until = [&](clock::time_point until) {
        do {
          if (auto late = t.overdue(10s); late && !hung) {
            hung = true;
            fail("hang: " + *late);
          }
          for (auto& who : c.unexpected_exits()) fail(who + " exited by itself");
          if (!failures.empty() && failures.size() > 20) return;
          std::this_thread::sleep_for(std::min<clock::duration>(200ms, until - clock::now()));
        } while (clock::now() < until);
      };
      for (const auto& e : plan) {
        watch_until(t0 + e.at);
        const auto begin = clock::now();
        const auto offset = std::chrono::duration_cast<std::chrono::milliseconds>(begin - t0);
        bool ok = true;
        std::string what = name_of(e.what);
        switch (e.what) {
          case fault::relay_restart:
            ok = c.restart_relay();
            break;
          case fault::agent_kill: {
            auto k = all_services[rng() % std::size(all_services)];
            what += std::string(" ") + name_of(k);
            ok = c.kill_and_restart_agent(k);
            break;
          }
          case fault::service_restart: {
            auto k = all_services[rng() % std::size(all_services)];
            what += std::string(" ") + name_of(k);
            ok = c.restart_service(k, std::chrono::milliseconds(100 + rng() % 900));
            break;
          }
          case fault::flood: {
            // Not a fault window: visitors from 127.0.0.1 must keep being served meanwhile.
            auto r = flood("127.0.0.2", c.where().echo, c.where().https, 200, 3s, 500, 2s);
            flood_held += r.held;
            flood_churned += r.churned;
            what += " " + std::to_string(r.held) + " held, " + std::to_string(r.churned) +
                    " churned, " + std::to_string(r.refused) + " refused";
            break;
          }
          case fault::baseline: {
            if (!t.pause(90s)) fail("traffic did not go idle for the baseline within 90 s");
            // Idle: wait until the descriptor count holds still for 3 s (a flood's connections
            // may still be closing), at most 30 s.
            const auto settle_until = clock::now() + 30s;
            int steady = 0;
            baseline_fds = fd_count(c.relay_pid());
            while (steady < 3 && clock::now() < settle_until) {
              std::this_thread::sleep_for(1s);
              const int now = fd_count(c.relay_pid());
              steady = now == baseline_fds ? steady + 1 : 0;
              baseline_fds = now;
            }
            baseline_rss = rss_mib(c.relay_pid());
            t.resume();
            what += " fds " + std::to_string(baseline_fds) + ", RSS " +
                    std::to_string(baseline_rss).substr(0, 5) + " MiB";
            break;
          }
        }
        if (e.what != fault::baseline) ++injected[name_of(e.what)];
        if (e.what != fault::flood && e.what != fault::baseline) {
          // The window ends once every tunnel works again, plus a second for stragglers.
          if (!c.wait_all_tunnels(20s)) ok = false;
          faults.push_back({begin, clock::now() + 1s});
        }
        std::printf("%7.1fs %s (%.1fs)%s\n", static_cast<double>(offset.count()) / 1000,
                    what.c_str(), std::chrono::duration<double>(clock::now() - begin).count(),
                    ok ? "" : " FAILED");
        std::fflush(stdout);
        if (!ok) fail(what + " did not recover");
      }
      watch_until(t0 + o.duration);
      t.stop();
      records = t.records();
      for (auto& who : c.unexpected_exits()) fail(who + " exited by itself");

      // Quiescent again: the relay's descriptors come back within the slack (closing idle
      // handshakes of the flood can take the relay's handshake timeout), then memory.
      const auto relay = c.relay_pid();
      const auto until = clock::now() + 20s;
      do {
        std::this_thread::sleep_for(500ms);
        end_fds = fd_count(relay);
      } while (end_fds > baseline_fds + o.fd_slack && clock::now() < until);
      // The relay hands freed heap pages back to the system every 10 s (core/heap.hpp): memory
      // is read once one such period and a second have passed.
      std::this_thread::sleep_for(11s);
      end_rss = rss_mib(relay);
    }
  }

  // Transfers that overlap a fault window may be cut short; none may deliver wrong bytes.
  auto in_fault = [&](const op_record& r) {
    return std::any_of(faults.begin(), faults.end(),
                       [&](auto& w) { return r.start < w.end && r.end > w.begin; });
  };
  struct tally {
    int ok = 0, interrupted = 0, failed_outside = 0, corrupted = 0;
  };
  std::map<op_kind, tally> by_kind;
  int outside_ok = 0, outside_bad = 0;
  std::map<std::string, int> failure_details;
  for (auto& r : records) {
    auto& t = by_kind[r.kind];
    bool fault_window = in_fault(r);
    switch (r.result) {
      case outcome::ok:
        ++t.ok;
        if (!fault_window) ++outside_ok;
        break;
      case outcome::corrupted:
        ++t.corrupted;
        fail(std::string("corrupted ") + name_of(r.kind) + " transfer: " + r.detail);
        break;
      case outcome::interrupted:
      case outcome::timed_out:
        if (fault_window) {
          ++t.interrupted;
        } else {
          ++t.failed_outside;
          ++outside_bad;
          ++failure_details[std::string(name_of(r.kind)) + ": " + r.detail];
          if (r.result == outcome::timed_out)
            fail(std::string("a ") + name_of(r.kind) + " transfer hit its deadline outside " +
                 "fault windows: " + r.detail);
        }
        break;
    }
  }
  std::printf("\n%-12s %8s %12s %15s %10s\n", "transfer", "ok", "interrupted", "failed outside",
              "corrupted");
  for (auto k : all_op_kinds) {
    auto& t = by_kind[k];
    std::printf("%-12s %8d %12d %15d %10d\n", name_of(k), t.ok, t.interrupted, t.failed_outside,
                t.corrupted);
    if (t.ok == 0 && failures.empty())
      fail(std::string("no ") + name_of(k) + " transfer succeeded");
  }
  for (auto& [why, n] : failure_details)
    std::printf("  outside fault windows: %dx %s\n", n, why.c_str());
  std::printf("faults:");
  for (auto& [name, n] : injected) std::printf(" %s %d", name.c_str(), n);
  std::printf("; flood from 127.0.0.2: %d connections held, %d churned\n", flood_held,
              flood_churned);
  const double rate = outside_ok + outside_bad == 0
                          ? 0
                          : static_cast<double>(outside_ok) / (outside_ok + outside_bad);
  std::printf("success outside fault windows: %.2f%% of %d (minimum %.2f%%)\n", rate * 100,
              outside_ok + outside_bad, o.min_success * 100);
  if (rate < o.min_success) fail("too many transfers failed outside fault windows");

  const double rss_allowed =
      baseline_rss + std::max(baseline_rss * o.rss_slack_percent / 100, o.rss_slack_mib);
  std::printf("relay descriptors: baseline %d, end %d (allowed %d)\n", baseline_fds, end_fds,
              baseline_fds + o.fd_slack);
  std::printf("relay RSS: baseline %.1f MiB, end %.1f MiB (allowed %.1f MiB)\n", baseline_rss,
              end_rss, rss_allowed);
  if (baseline_fds < 0)
    fail("no baseline was measured");
  else if (end_fds > baseline_fds + o.fd_slack)
    fail("relay descriptors did not return to baseline");
  if (baseline_fds >= 0 && end_rss > rss_allowed) fail("relay memory did not return to baseline");
  if (auto n = test::child_process::sanitizer_reports(); n > 0)
    fail(std::to_string(n) + " sanitizer report(s) from child processes (see stderr)");

  if (!o.keep) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::printf("%s (seed %llu)\n", failures.empty() ? "PASS" : "FAIL",
              static_cast<unsigned long long>(o.seed));
  for (auto& f : failures) std::printf("  - %s\n", f.c_str());
  return failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace burrow::soak

int main(int argc, char** argv) {
  auto o = burrow::soak::parse(argc, argv);
  if (!o) return 2;
  if (o->seed == 0) o->seed = std::random_device{}() | 1;
  return burrow::soak::run(*o);
}
