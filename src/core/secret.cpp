// Secrets and their files: random tokens, SHA-256, constant-time comparison, private files.
#include "core/secret.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace burrow {
namespace {

[[noreturn]] void throw_crypto_error(std::string_view what) {
  char buf[256] = "unknown OpenSSL error";
  if (unsigned long code = ERR_get_error(); code != 0) ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  throw std::runtime_error(std::string(what) + ": " + buf);
}

[[noreturn]] void throw_file_error(std::string_view what, const std::filesystem::path& path,
                                   int err) {
  throw std::runtime_error(std::string(what) + " " + path.string() + ": " +
                           std::generic_category().message(err));
}

std::string base64url(std::span<const std::uint8_t> in) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((in.size() * 4 + 2) / 3);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    std::uint32_t v = (std::uint32_t{in[i]} << 16) | (std::uint32_t{in[i + 1]} << 8) | in[i + 2];
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (std::size_t rest = in.size() - i; rest > 0) {
    std::uint32_t v = std::uint32_t{in[i]} << 16;
    if (rest == 2) v |= std::uint32_t{in[i + 1]} << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (rest == 2) out += alphabet[(v >> 6) & 63];
  }
  return out;
}

// Closes a descriptor on scope exit unless released.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string random_token() {
  std::array<std::uint8_t, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    throw_crypto_error("RAND_bytes failed");
  auto token = "brw_" + base64url(bytes);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return token;
}

std::array<std::uint8_t, 32> sha256(std::string_view data) {
  std::array<std::uint8_t, 32> md{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != md.size())
    throw_crypto_error("SHA-256 failed");
  return md;
}

std::string hex(std::span<const std::uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::size_t from_hex(std::string_view text, std::span<std::uint8_t> out) {
  if (text.empty() || text.size() % 2 || text.size() / 2 > out.size()) return 0;
  for (std::size_t i = 0; i < text.size() / 2; ++i) {
    const char* p = text.data() + 2 * i;
    auto [end, ec] = std::from_chars(p, p + 2, out[i], 16);
    if (ec != std::errc() || end != p + 2) return 0;
  }
  return text.size() / 2;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Hashing first gives equal-length inputs to CRYPTO_memcmp, so a length mismatch costs the
  // same as a content mismatch.
  auto ha = sha256(a);
  auto hb = sha256(b);
  bool same_hash = CRYPTO_memcmp(ha.data(), hb.data(), ha.size()) == 0;
  return same_hash && a.size() == b.size();
}

void write_private_file(const std::filesystem::path& path, std::string_view content) {
  // The temporary sits in the same directory so rename() replaces the file atomically.
  std::array<std::uint8_t, 8> suffix{};
  if (RAND_bytes(suffix.data(), static_cast<int>(suffix.size())) != 1)
    throw_crypto_error("RAND_bytes failed");
  auto tmp = path;
  tmp += ".tmp-" + hex(suffix);

  fd_guard guard{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
  if (guard.fd < 0) throw_file_error("cannot create", tmp, errno);
  auto fail = [&](std::string_view what, int err) {
    ::close(guard.fd);
    guard.fd = -1;
    ::unlink(tmp.c_str());
    throw_file_error(what, tmp, err);
  };
  for (std::size_t done = 0; done < content.size();) {
    ssize_t n = ::write(guard.fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(guard.fd) != 0) fail("cannot fsync", errno);
  int fd = guard.fd;
  guard.fd = -1;
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_file_error("cannot close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_file_error("cannot rename into", path, err);
  }
  // Make the rename itself durable; failure here is not worth failing the write for.
  auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_file(const std::filesystem::path& path) {
  fd_guard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (guard.fd < 0) throw_file_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(guard.fd, &st) != 0) throw_file_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("not a regular file: " + path.string());
  if (static_cast<std::uint64_t>(st.st_size) > max_read_file_size)
    throw std::runtime_error("file too large (over 1 MiB): " + path.string());
  // Sized from fstat, one byte over to notice a file that grew since; never the whole limit,
  // which would keep 1 MiB of touched memory per file read.
  std::string data(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(guard.fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_file_error("cannot read", path, errno);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
    if (done == data.size() && done <= max_read_file_size)
      data.resize(std::min(done * 2, max_read_file_size + 1));
  }
  if (done > max_read_file_size)
    throw std::runtime_error("file too large (over 1 MiB): " + path.string());
  data.resize(done);
  data.shrink_to_fit();
  return data;
}

}  // namespace burrow
