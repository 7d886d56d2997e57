// A Beast parser for the HTTP proxy that builds no header fields: Beast checks the head and
// frames the body as for any parser, and the proxy passes the head on as it came (its bytes),
// noting only what it needs on the way (method, status, version, the Host value, the lines of
// X-Forwarded-* it replaces). Body pieces land in a buffer the caller provides, as Beast's
// buffer_body does.
#pragma once

#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>

namespace burrow::http {

// Where, in a head's bytes, a field line the proxy drops starts and ends.
struct head_cut {
  std::uint32_t from = 0;
  std::uint32_t to = 0;  // head_cut::to_blank_line: up to the blank line that ends the head
  static constexpr std::uint32_t to_blank_line = UINT32_MAX;
};

struct head_facts {
  // False when the head cannot be passed on as it came: an HTTP version other than 1.0 and 1.1,
  // a value folded over lines (Beast unfolds it into a buffer of its own), or more
  // X-Forwarded-* lines than `cuts` holds. The proxy then writes the head out again from a full
  // parse, as it always did.
  bool as_it_came = true;
  int version = 11;
  unsigned status = 0;  // responses
  boost::beast::http::verb method = boost::beast::http::verb::unknown;
  // The method and target, as offsets and sizes in the head's bytes (requests).
  std::uint32_t method_at = 0;
  std::uint32_t method_size = 0;
  std::uint32_t target_at = 0;
  std::uint32_t target_size = 0;
  // The first Host value, as an offset and size in the head's bytes (requests).
  bool has_host = false;
  std::uint32_t host_at = 0;
  std::uint32_t host_size = 0;
  std::array<head_cut, 8> cuts{};  // X-Forwarded-For, -Proto and -Host lines (requests)
  std::size_t cut_count = 0;
};

// True for the request fields the proxy sets itself (docs/protocol.md, stamp_forwarded).
inline bool is_forwarding_field(std::string_view name) {
  return boost::beast::iequals(name, "X-Forwarded-For") ||
         boost::beast::iequals(name, "X-Forwarded-Proto") ||
         boost::beast::iequals(name, "X-Forwarded-Host");
}

template <bool isRequest>
class head_parser final : public boost::beast::http::basic_parser<isRequest> {
  using error_code = boost::system::error_code;
  using string_view = boost::beast::string_view;

 public:
  // Where decoded body bytes go: set both before each put(); put() advances `body_data` and
  // lowers `body_room` by what it wrote, and stops with need_buffer when the room is full.
  char* body_data = nullptr;
  std::size_t body_room = 0;

  // The bytes the next put() parses (a head is parsed in one put, from one contiguous buffer):
  // what the facts' offsets count from.
  void set_input(const char* data, std::size_t size) {
    input_ = data;
    input_size_ = size;
  }

  const head_facts& facts() const { return facts_; }

  using head_type = boost::beast::http::header<isRequest, boost::beast::http::fields>;
  // Builds the head's fields into `head` too, for a caller that reads them (access rules), as
  // Beast's own parser would: set before the put that parses the head.
  void keep_fields(head_type* head) { kept_ = head; }

 private:
  std::uint32_t offset_of(string_view s) const {
    return static_cast<std::uint32_t>(s.data() - input_);
  }
  bool in_input(string_view s) const {
    if (s.empty()) return true;
    auto* begin = input_;
    auto* end = input_ + input_size_;
    return std::less_equal<>()(begin, s.data()) && std::less_equal<>()(s.data() + s.size(), end);
  }
  void set_version(int version) {
    facts_.version = version;
    if (version != 10 && version != 11) facts_.as_it_came = false;
  }

  void on_request_impl(boost::beast::http::verb method, string_view method_string,
                       string_view target, int version, error_code&) override {
    if constexpr (isRequest) {
      if (kept_) {  // as Beast's own parser fills its header
        if (method != boost::beast::http::verb::unknown)
          kept_->method(method);
        else
          kept_->method_string(method_string);
        kept_->target(target);
        kept_->version(version);
      }
    }
    facts_.method = method;
    facts_.method_at = offset_of(method_string);
    facts_.method_size = static_cast<std::uint32_t>(method_string.size());
    facts_.target_at = offset_of(target);
    facts_.target_size = static_cast<std::uint32_t>(target.size());
    set_version(version);
  }
  void on_response_impl(int code, string_view reason, int version, error_code&) override {
    if constexpr (!isRequest) {
      if (kept_) {
        kept_->result(code);
        kept_->reason(reason);
        kept_->version(version);
      }
    }
    facts_.status = static_cast<unsigned>(code);
    set_version(version);
  }
  void on_field_impl(boost::beast::http::field f, string_view name, string_view value,
                     error_code&) override {
    if (kept_) kept_->insert(f, name, value);
    if (!in_input(name) || !in_input(value)) {
      facts_.as_it_came = false;
      return;
    }
    if (open_cut_) {
      facts_.cuts[facts_.cut_count - 1].to = offset_of(name);
      open_cut_ = false;
    }
    if constexpr (isRequest) {
      if (f == boost::beast::http::field::host && !facts_.has_host) {
        facts_.has_host = true;
        facts_.host_at = offset_of(value);
        facts_.host_size = static_cast<std::uint32_t>(value.size());
      } else if (is_forwarding_field(name)) {
        if (facts_.cut_count == facts_.cuts.size()) {
          facts_.as_it_came = false;
          return;
        }
        facts_.cuts[facts_.cut_count++] = {offset_of(name), head_cut::to_blank_line};
        open_cut_ = true;
      }
    }
  }
  void on_header_impl(error_code&) override { open_cut_ = false; }
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view body, error_code& ec) override { return take(body, ec); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override {
    return take(body, ec);
  }
  void on_finish_impl(error_code&) override {}

  std::size_t take(string_view body, error_code& ec) {
    std::size_t n = body.size() < body_room ? body.size() : body_room;
    if (n > 0) {
      std::memcpy(body_data, body.data(), n);
      body_data += n;
      body_room -= n;
    }
    if (n < body.size()) ec = boost::beast::http::error::need_buffer;
    return n;
  }

  head_facts facts_;
  const char* input_ = nullptr;
  std::size_t input_size_ = 0;
  bool open_cut_ = false;  // the last cut ends where the next field starts
  head_type* kept_ = nullptr;
};

}  // namespace burrow::http
