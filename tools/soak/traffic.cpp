// Checked transfers: echoes of random bytes, uploads answered with their SHA-256, downloads of a
// known stream, HTTPS GET and POST through the share URL with curl.
#include "traffic.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace burrow::soak {
namespace {

using test::child_process;

struct read_result {
  std::string data;
  bool eof = false;
  bool timed_out = false;
};

// Reads until EOF, an error, the deadline, or more than `max` bytes.
read_result read_all(int fd, std::size_t max, clock::time_point until) {
  read_result r;
  char buf[64 * 1024];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      return r;
    }
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return r;
    if (n == 0) continue;
    ssize_t got = ::recv(fd, buf, sizeof buf, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return r;
    if (got == 0) {
      r.eof = true;
      return r;
    }
    r.data.append(buf, static_cast<std::size_t>(got));
    if (r.data.size() > max) return r;
  }
}

// What `got` says about a transfer that should have delivered exactly `expected`.
void judge(op_record& rec, const std::string& expected, const read_result& got) {
  const auto& d = got.data;
  std::size_t common = std::min(d.size(), expected.size());
  auto diff =
      std::mismatch(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(common), expected.begin());
  if (diff.first != d.begin() + static_cast<std::ptrdiff_t>(common)) {
    rec.result = outcome::corrupted;
    rec.detail = "byte " + std::to_string(diff.first - d.begin()) + " of " +
                 std::to_string(expected.size()) + " differs";
  } else if (d.size() > expected.size()) {
    rec.result = outcome::corrupted;
    rec.detail = "more bytes than expected (" + std::to_string(d.size()) + " > " +
                 std::to_string(expected.size()) + ")";
  } else if (d.size() == expected.size() && got.eof) {
    rec.result = outcome::ok;
  } else if (got.timed_out) {
    rec.result = outcome::timed_out;
    rec.detail = "deadline after " + std::to_string(d.size()) + " of " +
                 std::to_string(expected.size()) + " bytes";
  } else {
    rec.result = outcome::interrupted;
    rec.detail = std::string(got.eof ? "early EOF" : "error") + " after " +
                 std::to_string(d.size()) + " of " + std::to_string(expected.size()) + " bytes";
  }
}

std::string to_hex(std::string_view raw) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Sends `data` (in a thread of its own, so both directions flow at once) and half-closes, while
// reading everything that comes back; judges the echo.
void echo_transfer(op_record& rec, std::uint16_t port, const std::string& data,
                   const std::string& expected, clock::time_point until) {
  int fd = test::connect_tcp(
      port, std::chrono::duration_cast<std::chrono::milliseconds>(until - clock::now()));
  if (fd < 0) {
    rec.result = clock::now() >= until ? outcome::timed_out : outcome::interrupted;
    rec.detail = std::string("connect: ") + std::strerror(errno);
    return;
  }
  std::thread writer([&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock::now());
    if (test::write_all(fd, data, left)) ::shutdown(fd, SHUT_WR);
  });
  auto got = read_all(fd, expected.size() + 64 * 1024, until);
  ::shutdown(fd, SHUT_RDWR);  // ends the writer if the read ended first
  writer.join();
  ::close(fd);
  judge(rec, expected, got);
}

}  // namespace

const char* name_of(op_kind k) {
  switch (k) {
    case op_kind::echo_short:
      return "echo-short";
    case op_kind::echo_long:
      return "echo-long";
    case op_kind::upload:
      return "upload";
    case op_kind::download:
      return "download";
    case op_kind::https_get:
      return "https-get";
    case op_kind::https_post:
      return "https-post";
    case op_kind::e2ee_echo:
      return "e2ee-echo";
  }
  return "?";
}

std::chrono::milliseconds deadline_of(op_kind k) {
  switch (k) {
    case op_kind::echo_short:
    case op_kind::e2ee_echo:
      return 10s;
    case op_kind::https_get:
    case op_kind::https_post:
      return 30s;
    default:
      return 60s;
  }
}

traffic::traffic(endpoints where, std::uint64_t seed, std::filesystem::path scratch,
                 bool break_checker)
    : where_(std::move(where)),
      seed_(seed),
      scratch_(std::move(scratch)),
      break_checker_(break_checker) {}

traffic::~traffic() {
  stop();
}

void traffic::start() {
  // Many short connections, a few long transfers, and HTTPS alongside.
  const op_kind plan[] = {op_kind::echo_short, op_kind::echo_short, op_kind::echo_short,
                          op_kind::e2ee_echo,  op_kind::echo_long,  op_kind::upload,
                          op_kind::download,   op_kind::https_get,  op_kind::https_post};
  std::uint64_t n = 0;
  for (auto k : plan) {
    auto w = std::make_unique<worker>();
    w->kind = k;
    workers_.push_back(std::move(w));
  }
  for (auto& w : workers_) {
    worker* raw = w.get();
    std::uint64_t s = seed_ * 1000 + ++n;
    w->thread = std::thread([this, raw, s] { run(*raw, s); });
  }
}

