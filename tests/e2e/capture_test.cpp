// Issue 3's proof that the relay cannot read end-to-end tunnels, read off a packet capture of the
// relay's two legs. The relay's links are TLS 1.3, so what the relay can read is what its own
// keys (SSLKEYLOGFILE) decrypt. This is the baseline: through a plain tunnel it reads everything.
#include <fstream>
#include <random>
#include <string_view>

#include "e2e/share_url_fixture.hpp"
#include "harness/capture.hpp"
#include "harness/http_service.hpp"
#include "proto/wire_unit.hpp"

namespace burrow::test {
namespace {

class Capture : public share_url_test {
 protected:
  std::filesystem::path keylog() const { return dir_ / "relay.keys"; }

  // A relay that appends its TLS secrets to keylog().
  relay_process start_relay_with_keylog() {
    return start_relay({}, 0, {{"SSLKEYLOGFILE", keylog().string()}});
  }

  // 32 random hex characters: found in a capture only if these very bytes crossed the wire.
  static std::string random_marker() {
    std::random_device rd;
    std::uniform_int_distribution<int> digit(0, 15);
    std::string marker;
    for (int i = 0; i < 32; ++i) marker += "0123456789abcdef"[digit(rd)];
    return marker;
  }

  static std::size_t occurrences(std::string_view haystack, std::string_view needle) {
    std::size_t n = 0;
    for (auto at = haystack.find(needle); at != std::string_view::npos;
         at = haystack.find(needle, at + 1))
      ++n;
    return n;
  }

  // What the links on the agent port carried, read the way a link reads it: past each TLS
  // handshake (records in the clear), runs of TLS records and sealed frames.
  struct link_wire {
    std::size_t directions = 0, sealed_frames = 0, broken = 0;
    std::string sealed_payload;  // every sealed frame's bytes, as an observer of the wire sees
  };
  void expect_no_sealed_frames(std::vector<std::string> relay_flags,
                               std::vector<std::string> ends_flags);

  link_wire read_links(const std::filesystem::path& pcap, std::uint16_t agent_port) {
    link_wire w;
    for (const auto& run : raw_runs(pcap, {agent_port})) {
      std::span<const std::uint8_t> in(reinterpret_cast<const std::uint8_t*>(run.data()),
                                       run.size());
      // ClientHello or ServerHello, then the compatibility ChangeCipherSpec.
      while (in.size() >= 5 && (in[0] == 0x16 || in[0] == 0x14)) {
        std::size_t n = 5 + ((std::size_t{in[3]} << 8) | in[4]);
        in = in.subspan(std::min(n, in.size()));
      }
      ++w.directions;
      while (!in.empty()) {
        auto u = proto::next_wire_unit(in, proto::default_max_frame_payload);
        if (u.kind == proto::wire_unit_kind::error) ++w.broken;
        if (u.kind == proto::wire_unit_kind::error || u.kind == proto::wire_unit_kind::incomplete)
          break;
        if (u.kind == proto::wire_unit_kind::sealed_frame) {
          ++w.sealed_frames;
          w.sealed_payload.append(reinterpret_cast<const char*>(u.payload.data()),
                                  u.payload.size());
        }
        in = in.subspan(u.size);
      }
    }
    return w;
  }
};

// With --no-e2ee the relay reads the marker: the test below could fail, and would, if the
// end-to-end session leaked.
TEST_F(Capture, PlainTunnelBaselineTheRelayReadsTheMarker) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay_with_keylog();
  ASSERT_NE(relay.agent_port, 0);
  // The link's handshake must be in the capture for its keys to be of use, so capturing starts
  // before the agent connects, and the public port is chosen here to be in the filter already.
  const std::uint16_t public_port = free_port();
  capture wire(dir_ / "relay.pcap", {relay.agent_port, public_port});
  auto agent = start_agent(relay, echo.port(), {"--remote-port", std::to_string(public_port)});
  ASSERT_EQ(agent.public_port, public_port);

  const std::string marker = random_marker();
  auto reply = exchange(public_port, marker);
  ASSERT_TRUE(reply);
  ASSERT_EQ(*reply, marker);
  wire.stop();

  // Sizes only in messages: the decrypted link also carries the agent's token.
  const auto visitor_leg = raw_bytes(wire.file(), {public_port});
  EXPECT_GE(occurrences(visitor_leg, marker), 2u)
      << "the visitor's leg is plain TCP; " << visitor_leg.size() << " bytes captured";

  const auto link_on_wire = raw_bytes(wire.file(), {relay.agent_port});
  ASSERT_FALSE(link_on_wire.empty()) << "nothing captured on the agent port";
  EXPECT_EQ(occurrences(link_on_wire, marker), 0u) << "the link must be encrypted on the wire";
  // A plain tunnel's bytes are in the clear inside the stream: none may leave the link's TLS.
  auto links = read_links(wire.file(), relay.agent_port);
  EXPECT_GE(links.directions, 2u);  // each way, on each of the agent's links
  EXPECT_EQ(links.broken, 0u);
  EXPECT_EQ(links.sealed_frames, 0u);

