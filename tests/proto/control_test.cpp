// Control messages: every message type round-trips; malformed and oversized input is refused.
#include "proto/control.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "proto/frame.hpp"

namespace burrow::proto {
namespace {

template <class T>
T round_trip(const T& in) {
  auto decoded = decode_control(encode_control(in));
  EXPECT_TRUE(decoded.message) << decoded.error;
  return std::get<T>(*decoded.message);
}

TEST(Control, HelloRoundTrip) {
  hello h{{1, 2}, "agent", "brw_secret", "abcd", 3, "burrow/0.1.0"};
  auto out = round_trip(h);
  EXPECT_EQ(out.versions, h.versions);
  EXPECT_EQ(out.token, "brw_secret");
  EXPECT_EQ(out.session, "abcd");
  EXPECT_EQ(out.link_index, 3u);
}

TEST(Control, RegisterAndRegisteredRoundTrip) {
  register_services r{{{"db", tunnel_kind::tcp_port, 5432}, {"web", tunnel_kind::tcp_port, 0}}};
  auto out = round_trip(r);
  ASSERT_EQ(out.services.size(), 2u);
  EXPECT_EQ(out.services[0].remote_port, 5432);
  EXPECT_EQ(out.services[1].name, "web");

  registered g{{{"db", true, 5432, "1.2.3.4:5432", "", ""},
                {"web", false, 80, "", "port_in_use", "held by another agent"}}};
  auto back = round_trip(g);
  ASSERT_EQ(back.services.size(), 2u);
  EXPECT_TRUE(back.services[0].ok);
  EXPECT_EQ(back.services[1].code, "port_in_use");
}

TEST(Control, EndToEndServiceRoundTrip) {
  service_spec e2ee{"ssh", tunnel_kind::tcp_e2ee, 0, std::string(64, 'a')};
  auto out = round_trip(register_services{{e2ee, {"web", tunnel_kind::tcp_port, 0}}});
  ASSERT_EQ(out.services.size(), 2u);
  EXPECT_EQ(out.services[0].kind, tunnel_kind::tcp_e2ee);
  EXPECT_EQ(out.services[0].visitor_token_sha256, std::string(64, 'a'));
  EXPECT_EQ(out.services[1].kind, tunnel_kind::tcp_port);
  EXPECT_TRUE(out.services[1].visitor_token_sha256.empty());
  EXPECT_FALSE(decode_control("{\"type\":\"register\",\"services\":[{\"e2ee\":\"yes\"}]}").message);
}

TEST(Control, ShareUrlMessagesRoundTrip) {
  service_spec web{"web", tunnel_kind::share_passthrough, 0};
  web.plain_http = true;
  auto reg = round_trip(register_services{{web}});
  ASSERT_EQ(reg.services.size(), 1u);
  EXPECT_EQ(reg.services[0].kind, tunnel_kind::share_passthrough);
  EXPECT_FALSE(reg.services[0].unsupported);
  EXPECT_TRUE(reg.services[0].plain_http);

  auto req = round_trip(cert_request{"web", "-----BEGIN CERTIFICATE REQUEST-----"});
  EXPECT_EQ(req.name, "web");
  EXPECT_EQ(req.csr, "-----BEGIN CERTIFICATE REQUEST-----");
  auto cert = round_trip(certificate{"web", true, "leaf", "ca", "", ""});
  EXPECT_TRUE(cert.ok);
  EXPECT_EQ(cert.cert, "leaf");
  EXPECT_EQ(cert.ca, "ca");
  auto refused = round_trip(certificate{"web", false, "", "", "not_yours", "no"});
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.code, "not_yours");
  auto gone = round_trip(unregister{{"web", "api"}});
  EXPECT_EQ(gone.names, (std::vector<std::string>{"web", "api"}));
  EXPECT_FALSE(decode_control("{\"type\":\"unregister\",\"names\":[1]}").message);
  auto taken = round_trip(replaced{{"web", "tcp-22"}, "3f1a9c0b"});
  EXPECT_EQ(taken.names, (std::vector<std::string>{"web", "tcp-22"}));
  EXPECT_EQ(taken.by, "3f1a9c0b");
  EXPECT_FALSE(decode_control("{\"type\":\"replaced\",\"names\":\"web\"}").message);
  EXPECT_FALSE(decode_control("{\"type\":\"replaced\",\"names\":[],\"by\":1}").message);
  EXPECT_FALSE(decode_control("{\"type\":\"cert_request\",\"csr\":7}").message);