void traffic::run(worker& w, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  while (!stopping_) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !paused_ || stopping_; });
      if (stopping_) break;
      ++busy_;
    }
    const auto deadline = deadline_of(w.kind);
    w.deadline_ms = deadline.count();
    w.started_ns = clock::now().time_since_epoch().count();
    auto rec = one(w.kind, rng(), deadline);
    w.started_ns = 0;
    const bool failed = rec.result != outcome::ok;
    {
      std::lock_guard lock(mutex_);
      records_.push_back(std::move(rec));
      --busy_;
    }
    changed_.notify_all();
    // Short connections come in a steady stream; the others pause briefly between transfers,
    // and a failed transfer is not retried in a tight loop while a tunnel is down.
    if (failed)
      std::this_thread::sleep_for(50ms);
    else if (w.kind != op_kind::echo_short && w.kind != op_kind::e2ee_echo)
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 200));
  }
}

op_record traffic::one(op_kind kind, std::uint64_t seed, std::chrono::milliseconds deadline) {
  op_record rec;
  rec.kind = kind;
  rec.start = clock::now();
  const auto until = rec.start + deadline;
  std::mt19937_64 rng(seed);
  auto size_in = [&](std::size_t lo, std::size_t hi) { return lo + rng() % (hi - lo + 1); };
  auto checker_sabotage = [&](std::string& expected) {
    if (!expected.empty() && break_checker_.exchange(false)) expected[expected.size() / 2] ^= 1;
  };
  switch (kind) {
    case op_kind::echo_short:
    case op_kind::e2ee_echo: {
      auto data = test::deterministic_bytes(size_in(1, 64 * 1024), seed);
      auto expected = data;
      checker_sabotage(expected);
      echo_transfer(rec, kind == op_kind::echo_short ? where_.echo : where_.connect, data, expected,
                    until);
      break;
    }
    case op_kind::echo_long: {
      auto data = test::deterministic_bytes(size_in(2 << 20, 6 << 20), seed);
      echo_transfer(rec, where_.echo, data, data, until);
      break;
    }
    case op_kind::upload: {
      auto data = test::deterministic_bytes(size_in(1 << 20, 8 << 20), seed);
      int fd = test::connect_tcp(where_.sink, deadline);
      if (fd < 0) {
        rec.result = outcome::interrupted;
        rec.detail = std::string("connect: ") + std::strerror(errno);
        break;
      }
      bool sent = test::write_all(
          fd, data, std::chrono::duration_cast<std::chrono::milliseconds>(until - clock::now()));
      ::shutdown(fd, SHUT_WR);
      read_result got;
      if (sent) got = read_all(fd, 64, until);
      ::close(fd);
      if (!sent) {
        rec.result = clock::now() >= until ? outcome::timed_out : outcome::interrupted;
        rec.detail = "upload cut short";
      } else if (got.eof && got.data.size() == 32) {
        bool same = to_hex(got.data) == test::sha256_hex(data);
        rec.result = same ? outcome::ok : outcome::corrupted;
        if (!same) rec.detail = "the service hashed different bytes";
      } else if (got.data.size() > 32) {
        rec.result = outcome::corrupted;
        rec.detail = "more than a 32-byte digest came back";
      } else {
        rec.result = got.timed_out ? outcome::timed_out : outcome::interrupted;
        rec.detail = "digest: " + std::to_string(got.data.size()) + " bytes";
      }
      break;
    }
    case op_kind::download: {
      static const std::string expected = test::deterministic_bytes(source_bytes, source_seed);
      int fd = test::connect_tcp(where_.source, deadline);
      if (fd < 0) {
        rec.result = outcome::interrupted;
        rec.detail = std::string("connect: ") + std::strerror(errno);
        break;
      }
      auto got = read_all(fd, expected.size() + 64 * 1024, until);
      ::close(fd);
      judge(rec, expected, got);
      break;
    }
    case op_kind::https_get:
      return curl_get(seed, deadline);
    case op_kind::https_post:
      return curl_post(seed, deadline);
  }
  rec.end = clock::now();
  return rec;
}

