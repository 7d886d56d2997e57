// The link's own records: TLS 1.3's record format and protection (RFC 8446, section 5.2) with
// the session's AEAD, keyed from the link's TLS session by its exporter (section 7.5) once hello
// and welcome agreed on it (docs/protocol.md, section 4c). The handshake, the relay's identity,
// the token, hello and welcome stay OpenSSL's; after the welcome a record is one AEAD call from
// our buffer into our buffer, where OpenSSL's record layer spends about as much again on its
// generality and copies each record into and out of its own buffers.
//
// Each direction has its own key and IV, from the exporter with the sender's role and the key's
// generation as context; the nonce is the IV XOR the record's sequence number, as in TLS 1.3.
// After `records_per_key` records a direction moves to its next generation, at the same record on
// both ends, so no AEAD key ever protects more records than TLS 1.3 allows for AES-GCM (2^24.5).
// Both ends are Burrow (links, and end-to-end streams): a client of any other make meets
// OpenSSL's own records.
#pragma once

#include <openssl/ssl.h>

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "link/byte_buffer.hpp"

namespace burrow::link {

enum class record_cipher { aes_128_gcm, aes_256_gcm, chacha20_poly1305 };

// The exporter label of the link's records; the end-to-end session's own records use another.
inline constexpr std::string_view link_records_label = "EXPORTER-burrow-link-records";

// TLS alert descriptions (RFC 8446, section 6) that own records send.
enum class record_alert : std::uint8_t {
  close_notify = 0,
  unexpected_message = 10,
  bad_record_mac = 20,
  record_overflow = 22,
};

enum class record_error {
  bad_record = 1,         // a header that is not TLS 1.3 application data, or a body too short
  authentication_failed,  // a record that was not sealed by the peer's key, in this place
  bad_content_type,       // an authentic record whose inner type is neither data nor an alert
  crypto_failed,          // OpenSSL could not seal, or could not derive a key
  close_notify,           // the peer's close_notify alert: it sends nothing more
  peer_alert,             // another alert from the peer: it gave up on the session
  // A ChangeCipherSpec, handshake or alert record in the clear, or an authentic handshake
  // message: keys move by count here, never by KeyUpdate.
  unexpected_message,
  // A body over 2^14 + 256 bytes, known from the header before any decryption, or an authentic
  // record whose data and padding are over 2^14 bytes.
  record_overflow,
};
const boost::system::error_category& record_category();
boost::system::error_code make_error_code(record_error e);
// The alert that tells the peer why a record of its could not be taken.
record_alert alert_for(boost::system::error_code opening_failure);

class record_protection {
 public:
  // Writes out.size() bytes of keying material for `context`; false when it cannot.
  using exporter = std::function<bool(std::string_view context, std::span<std::uint8_t> out)>;

  static constexpr std::uint64_t default_records_per_key = std::uint64_t{1} << 24;
  static constexpr std::size_t max_plaintext = 16 * 1024;
  static constexpr std::size_t tag_size = 16;
  // The largest record on the wire TLS 1.3 allows (section 5.2): header, then a body of at most
  // 2^14 + 256 bytes (data, inner type, padding, tag). Ours are never padded.
  static constexpr std::size_t max_record = 5 + max_plaintext + 256;

  // `dialer`: this side dialled the link (it sends with the dialer's keys). Throws
  // std::runtime_error when a key cannot be made.
  record_protection(record_cipher cipher, exporter keys, bool dialer,
                    std::uint64_t records_per_key = default_records_per_key);
  ~record_protection();
  record_protection(const record_protection&) = delete;
  record_protection& operator=(const record_protection&) = delete;

  // Keys from an established TLS 1.3 session, with the cipher it negotiated. The session must
  // outlive the result, which asks it for each next generation's keys. Throws
  // std::runtime_error for a session that has none of the three TLS 1.3 AEADs.
  // `label` names whose records these are (the link's by default).
  static std::unique_ptr<record_protection> from_session(
      SSL* ssl, bool dialer, std::string_view label = link_records_label);

  // The record cipher of an established TLS 1.3 session; false for any other session.
  static bool session_cipher(SSL* ssl, record_cipher& cipher);

  // Appends `plain` to `out` as records of at most max_plaintext bytes each.
  boost::system::error_code seal(std::span<const std::uint8_t> plain, byte_buffer& out);
  // Appends one record holding the alert (close_notify is a warning, the others fatal). Nothing
  // should be sealed after it.
  boost::system::error_code seal_alert(record_alert alert, byte_buffer& out);
  // Opens the whole records at the front of `in`, appending their plaintext to `plain`; `used`
  // says how many bytes of `in` they took (a record not yet whole stays). On an error `used`
  // covers the records before the bad one, and the session must end: the sequence is broken.
  // An alert from the peer ends the opening too, as close_notify or peer_alert, and `used`
  // includes its record.
  boost::system::error_code open(std::span<const std::uint8_t> in, byte_buffer& plain,
                                 std::size_t& used);
  // The same into `out`, stopping before the first record whose plaintext would not fit;
  // `produced` says how much of `out` holds plaintext.
  boost::system::error_code open(std::span<const std::uint8_t> in, std::span<std::uint8_t> out,
                                 std::size_t& used, std::size_t& produced);
  // The size on the wire of the whole record at the front of `in`, or 0 while it is not whole
  // (or its header is bad, which open() reports as soon as the header is in).
  static std::size_t whole_record(std::span<const std::uint8_t> in);

  // Records sealed (opened) under the current key of each direction, and the keys' generation.
  std::uint64_t sent_in_key() const;
  std::uint64_t received_in_key() const;
  std::uint32_t send_generation() const;
  std::uint32_t receive_generation() const;

 private:
  struct direction;
  // Writes a generation's key and IV (key_size + 12 bytes); false when it cannot.
  using key_source = std::function<bool(std::uint32_t generation, std::span<std::uint8_t> out)>;
  // Opens the record at `h` (its body `body` bytes long) into `out`, which has `room` bytes, at
  // least its data's body - tag_size - 1; with one more, for the inner type, the record opens in
  // one call. `plain` is how many bytes are data (none for an alert).
  boost::system::error_code open_record(const std::uint8_t* h, std::size_t body, std::uint8_t* out,
                                        std::size_t room, std::size_t& plain);
  boost::system::error_code seal_record(std::span<const std::uint8_t> plain, std::uint8_t type,
                                        byte_buffer& out);
  std::unique_ptr<direction> send_, receive_;
};

}  // namespace burrow::link

template <>
struct boost::system::is_error_code_enum<burrow::link::record_error> : std::true_type {};
