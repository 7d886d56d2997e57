// Request and response heads as the HTTP proxy passes them on: parsed by Beast within bounds,
// the request stamped with X-Forwarded-*, both written back out byte for byte otherwise.
// Pure functions: the fuzz target drives them with arbitrary input.
#pragma once

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "http/head_parser.hpp"

namespace burrow::http {

// Request heads larger than this are answered with 431 and the connection is closed.
inline constexpr std::size_t max_head_size = 64 * 1024;

using request_head = boost::beast::http::request_header<>;
using response_head = boost::beast::http::response_header<>;

struct forwarded_for {
  std::string visitor_address;  // from the relay's stream metadata
  std::string scheme = "https";
  std::string host;  // X-Forwarded-Host when the request has no Host header (the SNI)
};

// Sets X-Forwarded-For to the visitor's address (values the client sent are dropped: the relay
// is the first hop that knows the address), X-Forwarded-Proto and X-Forwarded-Host.
void stamp_forwarded(request_head& head, const forwarded_for& f);

// The request head `raw`, as head_parser parsed it (facts.as_it_came), appended to `out` stamped
// as stamp_forwarded does: the X-Forwarded-* lines it had are left out, the three the proxy sets
// go last, and every other byte stays as it came.
void append_stamped_head(std::string& out, std::string_view raw, const head_facts& facts,
                         const forwarded_for& f);

// A response head the local service sent, appended to `out`: as it came when it can be
// (facts.as_it_came), otherwise written out again from a full parse; false when that fails.
bool append_response_head(std::string& out, std::string_view raw, const head_facts& facts);

// "METHOD TARGET HTTP/1.x\r\n" + fields + "\r\n", appended to `out`.
void append_head(std::string& out, const request_head& head);
// "HTTP/1.x STATUS REASON\r\n" + fields + "\r\n", appended to `out`.
void append_head(std::string& out, const response_head& head);

// A complete small response that closes the connection: status line, text body.
std::string simple_response(unsigned status, std::string_view reason, std::string_view body);

// A small HTML page for a status the relay or agent answers itself, closing the connection.
std::string page_response(unsigned status, std::string_view message);

// Parses the request head at the start of `bytes` (what follows is ignored); nullopt when it is
// invalid, incomplete or larger than max_head_size.
std::optional<request_head> parse_request_head(std::string_view bytes);

// Parses `bytes` as one request head (nothing after it is read), stamps it and writes it back
// out as the proxy does (append_stamped_head, or from a full parse when the head cannot go as
// it came); empty when the head is invalid or incomplete. What the fuzz target exercises.
std::string rewrite_request_head(std::string_view bytes, const forwarded_for& f);

// The same from a full parse always (the proxy's way before head_parser): the fuzz target
// checks that both say the same.
std::string rewrite_request_head_fully(std::string_view bytes, const forwarded_for& f);

}  // namespace burrow::http
