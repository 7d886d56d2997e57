// What RFC 8446 asks of a server after the handshake, tried with a probe that writes its own
// records (harness/tls13_probe.hpp) against a blind share URL (TLS ends at the agent), an
// inspect one (TLS ends at the relay), and stock `openssl s_server` as the control: the same
// expectation holds for all three. A record over 2^14 + 256 bytes is record_overflow before any
// decryption (5.2); a KeyUpdate whose request_update is neither 0 nor 1 is illegal_parameter, an
// empty one decode_error (4.6.3); a KeyUpdate cut over two records is taken, one with more behind
// it in its record is not (5.1); a ChangeCipherSpec after Finished is unexpected_message (5); and
// every fatal alert leaves before the connection closes.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "e2e/share_url_fixture.hpp"
#include "harness/http_service.hpp"
#include "harness/tls13_probe.hpp"

namespace burrow::test {
namespace {

using namespace std::chrono_literals;

struct server_under_test {
  std::string what;
  std::uint16_t port = 0;
  std::string host;
};

class tls_conformance_test : public share_url_test {
 protected:
  // The three servers: a blind share URL, an inspect one, and openssl s_server with a
  // certificate of its own; started on first use.
  const std::vector<server_under_test>& servers() {
    if (!servers_.empty()) return servers_;
    relay_ = std::make_unique<relay_process>(start_relay());
    std::uint16_t blind_port = 0, inspect_port = 0;
    blind_ = start_http_agent(*relay_, web_.port(), "blind", blind_port, "blind");
    inspect_ = start_http_agent(*relay_, web_.port(), "seen", inspect_port, "inspect");
    EXPECT_NE(blind_port, 0);
    EXPECT_NE(inspect_port, 0);
    const auto key = (dir_ / "control.key").string(), cert = (dir_ / "control.crt").string();
    EXPECT_TRUE(run(
        {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-subj", "/CN=control", "-days", "1", "-keyout", key, "-out", cert},
        20s));
    const auto control_port = free_port();
    control_ = child_process::start("s_server", {"/usr/bin/openssl", "s_server", "-accept",
                                                 "127.0.0.1:" + std::to_string(control_port),
                                                 "-cert", cert, "-key", key, "-tls1_3", "-www"});
    EXPECT_TRUE(control_->wait_for_line(std::regex("ACCEPT"), 10s)) << control_->output();
    servers_ = {{"blind share URL", blind_port, "blind.burrow.localhost"},
                {"inspect share URL", inspect_port, "seen.burrow.localhost"},
                {"openssl s_server", control_port, "control"}};
    return servers_;
  }

  // The alert each server answers `send` with, after a fresh handshake.
  template <class Send>
  void expect_alert(const char* what, tls_alert expected, Send send) {
    for (const auto& server : servers()) {
      tls13_probe probe(server.port, server.host);
      send(probe);
      const auto answer = probe.read_answer();
      ASSERT_TRUE(answer.alert) << what << ", " << server.what << ": no alert"
                                << (answer.closed ? " (closed)" : "")
                                << (answer.timed_out ? " (timed out)" : "");
      EXPECT_EQ(*answer.alert, static_cast<std::uint8_t>(expected)) << what << ", " << server.what;
    }
  }

  http_service web_;
  std::unique_ptr<relay_process> relay_;
  std::unique_ptr<child_process> blind_, inspect_, control_;
  std::vector<server_under_test> servers_;
};

const std::vector<std::uint8_t> request =
    bytes_of("GET / HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n");

TEST_F(tls_conformance_test, ARecordOverTheLimitIsRecordOverflowBeforeDecryption) {
  expect_alert("ciphertext of 2^14 + 257 bytes", tls_alert::record_overflow,
               [](tls13_probe& p) { p.send_record(request, 23, 16384 + 257 - request.size()); });
}

TEST_F(tls_conformance_test, AKeyUpdateWithAnInvalidRequestIsIllegalParameter) {
  expect_alert("request_update 2", tls_alert::illegal_parameter, [](tls13_probe& p) {
    p.send_record(std::vector<std::uint8_t>{24, 0, 0, 1, 2}, 22);
  });
}

TEST_F(tls_conformance_test, AnEmptyKeyUpdateIsDecodeError) {
  expect_alert("empty KeyUpdate", tls_alert::decode_error, [](tls13_probe& p) {
    p.send_record(std::vector<std::uint8_t>{24, 0, 0, 0}, 22);
  });
}

// A KeyUpdate over its one byte: RFC 8446 names decode_error for a message of the wrong length;
// OpenSSL 3.0 refuses it as larger than a KeyUpdate may be, with illegal_parameter. Either is a
// fatal end; the share URLs answer exactly as the control does.
TEST_F(tls_conformance_test, AnOverlongKeyUpdateEndsTheSessionAsOpenSslDoes) {
  std::map<std::string, std::uint8_t> alerts;
  for (const auto& server : servers()) {
    tls13_probe probe(server.port, server.host);
    probe.send_record(std::vector<std::uint8_t>{24, 0, 0, 2, 0, 0}, 22);
    const auto answer = probe.read_answer();
    ASSERT_TRUE(answer.alert) << server.what;
    alerts[server.what] = *answer.alert;
    EXPECT_TRUE(*answer.alert == static_cast<std::uint8_t>(tls_alert::decode_error) ||
                *answer.alert == static_cast<std::uint8_t>(tls_alert::illegal_parameter))
        << server.what << ": " << int(*answer.alert);
  }
  EXPECT_EQ(alerts["blind share URL"], alerts["openssl s_server"]);
  EXPECT_EQ(alerts["inspect share URL"], alerts["openssl s_server"]);
}

// A key change must end its record (section 5.1): a KeyUpdate with the start of another message
// behind it in the same record is unexpected_message.
TEST_F(tls_conformance_test, AKeyUpdateNotAtTheEndOfItsRecordIsUnexpectedMessage) {
  expect_alert("KeyUpdate and a byte", tls_alert::unexpected_message, [](tls13_probe& p) {
    p.send_record(std::vector<std::uint8_t>{24, 0, 0, 1, 0, 24}, 22);
  });
}

TEST_F(tls_conformance_test, AChangeCipherSpecAfterFinishedIsUnexpectedMessage) {
  expect_alert("ChangeCipherSpec after Finished", tls_alert::unexpected_message,
               [](tls13_probe& p) {
                 p.send_raw(std::vector<std::uint8_t>{20, 3, 3, 0, 1, 1});
               });
}

TEST_F(tls_conformance_test, AKeyUpdateCutOverTwoRecordsIsTaken) {
  for (const auto& server : servers()) {
    tls13_probe probe(server.port, server.host);
    probe.send_record(std::vector<std::uint8_t>{24, 0}, 22);
    probe.send_record(std::vector<std::uint8_t>{0, 1, 0}, 22);
    probe.next_send_key();
    probe.send_record(request);
    const auto answer = probe.read_answer();
    EXPECT_NE(answer.data.find("HTTP/1."), std::string::npos) << server.what << ": " << answer.data;
    if (answer.alert) {
      EXPECT_EQ(*answer.alert, 0) << server.what;  // close_notify at most
    }
  }
}

// Each fatal alert is written before the connection closes, every time.
TEST_F(tls_conformance_test, EveryFatalAlertLeavesBeforeTheClose) {
  constexpr int tries = 10;
  for (const auto& server : servers()) {
    int arrived = 0;
    for (int i = 0; i < tries; ++i) {
      tls13_probe probe(server.port, server.host);
      if (i % 2)
        probe.send_raw(std::vector<std::uint8_t>{20, 3, 3, 0, 1, 1});
      else
        probe.send_record(std::vector<std::uint8_t>{24, 0, 0, 1, 7}, 22);
      // More behind it that the server will never read: a close with unread bytes is a reset,
      // which takes the alert with it unless the server has let it leave first.
      for (int r = 0; r < 8; ++r) probe.send_record(std::vector<std::uint8_t>(16000, 'x'));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (int r = 0; r < 8; ++r) probe.send_record(std::vector<std::uint8_t>(16000, 'x'));
      const auto answer = probe.read_answer();
      if (answer.alert && *answer.alert != 0) ++arrived;
    }
    EXPECT_EQ(arrived, tries) << server.what;
  }
}

// The relay's ClientHello peek routes what RFC 8446 allows of a first flight, and what follows
// the hello reaches the server that ends TLS untouched: each handshake completes and a request
// is answered, on the share URLs as on the control.
class hello_peek_test : public tls_conformance_test {
 protected:
  void expect_answered(const char* what, const tls13_probe::options& o) {
    for (const auto& server : servers()) {
      std::unique_ptr<tls13_probe> probe;
      try {
        probe = std::make_unique<tls13_probe>(server.port, server.host, o);
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ", " << server.what << ": " << e.what();
        continue;
      }
      probe->send_record(request);
      const auto answer = probe->read_answer();
      EXPECT_NE(answer.data.find("HTTP/1."), std::string::npos) << what << ", " << server.what;
    }
  }
};

TEST_F(hello_peek_test, AClientHelloCutIntoSmallRecordsIsRouted) {
  tls13_probe::options o;
  o.hello_record_size = 64;
  expect_answered("records of 64 bytes", o);
  o.hello_record_size = 1;
  expect_answered("records of 1 byte", o);
}

TEST_F(hello_peek_test, AFirstRecordOfVersion0x0300IsRouted) {
  tls13_probe::options o;
  o.first_record_version = 0x0300;
  expect_answered("legacy_record_version 0x0300", o);
}

TEST_F(hello_peek_test, AChangeCipherSpecRightBehindTheClientHelloArrivesIntact) {
  tls13_probe::options o;
  o.after_hello = {20, 3, 3, 0, 1, 1};
  expect_answered("ChangeCipherSpec in the hello's segment", o);
  o.hello_record_size = 100;
  expect_answered("the same, the hello in records of 100 bytes", o);
  // A hello of about 1 KiB in records of 1 byte: over 6 KiB, more than the relay's first peek.
  for (int i = 0; i < 20; ++i) o.alpn.push_back("padding-protocol-" + std::to_string(100 + i));
  o.alpn.push_back("http/1.1");
  o.hello_record_size = 1;
  expect_answered("the same, a long hello in records of 1 byte", o);
}

}  // namespace
}  // namespace burrow::test
