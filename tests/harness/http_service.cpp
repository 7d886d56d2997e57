// The Beast service behind http_service.hpp (a coroutine per connection, each on its own strand)
// and the blocking WebSocket echo clients.
#include "harness/http_service.hpp"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "core/spawn.hpp"
#include "harness/use_tuple.hpp"

namespace burrow::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr std::size_t chunk_size = 64 * 1024;
constexpr std::uint64_t max_body = std::uint64_t{1} << 40;  // bodies stream; this is a sanity cap
constexpr std::uint64_t max_wait_ms = 60'000;
constexpr auto idle_timeout = std::chrono::seconds(60);  // between requests on a connection
constexpr auto io_timeout = std::chrono::seconds(30);    // each read or write of a request

std::uint64_t splitmix64(std::uint64_t index) {
  std::uint64_t z = (index + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void fill_pattern(std::uint64_t offset, char* out, std::size_t n) {
  for (std::size_t i = 0; i < n;) {
    std::uint64_t pos = offset + i;
    std::uint64_t word = splitmix64(pos / 8);
    unsigned char bytes[8];
    for (int k = 0; k < 8; ++k) bytes[k] = static_cast<unsigned char>(word >> (8 * k));
    std::size_t skip = pos % 8;
    std::size_t take = std::min<std::size_t>(8 - skip, n - i);
    std::memcpy(out + i, bytes + skip, take);
    i += take;
  }
}

struct digest_deleter {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
using digest_ptr = std::unique_ptr<EVP_MD_CTX, digest_deleter>;

digest_ptr new_sha256() {
  digest_ptr d(EVP_MD_CTX_new());
  if (!d || EVP_DigestInit_ex(d.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("EVP_DigestInit_ex(sha256) failed");
  return d;
}

std::string finish_hex(EVP_MD_CTX* d) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(d, md, &len);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 0xF];
  }
  return out;
}

std::map<std::string, std::string> header_map(const http::fields& fields) {
  std::map<std::string, std::string> out;
  for (const auto& f : fields) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto [it, fresh] = out.try_emplace(name, f.value());
    if (!fresh) it->second.append(", ").append(f.value());
  }
  return out;
}

// The value of `key` in a query string ("a=1&b=2") as a number, if present and numeric.
std::optional<std::uint64_t> query_number(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != key) continue;
    auto value = pair.substr(eq + 1);
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc{} || end != value.data() + value.size()) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

// What stop() must reach in a live connection. Touched only on the connection's strand.
struct registration {
  asio::any_io_executor executor;
  tcp::socket* socket = nullptr;
  asio::steady_timer* timer = nullptr;
};

// A connection's I/O state, owned by its session coroutine's frame.
struct session_io {
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  asio::steady_timer timer;
  std::vector<char> scratch = std::vector<char>(chunk_size);
};

using request_parser = http::request_parser<http::buffer_body>;
using request_header = http::request<http::buffer_body>;  // its body is read separately

enum class next_step { keep_alive, close, upgrade };

}  // namespace

struct http_service::impl {
  // Declared first so that they outlive the io_context: destroying it destroys unfinished
  // sessions, which withdraw their registrations.
  std::mutex mutex;
  std::condition_variable threads_done;
  std::size_t running = 0;
  bool stopping = false;
  std::set<std::shared_ptr<registration>> live;
  std::map<std::string, std::string> last_headers;
  std::atomic<std::size_t> requests{0};
  std::atomic<std::size_t> connections{0};

  asio::io_context ioc;
  asio::strand<asio::io_context::executor_type> accept_strand = asio::make_strand(ioc);
  tcp::acceptor acceptor{accept_strand};
  std::vector<std::thread> threads;

  // nullptr once stop() has begun: the caller must then just close.
  std::shared_ptr<registration> enroll(asio::any_io_executor ex, tcp::socket* s,
                                       asio::steady_timer* t) {
    std::lock_guard lock(mutex);
    if (stopping) return nullptr;
    auto r = std::make_shared<registration>(registration{std::move(ex), s, t});
    live.insert(r);
    return r;
  }
  void withdraw(const std::shared_ptr<registration>& r) {
    r->socket = nullptr;
    r->timer = nullptr;
    std::lock_guard lock(mutex);
    live.erase(r);
  }
  void note_request(const request_header& h) {
    requests.fetch_add(1);
    auto headers = header_map(h);
    std::lock_guard lock(mutex);
    last_headers = std::move(headers);
  }
};

