// Child processes for end-to-end tests: start the real binary, read its log line by line with
// deadlines, signal it, and never leave it running or unreaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace burrow::test {

// A log line that matched, and its capture groups (groups[0] is the whole match).
struct line_match {
  std::string line;
  std::vector<std::string> groups;
};

class child_process {
 public:
  // Starts argv[0] (a path, not searched in PATH) with the current environment plus extra_env.
  // stdout and stderr are merged into one line log and echoed to our stderr as "[name] line".
  // Returns nullptr (after printing why) if the program cannot be started.
  static std::unique_ptr<child_process> start(std::string name, std::vector<std::string> argv,
                                              std::map<std::string, std::string> extra_env = {});

  // SIGKILLs the child's process group if the child still runs, then reaps it.
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // The first line since start (including lines already seen) where regex_search finds `re`;
  // nullopt at the deadline or once the output has ended without a match.
  std::optional<line_match> wait_for_line(const std::regex& re, std::chrono::milliseconds deadline);
  // The same, looking only at lines after the first `after_line_count` (see line_count()).
  std::optional<line_match> wait_for_line_after(std::size_t after_line_count, const std::regex& re,
                                                std::chrono::milliseconds deadline);

  std::size_t line_count() const;
  std::string output() const;  // every line so far, newline-terminated

  void signal(int sig);
  // Exit code, or 128 + signal number; nullopt if still running at the deadline. Once the child
  // has exited this also waits (within the deadline) for the rest of its output.
  std::optional<int> wait_exit(std::chrono::milliseconds deadline);
  bool running();
  pid_t pid() const { return pid_; }

  // Sanitizer reports (ThreadSanitizer, AddressSanitizer, LeakSanitizer, UBSan) seen so far in
  // the output of every child of this process. A race inside the relay is reported by the relay,
  // not by the test, so tests and tools check this (tests/harness/sanitizer_check.cpp).
  static std::size_t sanitizer_reports();

 private:
  child_process(std::string name, pid_t pid, int out_fd, int stop_fd);
  void read_loop();
  // Splits `n` bytes into lines; the lines completed are appended to `fresh`. Caller holds mutex_.
  void take_chunk(const char* buf, std::size_t n, std::vector<std::string>& fresh);
  bool reap(bool block);  // true once the exit status is known

  std::string name_;
  pid_t pid_;
  int out_fd_;   // read end of the child's stdout+stderr pipe
  int stop_fd_;  // write end of a pipe that wakes the reader for shutdown
  int stop_read_fd_ = -1;

  // Guards the line log; the reader thread takes it for each chunk it reads.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
  std::string partial_;
  bool eof_ = false;
  // Serialises waitpid and kill, so a signal never reaches a reaped (reusable) pid.
  std::mutex reap_mutex_;
  std::optional<int> exit_code_;
  std::thread reader_;
};

// A program run to its end: its exit code (nullopt if it still ran at the deadline; it is then
// killed) and its merged stdout and stderr.
struct program_run {
  std::optional<int> code;
  std::string output;
};
program_run run_program(std::vector<std::string> argv, std::chrono::milliseconds limit,
                        std::map<std::string, std::string> extra_env = {});

// A small file's text without its trailing newlines ("" when it cannot be read).
std::string read_text_file(const std::filesystem::path& p);

}  // namespace burrow::test
