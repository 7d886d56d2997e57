// Test sockets: tcp_server with one thread per connection, and poll-based client helpers.
#include "harness/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace burrow::test {
namespace {

using clock = std::chrono::steady_clock;

// Fills `ss` from a numeric IPv4 or IPv6 literal.
bool make_sockaddr(const char* host, std::uint16_t port, sockaddr_storage& ss, socklen_t& len) {
  std::memset(&ss, 0, sizeof ss);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

// Milliseconds left until `until`, rounded up, for poll(); 0 once it has passed.
int remaining_ms(clock::time_point until) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(until - clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1'000'000'000));
}

// Waits for `events` on fd; false at the deadline (errno = ETIMEDOUT) or on a poll error.
bool wait_fd(int fd, short events, clock::time_point until) {
  for (;;) {
    const int ms = remaining_ms(until);
    if (ms == 0 && clock::now() >= until) {
      errno = ETIMEDOUT;
      return false;
    }
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

bool send_all_blocking(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

tcp_server::tcp_server(tcp_server_options options) : options_(std::move(options)) {
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!make_sockaddr(options_.host.c_str(), options_.port, ss, len)) {
    throw std::system_error(EINVAL, std::generic_category(), "tcp_server host " + options_.host);
  }
  listen_fd_ = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::system_error(errno, std::generic_category(), "socket");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      ::listen(listen_fd_, 4096) != 0 || ::pipe2(wake_, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    throw std::system_error(err, std::generic_category(), "tcp_server listen");
  }
  sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &blen);
  port_ = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                           : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

tcp_server::~tcp_server() {
  stop();
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void tcp_server::stop() {
  if (stopping_.exchange(true)) return;
  const char b = 1;
  [[maybe_unused]] auto n = ::write(wake_[1], &b, 1);
  acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

std::vector<std::string> tcp_server::received_prefixes() const {
  std::lock_guard lock(mutex_);
  return prefixes_;
}

void tcp_server::accept_loop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // EMFILE and friends: pause instead of spinning, as the relay does.
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;
    }
    std::lock_guard lock(mutex_);
    reap_finished();
    const std::size_t index = prefixes_.size();
    prefixes_.emplace_back();
    open_fds_.insert(fd);
    ++accepted_;
    workers_.emplace_back([this, fd, index] { serve(fd, index); });
  }
}

void tcp_server::record(std::size_t index, std::string_view bytes) {
  if (options_.record_prefix == 0) return;
  std::lock_guard lock(mutex_);
  auto& p = prefixes_[index];
  if (p.size() < options_.record_prefix) {
    p.append(bytes.substr(0, options_.record_prefix - p.size()));
  }
}

void tcp_server::serve(int fd, std::size_t index) {
  std::vector<char> buf(64 * 1024);
  const auto receive = [&]() -> ssize_t {
    for (;;) {
      const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) record(index, std::string_view(buf.data(), static_cast<std::size_t>(n)));
      return n;
    }
  };
  switch (options_.mode) {
    case server_mode::echo:
      for (;;) {
        const ssize_t n = receive();
        if (n == 0) ::shutdown(fd, SHUT_WR);
        if (n <= 0 || !send_all_blocking(fd, buf.data(), static_cast<std::size_t>(n))) break;
      }
      break;
    case server_mode::sink_hash: {
      EVP_MD_CTX* ctx = EVP_MD_CTX_new();
      EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
      ssize_t n;
      while ((n = receive()) > 0) EVP_DigestUpdate(ctx, buf.data(), static_cast<std::size_t>(n));
      unsigned char md[EVP_MAX_MD_SIZE];
      unsigned int md_len = 0;
      EVP_DigestFinal_ex(ctx, md, &md_len);
      EVP_MD_CTX_free(ctx);
      if (n == 0 && send_all_blocking(fd, reinterpret_cast<char*>(md), md_len)) {
        ::shutdown(fd, SHUT_WR);
      }
      break;
    }
    case server_mode::source: {
      const auto data = deterministic_bytes(options_.source_bytes, options_.source_seed);
      if (send_all_blocking(fd, data.data(), data.size())) {
        ::shutdown(fd, SHUT_WR);
        // Drain until the client closes, so unread input does not turn our close into a RST
        // that could destroy data still in flight to the client.
        while (receive() > 0) {
        }
      }
      break;
    }
  }
  std::lock_guard lock(mutex_);
  open_fds_.erase(fd);
  ::close(fd);
  finished_.push_back(std::this_thread::get_id());
}

void tcp_server::reap_finished() {
  // Joined here (each has at most its last few instructions left) so that a server taking
  // connections for a long time, as in the soak test, does not keep a stack per connection.
  for (auto id : finished_) {
    auto it = std::find_if(workers_.begin(), workers_.end(),
                           [&](const std::thread& t) { return t.get_id() == id; });
    if (it == workers_.end()) continue;
    it->join();
    workers_.erase(it);
  }
  finished_.clear();
}

int connect_tcp(std::uint16_t port, std::chrono::milliseconds deadline, const char* host,
                const char* source) {
  const auto until = clock::now() + deadline;
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!make_sockaddr(host, port, ss, len)) {
    errno = EINVAL;
    return -1;
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const auto fail = [fd](int err) {
    ::close(fd);
    errno = err;
    return -1;
  };
  if (source) {  // another loopback address (127.0.0.2...) stands for another visitor
    sockaddr_storage from;
    socklen_t from_len = 0;
    if (!make_sockaddr(source, 0, from, from_len) ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&from), from_len) != 0)
      return fail(errno ? errno : EINVAL);
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS) return fail(errno);
    if (!wait_fd(fd, POLLOUT, until)) return fail(errno);
    int err = 0;
    socklen_t elen = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) return fail(errno);
    if (err != 0) return fail(err);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool write_all(int fd, std::span<const std::uint8_t> data, std::chrono::milliseconds deadline) {
  const auto until = clock::now() + deadline;
  while (!data.empty()) {
    const ssize_t w = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      data = data.subspan(static_cast<std::size_t>(w));
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(fd, POLLOUT, until)) return false;
    } else if (w < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}