namespace {

using service = http_service::impl;

struct withdraw_on_exit {
  service* svc;
  std::shared_ptr<registration> reg;
  ~withdraw_on_exit() { svc->withdraw(reg); }
};

// Views, not strings: GCC 12 may destroy twice a temporary made inside a co_await expression.
asio::awaitable<bool> write_text(session_io* io, const request_header* req, http::status status,
                                 std::string_view content_type, std::string_view body,
                                 bool close = false) {
  http::response<http::string_body> res{status, req->version()};
  res.set(http::field::server, "burrow-test");
  res.set(http::field::content_type, content_type);
  res.keep_alive(req->keep_alive() && !close);
  res.body() = body;
  res.prepare_payload();
  io->stream.expires_after(io_timeout);
  auto [ec, n] = co_await http::async_write(io->stream, res, use_tuple);
  co_return !ec && res.keep_alive();
}

// Answers "Expect: 100-continue" so that clients (curl) send the body without waiting.
asio::awaitable<bool> continue_if_expected(session_io* io, const request_header* req) {
  if (!beast::iequals((*req)[http::field::expect], "100-continue")) co_return true;
  http::response<http::empty_body> res{http::status::continue_, req->version()};
  io->stream.expires_after(io_timeout);
  auto [ec, n] = co_await http::async_write(io->stream, res, use_tuple);
  co_return !ec;
}

// Reads the next piece of the body into io->scratch; the byte count, or nullopt on error.
asio::awaitable<std::optional<std::size_t>> read_body_piece(session_io* io,
                                                            request_parser* parser) {
  auto& body = parser->get().body();
  body.data = io->scratch.data();
  body.size = io->scratch.size();
  io->stream.expires_after(io_timeout);
  auto [ec, n] = co_await http::async_read_some(io->stream, io->buffer, *parser, use_tuple);
  if (ec && ec != http::error::need_buffer) co_return std::nullopt;
  co_return io->scratch.size() - body.size;
}

asio::awaitable<bool> drain_body(session_io* io, request_parser* parser) {
  while (!parser->is_done()) {
    auto got = co_await read_body_piece(io, parser);
    if (!got) co_return false;
  }
  co_return true;
}

asio::awaitable<bool> serve_sha256(session_io* io, request_parser* parser) {
  const auto& req = parser->get();
  bool continued = co_await continue_if_expected(io, &req);
  if (!continued) co_return false;
  auto digest = new_sha256();
  std::uint64_t length = 0;
  while (!parser->is_done()) {
    auto got = co_await read_body_piece(io, parser);
    if (!got) co_return false;
    EVP_DigestUpdate(digest.get(), io->scratch.data(), *got);
    length += *got;
  }
  std::string answer = finish_hex(digest.get()) + " " + std::to_string(length);
  co_return co_await write_text(io, &req, http::status::ok, "text/plain", answer);
}

// Writes the body piece already in res.body(); need_buffer is the serializer asking for more.
asio::awaitable<bool> write_piece(session_io* io,
                                  http::response_serializer<http::buffer_body>* sr) {
  io->stream.expires_after(io_timeout);
  auto [ec, n] = co_await http::async_write(io->stream, *sr, use_tuple);
  co_return !ec || ec == http::error::need_buffer;
}

asio::awaitable<bool> write_last_piece(session_io* io, http::response<http::buffer_body>* res,
                                       http::response_serializer<http::buffer_body>* sr) {
  res->body().data = nullptr;
  res->body().size = 0;
  res->body().more = false;
  co_return co_await write_piece(io, sr);
}

asio::awaitable<bool> serve_echo(session_io* io, request_parser* parser) {
  const auto& req = parser->get();
  bool continued = co_await continue_if_expected(io, &req);
  if (!continued) co_return false;
  http::response<http::buffer_body> res{http::status::ok, req.version()};
  res.set(http::field::server, "burrow-test");
  res.set(http::field::content_type, "application/octet-stream");
  res.keep_alive(req.keep_alive());
  res.chunked(true);
  http::response_serializer<http::buffer_body> sr{res};
  io->stream.expires_after(io_timeout);
  auto [head_ec, head_n] = co_await http::async_write_header(io->stream, sr, use_tuple);
  if (head_ec) co_return false;
  // Each piece is written before the next is read: the echo keeps pace with the sender.
  while (!parser->is_done()) {
    auto got = co_await read_body_piece(io, parser);
    if (!got) co_return false;
    if (*got == 0) continue;
    res.body().data = io->scratch.data();
    res.body().size = *got;
    res.body().more = true;
    bool written = co_await write_piece(io, &sr);
    if (!written) co_return false;
  }
  bool sent = co_await write_last_piece(io, &res, &sr);
  co_return sent&& res.keep_alive();
}

asio::awaitable<bool> serve_bytes(session_io* io, const request_header* req, std::uint64_t total,
                                  bool chunked) {
  http::response<http::buffer_body> res{http::status::ok, req->version()};
  res.set(http::field::server, "burrow-test");
  res.set(http::field::content_type, "application/octet-stream");
  res.keep_alive(req->keep_alive());
  if (chunked)
    res.chunked(true);
  else
    res.content_length(total);
  http::response_serializer<http::buffer_body> sr{res};
  io->stream.expires_after(io_timeout);
  auto [head_ec, head_n] = co_await http::async_write_header(io->stream, sr, use_tuple);
  if (head_ec) co_return false;
  if (req->method() == http::verb::head) co_return res.keep_alive();  // the head alone
  for (std::uint64_t offset = 0; offset < total;) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_size, total - offset));
    fill_pattern(offset, io->scratch.data(), n);
    res.body().data = io->scratch.data();
    res.body().size = n;
    res.body().more = true;
    bool written = co_await write_piece(io, &sr);
    if (!written) co_return false;
    offset += n;
  }
  bool sent = co_await write_last_piece(io, &res, &sr);
  co_return sent&& res.keep_alive();
}

