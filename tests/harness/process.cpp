// child_process: posix_spawn with a merged stdout/stderr pipe and one reader thread per child.
#include "harness/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

extern char** environ;

namespace burrow::test {
namespace {

constexpr std::size_t max_line = 64 * 1024;  // longer output is split so memory stays bounded

std::atomic<std::size_t> sanitizer_report_count{0};

// The first line of each sanitizer's report; UBSan's reads "file:line:col: runtime error: ...".
bool is_sanitizer_report(std::string_view line) {
  for (std::string_view marker :
       {"WARNING: ThreadSanitizer:", "ERROR: ThreadSanitizer:", "ERROR: AddressSanitizer:",
        "ERROR: LeakSanitizer:", ": runtime error: "}) {
    if (line.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::unique_ptr<child_process> child_process::start(std::string name, std::vector<std::string> argv,
                                                    std::map<std::string, std::string> extra_env) {
  if (argv.empty()) {
    std::fprintf(stderr, "[%s] no program to start\n", name.c_str());
    return nullptr;
  }
  // CLOEXEC so children started concurrently by other threads do not inherit our pipe ends.
  int out[2], stop[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return nullptr;
  if (::pipe2(stop, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return nullptr;
  }

  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (!extra_env.contains(std::string(kv.substr(0, kv.find('='))))) env.emplace_back(kv);
  }
  for (const auto& [k, v] : extra_env) env.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  // Nothing else: sockets that Asio opened without CLOEXEC (a test service's listener, a
  // visitor's connection) would otherwise live on in every child started meanwhile, keeping
  // ports bound and connections open after the test closed them.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);

  // Own process group, so the destructor can kill helpers the child started as well; default
  // signal dispositions and an empty mask whatever the test process set up.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD}) {
    sigaddset(&defaults, s);
  }
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  if (err != 0) {
    std::fprintf(stderr, "[%s] cannot start %s: %s\n", name.c_str(), args[0], std::strerror(err));
    ::close(out[0]);
    ::close(stop[0]);
    ::close(stop[1]);
    return nullptr;
  }
  std::unique_ptr<child_process> child(new child_process(std::move(name), pid, out[0], stop[1]));
  child->stop_read_fd_ = stop[0];
  child->reader_ = std::thread([c = child.get()] { c->read_loop(); });
  return child;
}

child_process::child_process(std::string name, pid_t pid, int out_fd, int stop_fd)
    : name_(std::move(name)), pid_(pid), out_fd_(out_fd), stop_fd_(stop_fd) {}

child_process::~child_process() {
  bool exited;
  {
    std::lock_guard lock(reap_mutex_);
    exited = exit_code_.has_value();
    // Not reaped yet, so the group id cannot have been reused.
    if (!exited) ::kill(-pid_, SIGKILL);
  }
  if (!exited) reap(true);
  // Helpers that outlived the child may still hold the pipe; the stop pipe ends the reader anyway.
  const char wake = 1;
  [[maybe_unused]] auto n = ::write(stop_fd_, &wake, 1);
  if (reader_.joinable()) reader_.join();
  close_fd(out_fd_);
  close_fd(stop_fd_);
  close_fd(stop_read_fd_);
}

void child_process::take_chunk(const char* buf, std::size_t n, std::vector<std::string>& fresh) {
  for (std::size_t i = 0; i < n; ++i) {
    if (buf[i] == '\n' || partial_.size() >= max_line) {
      if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
      if (is_sanitizer_report(partial_)) ++sanitizer_report_count;
      fresh.push_back(partial_);
      lines_.push_back(std::move(partial_));
      partial_.clear();
      if (buf[i] == '\n') continue;
    }
    partial_ += buf[i];
  }
}

void child_process::read_loop() {
  char buf[16 * 1024];
  std::vector<std::string> fresh;
  auto echo = [&] {
    // Outside the lock, one write per line so parallel children do not interleave mid-line.
    for (const auto& l : fresh) {
      std::string tagged = "[" + name_ + "] " + l + "\n";
      [[maybe_unused]] auto w = ::write(2, tagged.data(), tagged.size());
    }
    fresh.clear();
  };
  for (;;) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {stop_read_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) {
      // Shutting down: take what the child wrote before it died (a sanitizer report is often
      // its last words) without waiting for helpers that may still hold the pipe.
      ::fcntl(out_fd_, F_SETFL, ::fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
      for (;;) {
        const ssize_t n = ::read(out_fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        std::lock_guard lock(mutex_);
        take_chunk(buf, static_cast<std::size_t>(n), fresh);
      }
      echo();
      break;
    }
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    {
      std::lock_guard lock(mutex_);
      take_chunk(buf, static_cast<std::size_t>(n), fresh);
    }
    changed_.notify_all();
    echo();
  }
  std::string last;
  {
    std::lock_guard lock(mutex_);
    if (!partial_.empty()) {
      if (is_sanitizer_report(partial_)) ++sanitizer_report_count;
      last = partial_;
      lines_.push_back(std::move(partial_));
      partial_.clear();
    }
    eof_ = true;
  }
  changed_.notify_all();
  if (!last.empty()) {
    std::string tagged = "[" + name_ + "] " + last + "\n";
    [[maybe_unused]] auto w = ::write(2, tagged.data(), tagged.size());
  }
}

std::size_t child_process::sanitizer_reports() {
  return sanitizer_report_count.load();
}

std::optional<line_match> child_process::wait_for_line(const std::regex& re,
                                                       std::chrono::milliseconds deadline) {
  return wait_for_line_after(0, re, deadline);
}

std::optional<line_match> child_process::wait_for_line_after(std::size_t after_line_count,
                                                             const std::regex& re,
                                                             std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  std::unique_lock lock(mutex_);
  std::size_t i = after_line_count;
  for (;;) {
    for (; i < lines_.size(); ++i) {
      std::smatch m;
      if (std::regex_search(lines_[i], m, re)) {
        line_match out{lines_[i], {}};
        for (const auto& g : m) out.groups.push_back(g.str());
        return out;
      }
    }
    if (eof_) return std::nullopt;
    if (!changed_.wait_until(lock, until, [&] { return lines_.size() > i || eof_; })) {
      return std::nullopt;
    }
  }
}

std::size_t child_process::line_count() const {
  std::lock_guard lock(mutex_);
  return lines_.size();
}

std::string child_process::output() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& l : lines_) {
    out += l;
    out += '\n';
  }
  out += partial_;
  return out;
}

bool child_process::reap(bool block) {
  std::lock_guard lock(reap_mutex_);
  if (exit_code_) return true;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exit_code_ = decode_status(status);
    return true;
  }
  if (r < 0) {
    exit_code_ = -1;  // ECHILD: someone else reaped it; treat as gone
    return true;
  }
  return false;
}

void child_process::signal(int sig) {
  std::lock_guard lock(reap_mutex_);
  if (!exit_code_) ::kill(pid_, sig);
}

bool child_process::running() {
  return !reap(false);
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds deadline) {
  using namespace std::chrono;
  const auto until = steady_clock::now() + deadline;
  while (!reap(false)) {
    if (steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(2ms);
  }
  {
    std::unique_lock lock(mutex_);
    // Let the reader catch the last lines; helpers holding the pipe open cap this at a second.
    changed_.wait_until(lock, std::min(until, steady_clock::now() + 1s), [&] { return eof_; });
  }
  std::lock_guard lock(reap_mutex_);
  return exit_code_;
}

program_run run_program(std::vector<std::string> argv, std::chrono::milliseconds limit,
                        std::map<std::string, std::string> extra_env) {
  std::string name = argv.front();  // named first: argument order is unspecified
  auto p = child_process::start(name, std::move(argv), std::move(extra_env));
  if (!p) return {};
  auto code = p->wait_exit(limit);
  return {code, p->output()};
}

std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace burrow::test