  const auto relay_reads = decrypted_bytes(wire.file(), keylog(), {relay.agent_port});
  ASSERT_FALSE(relay_reads.empty())
      << "nothing decrypted from " << link_on_wire.size() << " bytes with " << keylog();
  EXPECT_GE(occurrences(relay_reads, marker), 2u)
      << "the relay reads a plain tunnel, to the agent and back; " << relay_reads.size()
      << " bytes decrypted";

  // And it is the keys that decrypt: without them the same capture yields nothing.
  const auto no_keys = dir_ / "empty.keys";
  std::ofstream{no_keys};
  EXPECT_TRUE(decrypted_bytes(wire.file(), no_keys, {relay.agent_port}).empty());
}

// --link-encryption none does what it says: the marker is in the clear on the agent's link, while
// the agent's token, sent before the switch, is not (the handshake and hello stay TLS).
TEST_F(Capture, UnencryptedLinkShowsTheBytesButNotTheToken) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--link-encryption", "none"});
  ASSERT_NE(relay.agent_port, 0);
  const std::uint16_t public_port = free_port();
  capture wire(dir_ / "relay.pcap", {relay.agent_port, public_port});
  auto agent =
      start_agent(relay, echo.port(),
                  {"--remote-port", std::to_string(public_port), "--link-encryption", "none"});
  ASSERT_EQ(agent.public_port, public_port);

  const std::string marker = random_marker();
  auto reply = exchange(public_port, marker);
  ASSERT_TRUE(reply);
  ASSERT_EQ(*reply, marker);
  wire.stop();

  const auto link_on_wire = raw_bytes(wire.file(), {relay.agent_port});
  ASSERT_FALSE(link_on_wire.empty()) << "nothing captured on the agent port";
  EXPECT_GE(occurrences(link_on_wire, marker), 2u)
      << "to the agent and back, in the clear; " << link_on_wire.size() << " bytes captured";
  EXPECT_EQ(occurrences(link_on_wire, relay.token), 0u) << "the token must only cross inside TLS";
  EXPECT_EQ(occurrences(link_on_wire, "\"type\":\"hello\""), 0u);
}

// End to end: the marker goes through `burrow connect`, TLS with the agent inside the stream.
// Both of the relay's legs (the visitor's link from connect and the agent's link) end on its
// agent port; decrypted with the relay's own keys they show the service name the relay routes
// by, and never the marker.
TEST_F(Capture, EndToEndTheRelayNeverReadsTheMarker) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay_with_keylog();
  ASSERT_NE(relay.agent_port, 0);
  capture wire(dir_ / "relay.pcap", {relay.agent_port});
  auto agent = start_e2ee_agent(relay, echo.port(), {"--name", "capture-e2ee"});
  auto visitor = start_connect(relay, agent);
  ASSERT_NE(visitor.port, 0);

  const std::string marker = random_marker();
  // Twice: a new connection resumes the TLS session, and that path must not leak either.
  for (int i = 0; i < 2; ++i) {
    auto reply = exchange(visitor.port, marker);
    ASSERT_TRUE(reply);
    ASSERT_EQ(*reply, marker);
  }
  wire.stop();

  const auto on_wire = raw_bytes(wire.file(), {relay.agent_port});
  ASSERT_FALSE(on_wire.empty()) << "nothing captured on the agent port";
  EXPECT_EQ(occurrences(on_wire, marker), 0u);
  // The end-to-end session's records travel as sealed frames, next to the links' own records,
  // on both links (connect's and the agent's, each way): ciphertext the relay passes on as is.
  auto links = read_links(wire.file(), relay.agent_port);
  EXPECT_GE(links.directions, 4u);
  EXPECT_EQ(links.broken, 0u);
  EXPECT_GE(links.sealed_frames, 8u);
  EXPECT_GE(links.sealed_payload.size(), 4 * marker.size());
  EXPECT_EQ(occurrences(links.sealed_payload, marker), 0u);

  const auto relay_reads = decrypted_bytes(wire.file(), keylog(), {relay.agent_port});
  // The decryption works on this very capture: the relay reads the name it routes by, in the
  // agent's registration and in each stream the visitor opened.
  EXPECT_GE(occurrences(relay_reads, "capture-e2ee"), 3u)
      << relay_reads.size() << " bytes decrypted with " << keylog();
  EXPECT_EQ(occurrences(relay_reads, marker), 0u)
      << "the relay must see only the end-to-end session's ciphertext";
}

