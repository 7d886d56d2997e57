// capture: tshark as a child process, kept in step with the kernel by probe datagrams; raw_bytes
// and decrypted_bytes run tshark over the finished file.
#include "harness/capture.hpp"

#include "harness/process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace burrow::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// tshark reading a file of a few thousand packets takes well under a second.
constexpr auto analysis_deadline = 60s;

std::chrono::milliseconds left(clock::time_point until) {
  return std::max(0ms, std::chrono::ceil<std::chrono::milliseconds>(until - clock::now()));
}

[[noreturn]] void fail(const std::string& what, const child_process* tshark) {
  std::string message = "capture: " + what;
  if (tshark) message += "\ntshark said:\n" + tshark->output();
  throw std::runtime_error(message);
}

// tshark from PATH; scripts/setup.sh installs it, so its absence is a failure, not a skip.
std::string tshark_path() {
  const char* env = std::getenv("PATH");
  std::string_view dirs = env ? env : "/usr/bin:/bin";
  for (;;) {
    const auto colon = dirs.find(':');
    const fs::path candidate = fs::path(dirs.substr(0, colon)) / "tshark";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  fail("tshark not found in PATH; install it with scripts/setup.sh (apt-get install tshark)",
       nullptr);
}

// A developer's own Wireshark preferences must not change what the tests see.
std::map<std::string, std::string> tshark_env(const fs::path& pcap) {
  return {{"WIRESHARK_CONFIG_DIR", (pcap.parent_path() / "no-wireshark-profile").string()}};
}

std::string join(const std::vector<std::uint16_t>& ports, std::string_view separator) {
  std::string out;
  for (auto p : ports) {
    if (!out.empty()) out += separator;
    out += std::to_string(p);
  }
  return out;
}

// Runs tshark over a finished capture and returns its standard output. A shell redirection keeps
// that apart from standard error, which goes to the test log as usual.
std::string run_tshark(const fs::path& pcap, std::vector<std::string> args) {
  const fs::path out = pcap.string() + ".tshark-output";
  std::vector<std::string> argv{"/bin/sh", "-c", R"(exec "$0" "$@" >"$BURROW_TSHARK_OUTPUT")",
                                tshark_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto env = tshark_env(pcap);
  env.emplace("BURROW_TSHARK_OUTPUT", out.string());
  auto tshark = child_process::start("tshark -r", argv, env);
  if (!tshark) fail("cannot start /bin/sh to run tshark", nullptr);
  const auto code = tshark->wait_exit(analysis_deadline);
  if (!code) fail("tshark -r " + pcap.string() + " did not finish in time", tshark.get());
  if (*code != 0) fail("tshark -r exited with " + std::to_string(*code), tshark.get());
  std::ifstream in(out, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ignored;
  fs::remove(out, ignored);
  return text.str();
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Appends the bytes spelled by `hex`; false, appending nothing, if it is not whole hex bytes.
bool append_hex(std::string_view hex, std::string& out) {
  if (hex.size() % 2 != 0 ||
      !std::all_of(hex.begin(), hex.end(), [](char c) { return hex_digit(c) >= 0; }))
    return false;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(hex_digit(hex[i]) * 16 + hex_digit(hex[i + 1]));
  return true;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace

capture::capture(fs::path pcap, std::vector<std::uint16_t> tcp_ports,
                 std::chrono::milliseconds deadline)
    : pcap_(std::move(pcap)) {
  const auto until = clock::now() + deadline;
  if (tcp_ports.empty()) throw std::invalid_argument("capture: no TCP ports to capture");
  probe_fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  try {
    sockaddr_in self{};
    self.sin_family = AF_INET;
    self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof self;
    if (probe_fd_ < 0 || ::bind(probe_fd_, reinterpret_cast<sockaddr*>(&self), sizeof self) != 0 ||
        ::getsockname(probe_fd_, reinterpret_cast<sockaddr*>(&self), &len) != 0)
      fail(std::string("cannot make the probe socket: ") + std::strerror(errno), nullptr);
    const std::string filter = "tcp port " + join(tcp_ports, " or tcp port ") + " or udp port " +
                               std::to_string(ntohs(self.sin_port));
    std::error_code ignored;
    fs::remove(pcap_, ignored);
    tshark_ = child_process::start(
        "tshark", {tshark_path(), "-i", "lo", "-f", filter, "-F", "pcap", "-w", pcap_.string()},
        tshark_env(pcap_));
    if (!tshark_) fail("cannot start tshark", nullptr);
    // "Capturing on 'Loopback: lo'" comes before tshark even starts its capture child (dumpcap);
    // this line comes once dumpcap has the interface open, the filter set and the file created.
    if (!tshark_->wait_for_line(std::regex(R"(Capture started\.)"), left(until)))
      fail("tshark did not start capturing on lo (capturing needs root or CAP_NET_RAW)",
           tshark_.get());
    sync(until);
  } catch (...) {
    if (probe_fd_ >= 0) ::close(probe_fd_);
    throw;  // tshark_'s destructor kills tshark and dumpcap
  }
}

capture::~capture() {
  if (tshark_ && tshark_->running()) {
    tshark_->signal(SIGINT);
    tshark_->wait_exit(5s);
  }
  if (probe_fd_ >= 0) ::close(probe_fd_);
}

void capture::stop(std::chrono::milliseconds deadline) {
  if (stopped_) return;
  stopped_ = true;
  const auto until = clock::now() + deadline;
  // dumpcap reads the kernel's ring only every few hundred milliseconds and drops what it has not
  // read when told to stop, so first wait until what the test sent has been written out.
  sync(until);
  tshark_->signal(SIGINT);
  const auto code = tshark_->wait_exit(left(until));
  if (!code) fail("tshark did not end after SIGINT", tshark_.get());
  if (*code != 0) fail("tshark exited with " + std::to_string(*code), tshark_.get());
}

void capture::sync(clock::time_point until) {
  std::random_device rd;
  std::string probe = "burrow-capture-probe-";
  for (int i = 0; i < 4; ++i) probe += std::to_string(rd());
  sockaddr_in self{};
  socklen_t len = sizeof self;
  ::getsockname(probe_fd_, reinterpret_cast<sockaddr*>(&self), &len);
  if (::sendto(probe_fd_, probe.data(), probe.size(), 0, reinterpret_cast<sockaddr*>(&self), len) !=
      static_cast<ssize_t>(probe.size()))
    fail(std::string("cannot send the probe datagram: ") + std::strerror(errno), tshark_.get());

  // dumpcap flushes the file every 100 ms; read only what is new, keeping enough of the old tail
  // to find a probe that straddles two reads.
  std::uintmax_t offset = 0;
  std::string window;
  for (;;) {
    std::ifstream in(pcap_, std::ios::binary);
    if (in && in.seekg(static_cast<std::streamoff>(offset))) {
      std::string fresh{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      offset += fresh.size();
      window += fresh;
      if (window.find(probe) != std::string::npos) return;
      if (window.size() >= probe.size()) window.erase(0, window.size() - probe.size() + 1);
    }
    if (!tshark_->running()) fail("tshark ended while capturing", tshark_.get());
    if (clock::now() >= until)
      fail("a probe packet did not reach " + pcap_.string() + " in time", tshark_.get());
    std::this_thread::sleep_for(10ms);
  }
}

std::vector<tcp_direction> raw_directions(const fs::path& pcap,
                                          const std::vector<std::uint16_t>& ports) {
  std::vector<std::string> args{"-n",         "-r", pcap.string(), "-T", "fields",     "-e",
                                "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.payload"};
  if (!ports.empty()) args.insert(args.end(), {"-Y", "tcp.port in {" + join(ports, ", ") + "}"});
  // One line per frame, "stream<TAB>source port<TAB>hex payload"; the payload is empty for a bare
  // ACK and all three are for the probe datagrams.
  std::vector<tcp_direction> runs;  // one per direction of a stream, in order of first appearance
  std::map<std::string, std::size_t> run_of;
  for (const auto& line : lines_of(run_tshark(pcap, args))) {
    const auto tab = line.rfind('\t');
    if (tab == std::string::npos) fail("unexpected tshark output: " + line.substr(0, 80), nullptr);
    if (tab + 1 == line.size()) continue;
    const auto direction = line.substr(0, tab);
    auto [it, fresh] = run_of.emplace(direction, runs.size());
    if (fresh) runs.push_back({direction.substr(0, direction.find('\t')), {}});
    if (!append_hex(std::string_view(line).substr(tab + 1), runs[it->second].bytes))
      fail("unexpected tshark output: " + line.substr(0, 80), nullptr);
  }
  return runs;
}

std::vector<std::string> raw_runs(const fs::path& pcap, const std::vector<std::uint16_t>& ports) {
  std::vector<std::string> runs;
  for (auto& d : raw_directions(pcap, ports)) runs.push_back(std::move(d.bytes));
  return runs;
}

std::string raw_bytes(const fs::path& pcap, const std::vector<std::uint16_t>& ports) {
  std::string bytes;
  for (const auto& r : raw_runs(pcap, ports)) bytes += r;
  return bytes;
}

std::string decrypted_bytes(const fs::path& pcap, const fs::path& keylog,
                            const std::vector<std::uint16_t>& tls_ports) {
  if (tls_ports.empty()) throw std::invalid_argument("decrypted_bytes: no TLS ports");
  // Non-standard ports need "-d" for tshark to try TLS on them at all.
  std::vector<std::string> args{"-n", "-r", pcap.string(), "-o",
                                "tls.keylog_file:" + keylog.string()};
  for (auto p : tls_ports)
    args.insert(args.end(), {"-d", "tcp.port==" + std::to_string(p) + ",tls"});

  auto list = args;
  list.insert(list.end(), {"-Y", "tcp.port in {" + join(tls_ports, ", ") + "}", "-T", "fields",
                           "-e", "tcp.stream"});
  std::set<unsigned long> streams;
  for (const auto& line : lines_of(run_tshark(pcap, list))) {
    if (line.empty() ||
        !std::all_of(line.begin(), line.end(), [](char c) { return c >= '0' && c <= '9'; }))
      fail("unexpected tshark output: " + line.substr(0, 80), nullptr);
    streams.insert(std::stoul(line));
  }
  if (streams.empty()) return {};

  // One pass follows every stream. Each report is a header ending in "Node 0: ..." and
  // "Node 1: ...", one hex line per decrypted record (indented with a tab when node 1 sent it),
  // then a line of "=".
  auto follow = args;
  follow.push_back("-q");
  for (auto s : streams) follow.insert(follow.end(), {"-z", "follow,tls,raw," + std::to_string(s)});
  std::string bytes, from_node0, from_node1;
  bool in_data = false;
  for (const auto& line : lines_of(run_tshark(pcap, follow))) {
    if (line.starts_with("Node 1:")) {
      in_data = true;
    } else if (in_data && line.starts_with("====")) {
      bytes += from_node0;
      bytes += from_node1;
      from_node0.clear();
      from_node1.clear();
      in_data = false;
    } else if (in_data) {
      const bool node1 = line.starts_with('\t');
      if (!append_hex(std::string_view(line).substr(node1 ? 1 : 0),
                      node1 ? from_node1 : from_node0))
        fail("unexpected tshark follow output: " + line.substr(0, 80), nullptr);
    }
  }
  if (in_data) fail("tshark follow output ended in the middle of a report", nullptr);
  // The links' records after the welcome are their own: tshark cannot open them, the key log can.
  std::ifstream log(keylog);
  const std::string keys{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  bytes += open_own_records(raw_directions(pcap, tls_ports), keys);
  return bytes;
}

}  // namespace burrow::test