namespace {

// curl through the share URL; the exit code, or nullopt if it outlived its deadline.
std::optional<int> run_curl(const endpoints& where, std::vector<std::string> extra,
                            const std::string& path, std::chrono::milliseconds deadline,
                            std::string& output) {
  const std::string authority = where.web_host + ":" + std::to_string(where.https);
  std::vector<std::string> argv{"/usr/bin/curl",
                                "-sS",
                                "--max-time",
                                std::to_string(deadline.count() / 1000),
                                "--cacert",
                                where.web_ca,
                                "--resolve",
                                authority + ":127.0.0.1",
                                "-w",
                                "\nstatus=%{http_code}\n"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("https://" + authority + path);
  auto p = child_process::start("curl", std::move(argv));
  if (!p) return -1;
  auto code = p->wait_exit(deadline + 5s);
  output = p->output();
  return code;
}

void judge_curl(op_record& rec, std::optional<int> code, const std::string& output) {
  if (!code) {
    rec.result = outcome::timed_out;
    rec.detail = "curl outlived its --max-time";
  } else if (*code == 28) {
    rec.result = outcome::timed_out;
    rec.detail = "curl: deadline";
  } else if (*code != 0) {
    rec.result = outcome::interrupted;
    rec.detail = "curl exit " + std::to_string(*code);
  } else if (output.find("status=200") == std::string::npos) {
    rec.result = outcome::interrupted;  // a 502 while the local service restarts, for one
    auto at = output.find("status=");
    rec.detail = at == std::string::npos ? "no status" : output.substr(at, 10);
  } else {
    rec.result = outcome::ok;  // the caller checks the body
  }
}

}  // namespace

op_record traffic::curl_get(std::uint64_t seed, std::chrono::milliseconds deadline) {
  op_record rec;
  rec.kind = op_kind::https_get;
  rec.start = clock::now();
  std::mt19937_64 rng(seed);
  const std::size_t n = 1024 + rng() % (2 << 20);
  const auto body = scratch_ / fmt::format("get-{}", seed);
  std::string output;
  auto code =
      run_curl(where_, {"-o", body.string()}, "/bytes/" + std::to_string(n), deadline, output);
  judge_curl(rec, code, output);
  auto got = read_file(body);
  std::filesystem::remove(body);
  auto expected = test::pattern_bytes(0, n);
  if (break_checker_.exchange(false)) expected[n / 2] ^= 1;
  if (rec.result == outcome::ok) {
    judge(rec, expected, read_result{.data = got, .eof = true});
    if (rec.result != outcome::ok) rec.result = outcome::corrupted;  // curl said it was whole
  } else if (!got.empty() && output.find("status=200") != std::string::npos) {
    // A 200 cut short must still be a prefix of the right bytes (a 502 page is not the body).
    op_record prefix = rec;
    judge(prefix, expected, read_result{.data = got});
    if (prefix.result == outcome::corrupted) rec = prefix;
  }
  rec.end = clock::now();
  return rec;
}

op_record traffic::curl_post(std::uint64_t seed, std::chrono::milliseconds deadline) {
  op_record rec;
  rec.kind = op_kind::https_post;
  rec.start = clock::now();
  std::mt19937_64 rng(seed);
  const std::size_t n = 1 + rng() % (1 << 20);
  const auto upload = scratch_ / fmt::format("post-{}", seed);
  const auto data = test::deterministic_bytes(n, seed);
  std::ofstream(upload, std::ios::binary).write(data.data(), static_cast<std::streamsize>(n));
  std::string output;
  auto code = run_curl(where_,
                       {"--data-binary", fmt::format("@{}", upload.string()), "-H",
                        "Content-Type: application/octet-stream"},
                       "/sha256", deadline, output);
  std::filesystem::remove(upload);
  judge_curl(rec, code, output);
  if (rec.result == outcome::ok) {
    // fmt, not operator+: GCC 12's -Wrestrict misfires on "literal" + string at -O3 here.
    std::string expected = fmt::format("{} {}", test::sha256_hex(data), n);
    if (break_checker_.exchange(false)) expected[0] = expected[0] == '0' ? '1' : '0';
    if (output.find(expected) == std::string::npos) {
      rec.result = outcome::corrupted;
      rec.detail = "the service hashed different bytes";
    }
  }
  rec.end = clock::now();
  return rec;
}

bool traffic::pause(std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  paused_ = true;
  return changed_.wait_for(lock, limit, [&] { return busy_ == 0; });
}

void traffic::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  changed_.notify_all();
}

void traffic::stop() {
  stopping_ = true;
  changed_.notify_all();
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

std::vector<op_record> traffic::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::optional<std::string> traffic::overdue(std::chrono::milliseconds grace) const {
  const auto now = clock::now().time_since_epoch().count();
  for (auto& w : workers_) {
    auto started = w->started_ns.load();
    if (started == 0) continue;
    auto ran =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock::duration(now - started));
    if (ran > std::chrono::milliseconds(w->deadline_ms.load()) + grace)
      return std::string(name_of(w->kind)) + " transfer running for " +
             std::to_string(ran.count()) + " ms";
  }
  return std::nullopt;
}

}  // namespace burrow::soak
