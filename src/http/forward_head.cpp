// Stamping and re-serialising HTTP/1.x heads.
#include "http/forward_head.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

namespace burrow::http {

namespace bh = boost::beast::http;

namespace {

void append_version(std::string& out, unsigned version) {
  out += version == 10 ? "HTTP/1.0" : "HTTP/1.1";
}

void append_fields(std::string& out, const bh::fields& fields) {
  for (const auto& f : fields) {
    out += f.name_string();
    out += ": ";
    out += f.value();
    out += "\r\n";
  }
  out += "\r\n";
}

// Values that come from the relay's metadata, not from the parsed head: only characters that
// cannot end a header line or field get through.
std::string_view safe_value(std::string_view v) {
  for (char c : v)
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f || c == ',') return "unknown";
  return v.empty() ? std::string_view("unknown") : v;
}

// Parses the head at the start of `bytes` with `parser`, nothing after it: the bytes it took, or
// 0 when the head is invalid, incomplete or larger than max_head_size.
template <class Parser>
std::size_t parse_head(Parser& parser, std::string_view bytes) {
  parser.header_limit(static_cast<std::uint32_t>(max_head_size));
  parser.body_limit(boost::none);  // only the head is read; a body of any size may follow
  parser.eager(false);
  boost::system::error_code ec;
  std::size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  return ec || !parser.is_header_done() ? 0 : used;
}

}  // namespace

void stamp_forwarded(request_head& head, const forwarded_for& f) {
  head.set("X-Forwarded-For", safe_value(f.visitor_address));
  head.set("X-Forwarded-Proto", safe_value(f.scheme));
  std::string_view host = head[bh::field::host];
  std::string value(host.empty() ? safe_value(f.host) : host);
  head.set("X-Forwarded-Host", value);
}

void append_stamped_head(std::string& out, std::string_view raw, const head_facts& facts,
                         const forwarded_for& f) {
  // The blank line that ends the head is its last two bytes.
  const std::size_t blank = raw.size() - 2;
  std::size_t at = 0;
  for (std::size_t i = 0; i < facts.cut_count; ++i) {
    const auto& cut = facts.cuts[i];
    out.append(raw.substr(at, cut.from - at));
    at = cut.to == head_cut::to_blank_line ? blank : cut.to;
  }
  out.append(raw.substr(at, blank - at));
  out += "X-Forwarded-For: ";
  out += safe_value(f.visitor_address);
  out += "\r\nX-Forwarded-Proto: ";
  out += safe_value(f.scheme);
  out += "\r\nX-Forwarded-Host: ";
  if (facts.has_host && facts.host_size > 0)
    out += raw.substr(facts.host_at, facts.host_size);
  else
    out += safe_value(f.host);
  out += "\r\n\r\n";
}

bool append_response_head(std::string& out, std::string_view raw, const head_facts& facts) {
  if (facts.as_it_came) {
    out += raw;
    return true;
  }
  bh::response_parser<bh::empty_body> parser;
  if (parse_head(parser, raw) == 0) return false;
  append_head(out, parser.get().base());
  return true;
}

void append_head(std::string& out, const request_head& head) {
  out += head.method_string();
  out += ' ';
  out += head.target();
  out += ' ';
  append_version(out, head.version());
  out += "\r\n";
  append_fields(out, head);
}

void append_head(std::string& out, const response_head& head) {
  append_version(out, head.version());
  out += ' ';
  out += std::to_string(head.result_int());
  out += ' ';
  out += head.reason();
  out += "\r\n";
  append_fields(out, head);
}

std::string simple_response(unsigned status, std::string_view reason, std::string_view body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
  out += reason;
  out += "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n";
  out += body;
  return out;
}

std::string page_response(unsigned status, std::string_view message) {
  std::string escaped;
  for (char c : message) {
    switch (c) {
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '&':
        escaped += "&amp;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  std::string body = "<!doctype html><meta charset=\"utf-8\"><title>" + std::to_string(status) +
                     "</title><body style=\"font-family:sans-serif\"><h1>" + escaped +
                     "</h1><p>served by the Burrow relay</p></body>\n";
  std::string reason = status == 404   ? "Not Found"
                       : status == 502 ? "Bad Gateway"
                       : status == 400 ? "Bad Request"
                                       : "Error";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n" +
         body;
}

std::optional<request_head> parse_request_head(std::string_view bytes) {
  bh::request_parser<bh::empty_body> parser;
  if (parse_head(parser, bytes) == 0) return std::nullopt;
  return parser.get().base();
}

std::string rewrite_request_head(std::string_view bytes, const forwarded_for& f) {
  head_parser<true> parser;
  parser.set_input(bytes.data(), bytes.size());
  std::size_t used = parse_head(parser, bytes);
  if (used == 0) return {};
  if (!parser.facts().as_it_came) return rewrite_request_head_fully(bytes.substr(0, used), f);
  std::string out;
  append_stamped_head(out, bytes.substr(0, used), parser.facts(), f);
  return out;
}

std::string rewrite_request_head_fully(std::string_view bytes, const forwarded_for& f) {
  auto parsed = parse_request_head(bytes);
  if (!parsed) return {};
  request_head head = std::move(*parsed);
  stamp_forwarded(head, f);
  std::string out;
  append_head(out, head);
  return out;
}

}  // namespace burrow::http
