// Pure pieces of the ACME protocol (RFC 8555), apart from I/O: problem documents, Retry-After,
// and the account's certificate request.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace burrow::acme {

// "TYPE: DETAIL" from an ACME problem document (RFC 7807 / RFC 8555 section 6.7), else "HTTP
// STATUS". Control characters are dropped and the text is bounded (server-chosen; it is logged).
std::string describe_problem(unsigned status, std::string_view body);

// The problem document's "type" ("urn:ietf:params:acme:error:badNonce"), or "".
std::string problem_type(std::string_view body);

// Printable ASCII of `text`, at most `limit` bytes, "..." marking a cut.
std::string printable(std::string_view text, std::size_t limit = 300);

// Retry-After in delta-seconds form; nullopt for an HTTP date or anything else.
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value);

// A DER PKCS#10 request for `domain` (subject CN and subjectAltName dNSName), signed with the
// private key in `key_pem`, which stays with the caller.
std::string make_order_csr(std::string_view key_pem, std::string_view domain);

}  // namespace burrow::acme