  service_spec inspected{"insp", tunnel_kind::share_inspect, 0};
  inspected.access.basic.push_back({"alice", std::string(64, 'b'), false});
  inspected.access.bearer_sha256.push_back(std::string(64, 'c'));
  inspected.access.headers.push_back({"X-Team", std::string(64, 'd')});
  inspected.access.allow_ip.push_back("10.0.0.0/8");
  auto back = round_trip(register_services{{inspected}});
  ASSERT_EQ(back.services.size(), 1u);
  EXPECT_EQ(back.services[0].access.basic.at(0).user, "alice");
  EXPECT_EQ(back.services[0].access.bearer_sha256.at(0), std::string(64, 'c'));
  EXPECT_EQ(back.services[0].access.headers.at(0).name, "X-Team");
  EXPECT_EQ(back.services[0].access.allow_ip.at(0), "10.0.0.0/8");
  EXPECT_FALSE(
      decode_control("{\"type\":\"register\",\"services\":[{\"access\":{\"allow_ip\":[1]}}]}")
          .message);

  open_metadata m{"web", "1.2.3.4", 5, "", 0};
  m.scheme = visitor_scheme::plain_http;
  auto open = decode_open(encode_open(m));
  ASSERT_TRUE(open);
  EXPECT_EQ(open->scheme, visitor_scheme::plain_http);
  EXPECT_FALSE(decode_open(R"({"service":"web","scheme":"gopher"})"));
}

TEST(Control, KindsAndModesThisVersionDoesNotKnowAreKeptForTheRefusal) {
  auto decoded =
      decode_control(R"({"type":"register","services":[{"name":"a","kind":"udp"},)"
                     R"({"name":"b","kind":"http","mode":"mirror"},{"name":"c","kind":"http"}]})");
  ASSERT_TRUE(decoded.message);
  auto& reg = std::get<register_services>(*decoded.message);
  ASSERT_EQ(reg.services.size(), 3u);
  ASSERT_TRUE(reg.services[0].unsupported);
  EXPECT_EQ(reg.services[0].unsupported->code, "unsupported_kind");
  EXPECT_EQ(reg.services[0].unsupported->asked, "kind 'udp'");
  ASSERT_TRUE(reg.services[1].unsupported);
  EXPECT_EQ(reg.services[1].unsupported->code, "unsupported_mode");
  EXPECT_FALSE(reg.services[2].unsupported);
  EXPECT_EQ(reg.services[2].kind, tunnel_kind::share_blind);  // no mode: blind
}

TEST(Control, WelcomeAndErrorRoundTrip) {
  auto w = round_trip(welcome{1, 65536, 262144, 65536, 10000});
  EXPECT_EQ(w.initial_window, 262144u);
  auto e = round_trip(link_error{"bad_token", "the token was not accepted"});
  EXPECT_EQ(e.code, "bad_token");
}

TEST(Control, LinkEncryptionIsOptionalInHelloAndWelcome) {
  hello h{{1}, "agent", "brw_x", "s1", 0, "burrow/test", "none"};
  EXPECT_EQ(round_trip(h).link_encryption, "none");
  h.link_encryption.clear();
  // Absent on the wire when empty, so a relay of an earlier version reads the same hello.
  EXPECT_EQ(encode_control(h).find("link_encryption"), std::string::npos);
  EXPECT_EQ(round_trip(h).link_encryption, "");
  welcome w{1, 65536, 262144, 65536, 5000, 5000, "none"};
  EXPECT_EQ(round_trip(w).link_encryption, "none");
  EXPECT_FALSE(decode_control(R"({"type":"welcome","version":1,"link_encryption":7})").message);
}

TEST(Control, OwnRecordsAreOfferedGrantedAndMarkedOnlyWhenTrue) {
  hello h{{1}, "agent", "brw_x", "s1", 0, "burrow/test"};
  EXPECT_FALSE(round_trip(h).own_records);
  EXPECT_EQ(encode_control(h).find("own_records"), std::string::npos);
  h.own_records = true;
  EXPECT_TRUE(round_trip(h).own_records);
  welcome w{1, 65536, 262144, 65536, 5000, 5000};
  EXPECT_FALSE(round_trip(w).own_records);
  w.own_records = true;
  EXPECT_TRUE(round_trip(w).own_records);
  // A relay from before them answers without the field: the link keeps OpenSSL's records.
  auto old = decode_control(R"({"type":"welcome","version":1,"max_frame":65536})");
  ASSERT_TRUE(old.message);
  EXPECT_FALSE(std::get<welcome>(*old.message).own_records);
  EXPECT_FALSE(decode_control(R"({"type":"welcome","version":1,"own_records":"yes"})").message);
}

TEST(Control, SealedFramesAreOfferedGrantedAndMarkedOnlyWhenTrue) {
  hello h{{1}, "agent", "brw_x", "s1", 0, "burrow/test"};
  EXPECT_FALSE(round_trip(h).sealed_frames);
  EXPECT_EQ(encode_control(h).find("sealed_frames"), std::string::npos);
  h.sealed_frames = true;
  EXPECT_TRUE(round_trip(h).sealed_frames);
  welcome w{1, 65536, 262144, 65536, 5000, 5000};
  EXPECT_FALSE(round_trip(w).sealed_frames);
  w.sealed_frames = true;
  EXPECT_TRUE(round_trip(w).sealed_frames);
  EXPECT_FALSE(decode_control(R"({"type":"welcome","version":1,"sealed_frames":"yes"})").message);
  open_metadata m{"web", "203.0.113.7", 1, "198.51.100.1", 443};
  EXPECT_EQ(encode_open(m).find("sealed"), std::string::npos);
  m.sealed = true;
  auto open = decode_open(encode_open(m));
  ASSERT_TRUE(open);
  EXPECT_TRUE(open->sealed);
  EXPECT_FALSE(decode_open(R"({"service":"web","sealed":1})"));
}

TEST(Control, EndToEndSessionFieldsAreCarriedOnlyWhenSet) {
  open_metadata m{"ssh", "203.0.113.7", 1, "198.51.100.1", 443};
  EXPECT_EQ(encode_open(m).find("e2ee_"), std::string::npos);
  m.e2ee_session = std::string(32, 'a');
  m.e2ee_stream = std::numeric_limits<std::uint64_t>::max();  // every number survives JSON
  auto open = decode_open(encode_open(m));
  ASSERT_TRUE(open);
  EXPECT_EQ(open->e2ee_session, m.e2ee_session);
  EXPECT_EQ(open->e2ee_stream, m.e2ee_stream);
  EXPECT_FALSE(decode_open(R"({"service":"ssh","e2ee_session":1})"));
  EXPECT_FALSE(decode_open(R"({"service":"ssh","e2ee_stream":-1})"));
  EXPECT_FALSE(decode_open(R"({"service":"ssh","e2ee_stream":"7"})"));
}

TEST(Control, RejectsMalformedInput) {
  EXPECT_FALSE(decode_control("").message);
  EXPECT_FALSE(decode_control("[]").message);
  EXPECT_FALSE(decode_control("{\"type\":\"nope\"}").message);
  EXPECT_FALSE(decode_control("{\"type\":\"register\",\"services\":[1]}").message);
  EXPECT_FALSE(
      decode_control("{\"type\":\"register\",\"services\":[{\"remote_port\":70000}]}").message);
  EXPECT_FALSE(decode_control("{\"type\":\"hello\",\"token\":5}").message);
  EXPECT_FALSE(decode_control("{\"type\":\"hello\",\"versions\":[-1]}").message);
  std::string deep(100, '[');
  EXPECT_FALSE(decode_control("{\"a\":" + deep).message);
  std::string big =
      "{\"type\":\"error\",\"message\":\"" + std::string(max_control_payload, 'x') + "\"}";
  EXPECT_FALSE(decode_control(big).message);
}

TEST(Control, ErrorsNeverEchoTheToken) {
  auto d = decode_control("{\"type\":\"hello\",\"token\":\"brw_topsecret\",\"versions\":\"x\"}");
  EXPECT_FALSE(d.message);
  EXPECT_EQ(d.error.find("topsecret"), std::string::npos);
}

TEST(Control, OpenMetadataRoundTrip) {
  open_metadata m{"db", "2001:db8::1", 40000, "127.0.0.1", 5432, ""};
  auto out = decode_open(encode_open(m));
  ASSERT_TRUE(out);
  EXPECT_EQ(out->visitor_address, "2001:db8::1");
  EXPECT_EQ(out->visitor_port, 40000);
  EXPECT_EQ(out->relay_port, 5432);
  EXPECT_FALSE(decode_open("{\"visitor_port\":\"x\"}"));
  EXPECT_TRUE(out->visitor_token.empty());

  m.visitor_token = "vt_secret";
  auto with_token = decode_open(encode_open(m));
  ASSERT_TRUE(with_token);
  EXPECT_EQ(with_token->visitor_token, "vt_secret");
  m.visitor_token.clear();
  EXPECT_EQ(encode_open(m).find("visitor_token"), std::string::npos);
}

}  // namespace
}  // namespace burrow::proto