// Close-delimited (no Content-Length, not chunked), as event streams often are behind proxies.
asio::awaitable<bool> serve_sse(session_io* io, const request_header* req, std::uint64_t count,
                                std::uint64_t interval_ms) {
  http::response<http::buffer_body> res{http::status::ok, req->version()};
  res.set(http::field::server, "burrow-test");
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  res.keep_alive(false);
  http::response_serializer<http::buffer_body> sr{res};
  io->stream.expires_after(io_timeout);
  auto [head_ec, head_n] = co_await http::async_write_header(io->stream, sr, use_tuple);
  if (head_ec) co_return false;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (i > 0) {
      io->timer.expires_after(std::chrono::milliseconds(interval_ms));
      auto [ec] = co_await io->timer.async_wait(use_tuple);
      if (ec) co_return false;  // stop()
    }
    std::string event = "data: event " + std::to_string(i) + "\n\n";
    res.body().data = event.data();
    res.body().size = event.size();
    res.body().more = true;
    bool written = co_await write_piece(io, &sr);
    if (!written) co_return false;
  }
  co_await write_last_piece(io, &res, &sr);
  co_return false;
}

asio::awaitable<bool> serve_slow(session_io* io, const request_header* req, std::uint64_t ms) {
  io->timer.expires_after(std::chrono::milliseconds(ms));
  auto [ec] = co_await io->timer.async_wait(use_tuple);
  if (ec) co_return false;  // stop()
  co_return co_await write_text(io, req, http::status::ok, "text/plain", "slow");
}

// Built outside the coroutine: GCC 12 mishandles initializer lists in coroutine frames.
std::string headers_json(const request_header& req) {
  boost::json::object headers;
  for (auto& [name, value] : header_map(req)) headers[name] = value;
  boost::json::object doc;
  doc["method"] = std::string(req.method_string());
  doc["target"] = std::string(req.target());
  doc["headers"] = std::move(headers);
  return boost::json::serialize(doc);
}

next_step to_step(bool keep_alive) {
  return keep_alive ? next_step::keep_alive : next_step::close;
}