// --link-encryption full on either side: everything stays inside the links' TLS, end to end too.
TEST_F(Capture, FullLinkEncryptionOnTheRelaySendsNoSealedFrames) {
  expect_no_sealed_frames({"--link-encryption", "full"}, {});
}

TEST_F(Capture, FullLinkEncryptionOnAgentAndConnectSendsNoSealedFrames) {
  expect_no_sealed_frames({}, {"--link-encryption", "full"});
}

void Capture::expect_no_sealed_frames(std::vector<std::string> relay_flags,
                                      std::vector<std::string> ends_flags) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay(relay_flags);
  ASSERT_NE(relay.agent_port, 0);
  capture wire(dir_ / "relay.pcap", {relay.agent_port});
  auto agent_flags = ends_flags;
  agent_flags.insert(agent_flags.end(), {"--name", "capture-full"});
  auto agent = start_e2ee_agent(relay, echo.port(), agent_flags);
  auto visitor = start_connect(relay, agent, ends_flags);
  ASSERT_NE(visitor.port, 0);
  const std::string marker = random_marker();
  auto reply = exchange(visitor.port, marker);
  ASSERT_TRUE(reply);
  ASSERT_EQ(*reply, marker);
  wire.stop();
  auto links = read_links(wire.file(), relay.agent_port);
  EXPECT_GE(links.directions, 4u);
  EXPECT_EQ(links.broken, 0u);
  EXPECT_EQ(links.sealed_frames, 0u);
  EXPECT_EQ(occurrences(raw_bytes(wire.file(), {relay.agent_port}), marker), 0u);
}

// Share URLs: the marker travels in a request's path and body and comes back in the response.
// Blind: TLS ends at the agent, so the relay's own keys decrypt its links (the name it routes by
// is there) but never the marker. Inspect: the relay ends TLS itself and reads the marker: the
// same test, able to fail.
class CaptureShareUrl : public Capture {
 protected:
  struct seen {
    std::string on_wire;
    std::string relay_reads;
    std::string marker;
    link_wire links;
  };
  seen capture_share_url(const std::string& name, const std::string& mode) {
    http_service service;
    auto relay = start_relay_with_keylog();
    EXPECT_NE(relay.https_port, 0);
    capture wire(dir_ / "relay.pcap", {relay.agent_port, relay.https_port});
    std::uint16_t port = 0;
    auto agent = start_http_agent(relay, service.port(), name, port, mode);
    seen out;
    out.marker = random_marker();
    std::string ca = mode == "blind" ? (dir_ / "agent" / "relay-ca.pem").string()
                                     : (state_dir_ / "ca.pem").string();
    for (int i = 0; i < 2; ++i) {
      auto reply = curl(name + ".burrow.localhost", port, {"--cacert", ca, "--data", out.marker},
                        "/echo?" + out.marker);
      EXPECT_TRUE(reply);
      if (reply) {
        EXPECT_NE(reply->find(out.marker), std::string::npos) << *reply;
      }
    }
    wire.stop();
    out.on_wire = raw_bytes(wire.file(), {relay.agent_port, relay.https_port});
    out.relay_reads = decrypted_bytes(wire.file(), keylog(), {relay.agent_port, relay.https_port});
    out.links = read_links(wire.file(), relay.agent_port);
    return out;
  }
};

TEST_F(CaptureShareUrl, BlindTheRelayNeverReadsTheMarker) {
  auto s = capture_share_url("capblind", "blind");
  ASSERT_FALSE(s.on_wire.empty());
  // The visitor's TLS goes on to the agent as sealed frames, and comes back the same way.
  EXPECT_GE(s.links.sealed_frames, 4u);
  EXPECT_EQ(s.links.broken, 0u);
  EXPECT_EQ(occurrences(s.links.sealed_payload, s.marker), 0u);
  EXPECT_EQ(occurrences(s.on_wire, s.marker), 0u);
  EXPECT_GE(occurrences(s.relay_reads, "capblind"), 1u)
      << s.relay_reads.size() << " bytes decrypted with " << keylog();
  EXPECT_EQ(occurrences(s.relay_reads, s.marker), 0u)
      << "the relay must see only the visitor's TLS, ended at the agent";
}

TEST_F(CaptureShareUrl, InspectTheRelayReadsTheMarker) {
  auto s = capture_share_url("capinspect", "inspect");
  ASSERT_FALSE(s.on_wire.empty());
  // HTTP in the clear inside the stream stays inside the link's TLS.
  EXPECT_EQ(s.links.sealed_frames, 0u);
  EXPECT_EQ(s.links.broken, 0u);
  EXPECT_EQ(occurrences(s.on_wire, s.marker), 0u) << "both legs are TLS on the wire";
  EXPECT_GE(occurrences(s.relay_reads, s.marker), 4u)
      << "inspect mode ends TLS at the relay; " << s.relay_reads.size() << " bytes decrypted";
}

}  // namespace
}  // namespace burrow::test
