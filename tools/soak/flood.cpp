// The flood: non-blocking sockets bound to the flooding address, all polled together.
#include "flood.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <vector>

namespace burrow::soak {
namespace {

using clock = std::chrono::steady_clock;

// A non-blocking connect from source to 127.0.0.1:port; the fd, or -1.
int start_connect(const std::string& source, std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waits (up to `limit`) for every pending connect; closes and drops those that failed.
void settle(std::vector<int>& fds, std::chrono::milliseconds limit, int& refused) {
  const auto until = clock::now() + limit;
  std::vector<int> done;
  while (!fds.empty() && clock::now() < until) {
    std::vector<pollfd> p;
    for (int fd : fds) p.push_back({fd, POLLOUT, 0});
    int n = ::poll(p.data(), p.size(), 100);
    if (n <= 0) continue;
    std::vector<int> pending;
    for (auto& e : p) {
      if (e.revents == 0) {
        pending.push_back(e.fd);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(e.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) {
        done.push_back(e.fd);
      } else {
        ::close(e.fd);
        ++refused;
      }
    }
    fds.swap(pending);
  }
  for (int fd : fds) {
    ::close(fd);
    ++refused;
  }
  fds.swap(done);
}

}  // namespace

flood_result flood(const std::string& source, std::uint16_t public_port, std::uint16_t https_port,
                   int hold, std::chrono::milliseconds hold_for, int churn,
                   std::chrono::milliseconds churn_for) {
  flood_result r;
  std::vector<int> pub, tls;
  for (int i = 0; i < hold; ++i) {
    if (int fd = start_connect(source, public_port); fd >= 0)
      pub.push_back(fd);
    else
      ++r.refused;
    if (int fd = start_connect(source, https_port); fd >= 0)
      tls.push_back(fd);
    else
      ++r.refused;
  }
  settle(pub, std::chrono::milliseconds(3000), r.refused);
  settle(tls, std::chrono::milliseconds(3000), r.refused);
  // A TLS record header that promises 512 bytes of ClientHello which never come.
  const unsigned char partial[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
  for (int fd : tls) [[maybe_unused]] auto n = ::send(fd, partial, sizeof partial, MSG_NOSIGNAL);
  r.held = static_cast<int>(pub.size() + tls.size());
  std::this_thread::sleep_for(hold_for);
  for (int fd : pub) ::close(fd);
  for (int fd : tls) ::close(fd);

  const auto until = clock::now() + churn_for;
  for (int i = 0; i < churn && clock::now() < until; ++i) {
    for (auto port : {public_port, https_port}) {
      std::vector<int> one;
      if (int fd = start_connect(source, port); fd >= 0)
        one.push_back(fd);
      else {
        ++r.refused;
        continue;
      }
      settle(one, std::chrono::milliseconds(1000), r.refused);
      r.churned += static_cast<int>(one.size());
      for (int fd : one) ::close(fd);
    }
  }
  return r;
}

}  // namespace burrow::soak