asio::awaitable<next_step> route(session_io* io, request_parser* parser) {
  const request_header& req = parser->get();
  std::string_view target = req.target();
  auto q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  auto verb = req.method();
  if (path == "/sha256" && (verb == http::verb::post || verb == http::verb::put))
    co_return to_step(co_await serve_sha256(io, parser));
  if (path == "/echo" && verb == http::verb::post)
    co_return to_step(co_await serve_echo(io, parser));

  // The remaining routes ignore a request body; it is read before the next request.
  bool keep = false;
  if (path == "/headers" && verb == http::verb::get) {
    std::string json = headers_json(req);
    keep = co_await write_text(io, &req, http::status::ok, "application/json", json);
  } else if (path.starts_with("/bytes/") && (verb == http::verb::get || verb == http::verb::head)) {
    auto digits = path.substr(7);
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc{} || end != digits.data() + digits.size() || n > max_body)
      keep = co_await write_text(io, &req, http::status::bad_request, "text/plain", "bad length\n");
    else
      keep = co_await serve_bytes(io, &req, n, query_number(query, "chunked").value_or(0) != 0);
  } else if (path == "/sse" && verb == http::verb::get) {
    auto count = query_number(query, "count").value_or(3);
    auto interval = query_number(query, "interval_ms").value_or(100);
    if (count > 100'000 || interval > max_wait_ms)
      keep = co_await write_text(io, &req, http::status::bad_request, "text/plain",
                                 "count or interval_ms too large\n");
    else
      keep = co_await serve_sse(io, &req, count, interval);
  } else if (path == "/ws" && verb == http::verb::get) {
    if (websocket::is_upgrade(parser->get())) co_return next_step::upgrade;
    keep = co_await write_text(io, &req, http::status::upgrade_required, "text/plain",
                               "WebSocket upgrade expected\n");
  } else if (path == "/slow" && verb == http::verb::get) {
    auto ms = query_number(query, "ms").value_or(0);
    if (ms > max_wait_ms)
      keep =
          co_await write_text(io, &req, http::status::bad_request, "text/plain", "ms too large\n");
    else
      keep = co_await serve_slow(io, &req, ms);
  } else if (path == "/close" && verb == http::verb::get) {
    co_await write_text(io, &req, http::status::ok, "text/plain", "closing\n", true);
  } else {
    keep = co_await write_text(io, &req, http::status::not_found, "text/plain", "not found\n");
  }
  // GCC 12 miscompiles co_await inside && and ?:, hence the plain ifs in these coroutines.
  if (keep) keep = co_await drain_body(io, parser);
  co_return to_step(keep);
}

asio::awaitable<void> websocket_echo(std::shared_ptr<registration> reg, beast::tcp_stream stream,
                                     http::request<http::empty_body> req) {
  websocket::stream<beast::tcp_stream> ws(std::move(stream));
  reg->socket = &beast::get_lowest_layer(ws).socket();
  beast::get_lowest_layer(ws).expires_never();  // the websocket timeouts take over
  ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws.read_message_max(64 * 1024 * 1024);
  auto [accept_ec] = co_await ws.async_accept(req, use_tuple);
  if (accept_ec) co_return;
  beast::flat_buffer buffer;
  for (;;) {
    // websocket::error::closed after a close handshake; eof, timeouts or stop() otherwise.
    auto [read_ec, read_n] = co_await ws.async_read(buffer, use_tuple);
    if (read_ec) co_return;
    ws.text(ws.got_text());
    auto [write_ec, write_n] = co_await ws.async_write(buffer.data(), use_tuple);
    if (write_ec) co_return;
    buffer.consume(buffer.size());
  }
}

asio::awaitable<void> session(service* svc, tcp::socket socket) {
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // events and echoes go out as written
  auto ex = socket.get_executor();
  session_io io{beast::tcp_stream(std::move(socket)), {}, asio::steady_timer(ex)};
  auto reg = svc->enroll(ex, &io.stream.socket(), &io.timer);
  if (!reg) co_return;
  withdraw_on_exit guard{svc, reg};
  for (;;) {
    request_parser parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(max_body);
    io.stream.expires_after(idle_timeout);
    // eof, a timeout, stop() or a malformed head all end the connection.
    auto [ec, n] = co_await http::async_read_header(io.stream, io.buffer, parser, use_tuple);
    if (ec) break;
    svc->note_request(parser.get());
    auto step = co_await route(&io, &parser);
    if (step == next_step::upgrade) {
      http::request<http::empty_body> req(std::move(parser.get().base()));
      auto echo = websocket_echo(reg, std::move(io.stream), std::move(req));
      co_await std::move(echo);
      co_return;
    }
    if (step == next_step::close) break;
  }
  io.stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> accept_loop(service* svc) {
  for (;;) {
    auto [ec, socket] = co_await svc->acceptor.async_accept(asio::make_strand(svc->ioc), use_tuple);
    if (ec == asio::error::operation_aborted || !svc->acceptor.is_open()) co_return;
    if (ec) {  // EMFILE and friends: pause, then accept again
      asio::steady_timer pause(svc->accept_strand, std::chrono::milliseconds(50));
      co_await pause.async_wait(use_tuple);
      continue;
    }
    svc->connections.fetch_add(1);
    auto ex = socket.get_executor();
    spawn_logged(ex, session(svc, std::move(socket)), "http_service session");
  }
}

}  // namespace