namespace {

// Reads until EOF or `want` bytes; nullopt on error, deadline, or more than `limit` bytes.
std::optional<std::string> read_some(int fd, std::size_t want, std::size_t limit, bool need_all,
                                     clock::time_point until) {
  std::string out;
  char buf[64 * 1024];
  while (out.size() < want) {
    const std::size_t chunk = std::min(sizeof buf, want - out.size());
    const ssize_t n = ::recv(fd, buf, chunk, MSG_DONTWAIT);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      if (out.size() > limit) return std::nullopt;
    } else if (n == 0) {
      if (need_all) return std::nullopt;
      return out;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_fd(fd, POLLIN, until)) return std::nullopt;
    } else if (errno != EINTR) {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> read_until_eof(int fd, std::chrono::milliseconds deadline,
                                          std::size_t max_bytes) {
  // Ask for one byte past the limit so an over-long answer is noticed, not silently cut.
  const std::size_t want = max_bytes == SIZE_MAX ? max_bytes : max_bytes + 1;
  auto out = read_some(fd, want, max_bytes, false, clock::now() + deadline);
  if (out && out->size() > max_bytes) return std::nullopt;
  return out;
}

std::optional<std::string> read_exact(int fd, std::size_t n, std::chrono::milliseconds deadline) {
  return read_some(fd, n, n, true, clock::now() + deadline);
}

int socket_int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t size = sizeof value;
  return ::getsockopt(fd, level, name, &value, &size) == 0 ? value : -1;
}

std::string deterministic_bytes(std::size_t n, std::uint64_t seed) {
  std::string out(n, '\0');
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) out[i + k] = static_cast<char>(z >> (8 * k));
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 0xF];
  }
  return out;
}

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace burrow::test