http_service::http_service(http_service_options options) : impl_(std::make_unique<impl>()) {
  tcp::endpoint endpoint(asio::ip::make_address(options.host), options.port);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  port_ = impl_->acceptor.local_endpoint().port();
  spawn_logged(impl_->accept_strand, accept_loop(impl_.get()), "http_service accept loop");
  std::size_t count = std::max<std::size_t>(1, options.threads);
  impl_->running = count;
  for (std::size_t i = 0; i < count; ++i) {
    impl_->threads.emplace_back([svc = impl_.get()] {
      svc->ioc.run();
      std::lock_guard lock(svc->mutex);
      --svc->running;
      svc->threads_done.notify_all();
    });
  }
}

http_service::~http_service() {
  stop();
}

void http_service::stop() {
  std::set<std::shared_ptr<registration>> live;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping) return;
    impl_->stopping = true;
    live = impl_->live;
  }
  asio::post(impl_->accept_strand, [svc = impl_.get()] {
    error_code ignored;
    svc->acceptor.close(ignored);
  });
  for (const auto& reg : live) {
    asio::post(reg->executor, [reg] {
      if (reg->timer) reg->timer->cancel();
      if (!reg->socket) return;
      error_code ignored;
      reg->socket->shutdown(tcp::socket::shutdown_both, ignored);
      reg->socket->close(ignored);
    });
  }
  {
    // Sessions end once their sockets close; if one does not, stopping the loop ends it.
    std::unique_lock lock(impl_->mutex);
    if (!impl_->threads_done.wait_for(lock, std::chrono::seconds(5),
                                      [&] { return impl_->running == 0; }))
      impl_->ioc.stop();
  }
  for (auto& t : impl_->threads) t.join();
}

std::size_t http_service::requests_seen() const {
  return impl_->requests.load();
}
std::size_t http_service::connections_seen() const {
  return impl_->connections.load();
}

std::map<std::string, std::string> http_service::last_headers() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->last_headers;
}

std::string pattern_bytes(std::uint64_t offset, std::size_t n) {
  std::string out(n, '\0');
  fill_pattern(offset, out.data(), n);
  return out;
}

std::string pattern_sha256_hex(std::uint64_t n) {
  auto digest = new_sha256();
  std::vector<char> buf(chunk_size);
  for (std::uint64_t offset = 0; offset < n;) {
    std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), n - offset));
    fill_pattern(offset, buf.data(), k);
    EVP_DigestUpdate(digest.get(), buf.data(), k);
    offset += k;
  }
  return finish_hex(digest.get());
}

// WebSocket clients ---------------------------------------------------------------------------

namespace {

[[noreturn]] void fail(const std::string& what, const error_code& ec) {
  throw std::runtime_error(what + ": " + ec.message());
}

template <class NextLayer>
asio::awaitable<std::vector<std::string>> ws_exchange(websocket::stream<NextLayer>* ws,
                                                      std::string host,
                                                      std::vector<std::string> messages,
                                                      bool binary, std::string who) {
  ws->set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
  ws->read_message_max(64 * 1024 * 1024);
  websocket::response_type upgrade;
  auto [upgrade_ec] = co_await ws->async_handshake(upgrade, host, "/ws", use_tuple);
  if (upgrade_ec)
    fail(who + ": WebSocket upgrade of /ws (HTTP status " + std::to_string(upgrade.result_int()) +
             ")",
         upgrade_ec);
  ws->binary(binary);
  std::vector<std::string> echoes;
  beast::flat_buffer buffer;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    std::string index = std::to_string(i);
    auto [write_ec, write_n] = co_await ws->async_write(asio::buffer(messages[i]), use_tuple);
    if (write_ec) fail(who + ": sending message " + index, write_ec);
    auto [read_ec, read_n] = co_await ws->async_read(buffer, use_tuple);
    if (read_ec) fail(who + ": reading the echo of message " + index, read_ec);
    if (ws->got_binary() != binary)
      throw std::runtime_error(who + ": the echo of message " + index + " came back as " +
                               (binary ? "text" : "binary"));
    echoes.push_back(beast::buffers_to_string(buffer.data()));
    buffer.consume(buffer.size());
  }
  auto [ec] = co_await ws->async_close(websocket::close_code::normal, use_tuple);
  // Over TLS the peer may close TCP right after its close frame, without close_notify.
  if (ec && ec != asio::ssl::error::stream_truncated) fail(who + ": closing", ec);
  co_return echoes;
}

asio::awaitable<void> connect_loopback(tcp::socket* socket, std::uint16_t port, std::string who) {
  tcp::endpoint endpoint(asio::ip::address_v4::loopback(), port);
  auto [ec] = co_await socket->async_connect(endpoint, use_tuple);
  if (ec) fail(who + ": connecting to 127.0.0.1:" + std::to_string(port), ec);
}

asio::awaitable<std::vector<std::string>> ws_plain_run(std::uint16_t port, std::string host,
                                                       std::vector<std::string> messages,
                                                       bool binary) {
  std::string who = "ws_echo_plain";
  websocket::stream<beast::tcp_stream> ws(co_await asio::this_coro::executor);
  auto connect = connect_loopback(&beast::get_lowest_layer(ws).socket(), port, who);
  co_await std::move(connect);
  auto exchange = ws_exchange(&ws, std::move(host), std::move(messages), binary, who);
  co_return co_await std::move(exchange);
}

asio::awaitable<std::vector<std::string>> ws_tls_run(std::uint16_t port, std::string sni,
                                                     asio::ssl::context* tls,
                                                     std::vector<std::string> messages,
                                                     bool binary) {
  std::string who = "ws_echo_over_tls";
  websocket::stream<asio::ssl::stream<beast::tcp_stream>> ws(co_await asio::this_coro::executor,
                                                             *tls);
  SSL* ssl = ws.next_layer().native_handle();
  error_code not_ip;
  (void)asio::ip::make_address(sni, not_ip);
  if (not_ip) {  // a DNS name: send it as SNI and check the certificate against it
    if (SSL_set_tlsext_host_name(ssl, sni.c_str()) != 1 || SSL_set1_host(ssl, sni.c_str()) != 1)
      throw std::runtime_error(who + ": cannot set SNI and host name " + sni);
  } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), sni.c_str()) != 1) {
    throw std::runtime_error(who + ": cannot set IP address " + sni + " to verify");
  }
  auto connect = connect_loopback(&beast::get_lowest_layer(ws).socket(), port, who);
  co_await std::move(connect);
  auto [ec] = co_await ws.next_layer().async_handshake(asio::ssl::stream_base::client, use_tuple);
  if (ec) {
    long verify = SSL_get_verify_result(ssl);
    std::string detail = verify == X509_V_OK ? ""
                                             : std::string(" (certificate: ") +
                                                   X509_verify_cert_error_string(verify) + ")";
    fail(who + ": TLS handshake with SNI " + sni + detail, ec);
  }
  auto exchange = ws_exchange(&ws, std::move(sni), std::move(messages), binary, who);
  co_return co_await std::move(exchange);
}

// Runs the exchange on `ioc` for at most `deadline`; its result, its exception, or a timeout.
std::vector<std::string> run_with_deadline(asio::io_context& ioc,
                                           asio::awaitable<std::vector<std::string>> exchange,
                                           std::chrono::milliseconds deadline, std::string who) {
  auto result = asio::co_spawn(ioc, std::move(exchange), asio::use_future);
  ioc.run_for(deadline);
  if (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    throw std::runtime_error(who + ": no result within " + std::to_string(deadline.count()) +
                             " ms");
  return result.get();
}

}  // namespace

std::vector<std::string> ws_echo_over_tls(std::uint16_t port, std::string sni_host,
                                          std::string ca_pem_file,
                                          std::vector<std::string> messages,
                                          std::chrono::milliseconds deadline, bool binary) {
  asio::ssl::context tls(asio::ssl::context::tls_client);  // outlives the io_context below
  error_code ec;
  tls.load_verify_file(ca_pem_file, ec);
  if (ec) fail("ws_echo_over_tls: loading CA file " + ca_pem_file, ec);
  tls.set_verify_mode(asio::ssl::verify_peer);
  asio::io_context ioc;
  return run_with_deadline(ioc,
                           ws_tls_run(port, std::move(sni_host), &tls, std::move(messages), binary),
                           deadline, "ws_echo_over_tls");
}

std::vector<std::string> ws_echo_plain(std::uint16_t port, std::string host_header,
                                       std::vector<std::string> messages,
                                       std::chrono::milliseconds deadline, bool binary) {
  asio::io_context ioc;
  return run_with_deadline(ioc,
                           ws_plain_run(port, std::move(host_header), std::move(messages), binary),
                           deadline, "ws_echo_plain");
}

}  // namespace burrow::test
