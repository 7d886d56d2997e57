// The HTTP/1.1 proxy: a request side (visitor to local) and a response side (local to visitor)
// running together, with a queue between them that keeps pipelined requests in order.
#include "http/proxy.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "core/spare_buffers.hpp"
#include "http/head_parser.hpp"
#include "link/event.hpp"

namespace burrow::http {

namespace asio = boost::asio;
namespace bh = boost::beast::http;
using boost::system::error_code;
using clock = std::chrono::steady_clock;

namespace {

// Reads and body pieces start small and grow to these sizes once a message needs them: a
// connection that carries small requests and responses (most of them) uses a few KiB per side
// instead of 16 KiB for each buffer. A read
// buffer is held only while a side has bytes in hand (none while it waits for a visitor's next
// request or the local service's answer), and between messages a side keeps no body piece or
// outbox larger than kept_between_messages ("The HTTP proxy: buffers only while bytes move").
constexpr std::size_t first_read_size = spare_buffer_size;
constexpr std::size_t read_size = 16 * 1024;
constexpr std::size_t min_piece_size = 1024;
constexpr std::size_t piece_size = 16 * 1024;
constexpr std::size_t flush_at = 32 * 1024;
constexpr std::size_t max_pipelined = 32;
constexpr std::size_t kept_between_messages = 4 * 1024;

std::atomic<std::size_t> read_bytes_held{0};

// The read buffers' storage: small ones from the thread's spares, and every byte counted.
template <class T>
struct read_allocator : spare_allocator<T> {
  read_allocator() = default;
  template <class U>
  read_allocator(const read_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    T* p = spare_allocator<T>::allocate(n);
    read_bytes_held.fetch_add(n * sizeof(T), std::memory_order_relaxed);
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept {
    read_bytes_held.fetch_sub(n * sizeof(T), std::memory_order_relaxed);
    spare_allocator<T>::deallocate(p, n);
  }
};

// Bytes from one side, with what has arrived but not been parsed yet.
struct inbound {
  duplex& io;
  boost::beast::basic_flat_buffer<read_allocator<char>> buf{max_head_size + read_size};
  bool eof = false;
  std::size_t next_read = first_read_size;  // read_size after a read that filled its room
  // Where the parser puts decoded body bytes: made for the first body that has any, grown when a
  // later one can use more, and kept for the connection while it is small (drop_large_piece()), so
  // responses of one size cost no allocation of their own.
  std::unique_ptr<char[]> piece = nullptr;
  std::size_t piece_capacity = 0;

  std::size_t capacity() const { return buf.capacity() + piece_capacity; }

  // A piece of at least `want` bytes (within min_piece_size and piece_size).
  char* piece_buffer(std::size_t want) {
    want = std::clamp(want, min_piece_size, piece_size);
    if (piece_capacity < want) {
      piece_capacity = std::min(piece_size, std::max(want, 2 * piece_capacity));
      piece = std::make_unique_for_overwrite<char[]>(piece_capacity);
    }
    return piece.get();
  }

  // Between messages: a large body piece goes back to the heap.
  void drop_large_piece() {
    if (piece_capacity <= kept_between_messages) return;
    piece.reset();
    piece_capacity = 0;
  }
  // Waiting for something other than this side's bytes: an empty read buffer goes back to the
  // spares too (fill() gives it back itself before it waits).
  void rest() {
    if (buf.size() == 0) buf.shrink_to_fit();
    drop_large_piece();
    io.rest();
  }

  asio::awaitable<error_code> fill() {
    for (;;) {
      if (buf.size() == 0 && !io.readable_now()) {
        // Nothing in hand and nothing to read yet: wait holding no buffer, nor the carrier.
        buf.shrink_to_fit();
        io.rest();
        auto ready = io.wait_readable();
        co_await std::move(ready);
      }
      std::size_t room = std::min(next_read, buf.max_size() - buf.size());
      if (room == 0) co_return bh::error::header_limit;
      error_code ec;
      auto reading = io.read_some(buf.prepare(room), ec);
      std::size_t n = co_await std::move(reading);
      buf.commit(n);
      if (ec == asio::error::would_block) continue;  // the wake-up found nothing: wait again
      if (n == room) next_read = read_size;
      if (ec == asio::error::eof) eof = true;
      co_return ec;
    }
  }
};

// Bytes for one side, gathered so that a head and a small body leave in one write.
struct outbound {
  duplex& io;
  std::string pending = {};

  asio::awaitable<error_code> flush() {
    if (pending.empty()) co_return error_code{};
    error_code ec;
    auto writing = io.write_all(asio::buffer(pending), ec);
    co_await std::move(writing);
    pending.clear();
    co_return ec;
  }

  // Between messages, once flushed: a large outbox goes back to the heap.
  void rest() {
    if (pending.empty() && pending.capacity() > kept_between_messages) std::string().swap(pending);
    io.rest();
  }
};

char hex_digit(std::size_t v) {
  return "0123456789abcdef"[v & 0xf];
}

void append_chunk(std::string& out, const char* data, std::size_t n) {
  char size[2 * sizeof(std::size_t)];
  std::size_t len = 0;
  for (std::size_t v = n; v; v >>= 4) size[len++] = hex_digit(v);
  while (len) out += size[--len];
  out += "\r\n";
  out.append(data, n);
  out += "\r\n";
}

template <class Parser>
void prepare_parser(Parser& p) {
  p.header_limit(static_cast<std::uint32_t>(max_head_size));
  p.body_limit(boost::none);  // uploads and downloads of any size stream through
  p.eager(false);
}

// Parses a head from `in`, reading as needed; an outbox is flushed before each wait so the other
// side is never kept waiting for bytes already in hand. The head's bytes go to `head` when given.
// Beast takes the start line and each whole field line as soon as they are in, before the head
// has ended; so that one put parses the whole head from one contiguous buffer (its bytes, and
// the offsets the parser's facts count from), the parser sees nothing until the blank line that
// ends the head is in, or more than a head may hold (which it refuses).
template <class Parser>
asio::awaitable<error_code> read_head(inbound& in, Parser& p, outbound& out,
                                      std::string* head = nullptr) {
  in.drop_large_piece();
  if (head && head->capacity() > kept_between_messages) std::string().swap(*head);
  std::size_t searched = 0;  // bytes known to hold no end of head, but for its last three
  for (;;) {
    error_code ec = bh::error::need_more;
    if (in.buf.size() > 0) {
      auto data = in.buf.data();
      const char* bytes = static_cast<const char*>(data.data());
      const std::string_view seen(bytes, data.size());
      if (seen.size() <= max_head_size && seen.find("\r\n\r\n", searched) == seen.npos) {
        searched = seen.size() < 3 ? 0 : seen.size() - 3;
      } else {
        if constexpr (requires { p.set_input(bytes, data.size()); })
          p.set_input(bytes, data.size());
        std::size_t used = p.put(data, ec);
        if (p.is_header_done() && head) head->assign(bytes, used);
        in.buf.consume(used);
        if (p.is_header_done()) co_return error_code{};
        searched = 0;
      }
    }
    if (ec != bh::error::need_more) co_return ec;
    if (in.eof) co_return asio::error::eof;
    if (auto flushed = co_await out.flush(); flushed) co_return flushed;
    out.rest();
    if (auto filled = co_await in.fill(); filled && filled != asio::error::eof) co_return filled;
  }
}

// Moves the body of the message `p` is parsing from `in` to `out`, piece by piece, framed as it
// came: chunked stays chunked (trailers are dropped), a length stays a length, and a body that
// ends with the connection ends when `in` reaches EOF.
template <class Parser>
asio::awaitable<error_code> forward_body(inbound& in, Parser& p, outbound& out) {
  bool chunked = p.chunked();
  while (!p.is_done()) {
    // No more than the body still to come, or than the bytes in hand can decode to.
    std::size_t want = in.buf.size();
    if (auto left = p.content_length_remaining())
      want = static_cast<std::size_t>(std::min<std::uint64_t>(*left, want));
    char* piece = in.piece_buffer(want);
    const std::size_t room = in.piece_capacity;
    p.body_data = piece;
    p.body_room = room;
    error_code ec = bh::error::need_more;
    std::size_t used = 0;
    if (in.buf.size() > 0) {
      used = p.put(in.buf.data(), ec);
      in.buf.consume(used);
    }
    if (ec == bh::error::need_buffer) ec = {};
    std::size_t produced = room - p.body_room;
    if (produced > 0) {
      if (chunked)
        append_chunk(out.pending, piece, produced);
      else
        out.pending.append(piece, produced);
      if (out.pending.size() >= flush_at)
        if (auto flushed = co_await out.flush(); flushed) co_return flushed;
    }
    if (p.is_done()) break;
    if (ec && ec != bh::error::need_more) co_return ec;
    if (ec || (used == 0 && produced == 0)) {
      if (in.eof) {
        p.put_eof(ec);
        if (ec) co_return ec;
        continue;
      }
      if (auto flushed = co_await out.flush(); flushed) co_return flushed;
      if (auto filled = co_await in.fill(); filled && filled != asio::error::eof) co_return filled;
    }
  }
  if (chunked) out.pending += "0\r\n\r\n";
  co_return error_code{};
}

// After an accepted upgrade: whatever was already read, then every byte, until EOF.
asio::awaitable<error_code> pipe(inbound& in, outbound& out) {
  auto& pending = out.pending;
  auto take = [&] {
    auto b = in.buf.data();
    pending.append(static_cast<const char*>(b.data()), b.size());
    in.buf.consume(b.size());
  };
  take();
  if (auto flushed = co_await out.flush(); flushed) co_return flushed;
  while (!in.eof) {
    auto filled = co_await in.fill();
    if (filled && filled != asio::error::eof) co_return filled;
    take();
    if (auto flushed = co_await out.flush(); flushed) co_return flushed;
  }
  error_code ec;
  auto closing = out.io.shutdown_send(ec);
  co_await std::move(closing);
  co_return ec;
}

class session {
 public:
  session(duplex& visitor, duplex& local, proxy_options options, const asio::any_io_executor& ex)
      : options_(std::move(options)),
        from_visitor_{visitor},
        to_visitor_{visitor},
        from_local_{local},
        to_local_{local},
        queue_changed_(ex),
        verdict_ready_(ex) {}

  asio::awaitable<proxy_result> run() {
    using namespace asio::experimental::awaitable_operators;
    co_await ((requests() && responses()) || watchdog());
    result_.buffer_capacity = from_visitor_.capacity() + from_local_.capacity() +
                              to_visitor_.pending.capacity() + to_local_.pending.capacity();
    co_return result_;
  }

 private:
  struct pending {
    bool is_head = false;
    bool upgrade = false;
    std::string refusal;  // a response to send instead of the local service's
    std::string method;   // kept only when on_response wants them
    std::string target;
  };
  static pending refusing(std::string response) {
    pending p;
    p.refusal = std::move(response);
    return p;
  }
  enum class verdict { waiting, upgraded, declined };

  void fail(std::string why) {
    if (!result_.error.empty() || closed_) return;
    result_.error = std::move(why);
    closed_ = true;
    to_visitor_.io.abort();
    to_local_.io.abort();
    queue_changed_.notify();
    verdict_ready_.notify();
  }

  void push(pending p) {
    queue_.push_back(std::move(p));
    queue_changed_.notify();
  }

  asio::awaitable<void> requests() {
    while (!closed_) {
      std::optional<head_parser<true>> p(std::in_place);
      prepare_parser(*p);
      // The fields themselves only for a callback that reads them (parsed in the same pass), or
      // for a head that cannot be passed on as it came (below).
      std::optional<request_head> head;
      if (options_.screen) p->keep_fields(&head.emplace());
      head_deadline_ = clock::now() + options_.head_timeout;
      error_code ec = co_await read_head(from_visitor_, *p, to_local_, &head_bytes_);
      head_deadline_ = clock::time_point::max();
      if (closed_) break;
      if (ec == asio::error::eof && from_visitor_.buf.size() == 0) {
        // The visitor is done sending; the local service hears the same.
        co_await to_local_.flush();
        error_code ignored;
        auto closing = to_local_.io.shutdown_send(ignored);
        co_await std::move(closing);
        break;
      }
      if (ec == bh::error::header_limit) {
        push(refusing(
            simple_response(431, "Request Header Fields Too Large", "request head too large\n")));
        break;
      }
      if (ec == asio::error::eof ||
          (ec && ec.category() == bh::make_error_code(bh::error::bad_target).category())) {
        push(refusing(simple_response(400, "Bad Request", "malformed request\n")));
        break;
      }
      if (ec) {
        fail("visitor: " + ec.message());
        break;
      }
      const head_facts& facts = p->facts();
      pending item;
      item.is_head = facts.method == bh::verb::head;
      item.upgrade = p->upgrade();
      if (!head && !facts.as_it_came) {
        head = parse_request_head(head_bytes_);
        if (!head) {  // what head_parser took, the full parse takes too; but never forward it
          push(refusing(simple_response(400, "Bad Request", "malformed request\n")));
          break;
        }
      }
      if (options_.screen) {
        item.refusal = options_.screen(*head);
        if (!item.refusal.empty()) {
          push(std::move(item));
          break;
        }
      }
      if (options_.on_request) options_.on_request();
      bool keep_alive = p->keep_alive();
      if (facts.as_it_came) {
        append_stamped_head(to_local_.pending, head_bytes_, facts, options_.forwarded);
      } else {
        stamp_forwarded(*head, options_.forwarded);
        append_head(to_local_.pending, *head);
      }
      if (options_.on_response) {
        std::string_view bytes = head_bytes_;
        item.method = bytes.substr(facts.method_at, facts.method_size);
        item.target = bytes.substr(facts.target_at, facts.target_size);
      }
      bool upgrade = item.upgrade;
      while (queue_.size() >= max_pipelined && !closed_) co_await queue_changed_.wait();
      push(std::move(item));
      ++result_.requests;
      ec = co_await forward_body(from_visitor_, *p, to_local_);
      if (!ec && (upgrade || from_visitor_.buf.size() == 0)) ec = co_await to_local_.flush();
      if (ec) {
        fail("forwarding a request body: " + ec.message());
        break;
      }
      if (upgrade) {
        while (verdict_ == verdict::waiting && !closed_) co_await verdict_ready_.wait();
        if (verdict_ == verdict::upgraded) {
          if (auto piped = co_await pipe(from_visitor_, to_local_); piped)
            fail("upgraded connection, visitor side: " + piped.message());
          co_return;
        }
        verdict_ = verdict::waiting;
      }
      if (!keep_alive) break;
    }
    requests_done_ = true;
    queue_changed_.notify();
    // No more requests will be served (a refusal, or the last request of the connection): read
    // and drop what the visitor still sends until it closes, so that closing does not reset the
    // connection under the answer it has yet to read. The head deadline bounds the wait.
    head_deadline_ = clock::now() + options_.head_timeout;
    while (!closed_ && !from_visitor_.eof) {
      from_visitor_.buf.consume(from_visitor_.buf.size());
      auto filled = co_await from_visitor_.fill();
      if (filled && filled != asio::error::eof) break;
    }
    head_deadline_ = clock::time_point::max();
  }

  asio::awaitable<void> responses() {
    while (!closed_) {
      if (queue_.empty()) {
        if (requests_done_) break;
        // The visitor's next request is awaited: the local side rests too.
        from_local_.rest();
        to_visitor_.rest();
        co_await queue_changed_.wait();
        continue;
      }
      pending item = std::move(queue_.front());
      queue_.pop_front();
      queue_changed_.notify();
      if (!item.refusal.empty()) {
        to_visitor_.pending += item.refusal;
        break;
      }
      std::optional<head_parser<false>> p;
      unsigned status = 0;
      error_code ec;
      for (;;) {
        p.emplace();
        prepare_parser(*p);
        if (item.is_head) p->skip(true);
        ec = co_await read_head(from_local_, *p, to_visitor_, &head_bytes_from_local_);
        if (ec) break;
        status = p->facts().status;
        if (status >= 200 || status == 101) break;
        // 100 Continue, 103 Early Hints
        if (!append_response_head(to_visitor_.pending, head_bytes_from_local_, p->facts())) {
          ec = bh::error::bad_value;
          break;
        }
      }
      if (ec) {
        if (ec == asio::error::eof && from_local_.buf.size() == 0 && status == 0) {
          to_visitor_.pending += simple_response(
              502, "Bad Gateway", "the local service closed the connection without answering\n");
        } else {
          fail("local service: " + ec.message());
        }
        break;
      }
      if (!append_response_head(to_visitor_.pending, head_bytes_from_local_, p->facts())) {
        fail("local service: a response head that does not parse again");
        break;
      }
      if (options_.on_response) options_.on_response(item.method, item.target, status);
      if (item.upgrade) {
        verdict_ = status == 101 ? verdict::upgraded : verdict::declined;
        verdict_ready_.notify();
      }
      if (status == 101) {
        if (!item.upgrade) {
          fail("local service switched protocols without an upgrade request");
          co_return;
        }
        result_.upgraded = true;
        if (auto piped = co_await pipe(from_local_, to_visitor_); piped)
          fail("upgraded connection, local side: " + piped.message());
        co_return;
      }
      ec = co_await forward_body(from_local_, *p, to_visitor_);
      if (ec) {
        fail("forwarding a response body: " + ec.message());
        break;
      }
      if (!p->keep_alive()) break;
      if (from_local_.buf.size() == 0 || queue_.empty()) {
        if (auto flushed = co_await to_visitor_.flush(); flushed) {
          fail("visitor: " + flushed.message());
          break;
        }
      }
    }
    if (closed_) co_return;
    // This connection is done: what is left, then close_notify and FIN toward the visitor. Its
    // request side ends when the visitor closes too (or its head deadline passes).
    closing_ = true;
    error_code ec = co_await to_visitor_.flush();
    if (!ec) {
      auto closing = to_visitor_.io.shutdown_send(ec);
      co_await std::move(closing);
    }
    verdict_ready_.notify();
  }

  asio::awaitable<void> watchdog() {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;) {
      auto deadline = head_deadline_;
      timer.expires_at(deadline == clock::time_point::max() ? clock::now() + options_.head_timeout
                                                            : deadline);
      auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;  // the proxy finished first
      if (head_deadline_ != clock::time_point::max() && clock::now() >= head_deadline_) {
        if (closing_) {
          // The answer is out; the visitor just has not closed its side.
          closed_ = true;
          from_visitor_.io.abort();
          co_return;
        }
        fail("no request within " + std::to_string(options_.head_timeout.count()) + " ms");
        co_return;
      }
    }
  }

  proxy_options options_;
  inbound from_visitor_;
  outbound to_visitor_;
  inbound from_local_;
  outbound to_local_;
  std::deque<pending> queue_;
  link::event queue_changed_;
  link::event verdict_ready_;
  verdict verdict_ = verdict::waiting;
  bool requests_done_ = false;
  bool closing_ = false;  // the response side closed the visitor's connection
  bool closed_ = false;   // aborted: every wait gives up
  clock::time_point head_deadline_ = clock::time_point::max();
  proxy_result result_;
  // The last head read from each side, as it came (kept for the connection: no allocation per
  // request once they have their size).
  std::string head_bytes_;
  std::string head_bytes_from_local_;
};

}  // namespace

asio::awaitable<void> answer_and_close(duplex& visitor, std::string response) {
  inbound in{visitor};
  outbound out{visitor};
  bh::request_parser<bh::empty_body> p;
  p.header_limit(static_cast<std::uint32_t>(max_head_size));
  out.pending = std::move(response);
  if (auto ec = co_await read_head(in, p, out); ec && ec != asio::error::eof) co_return;
  if (auto ec = co_await out.flush(); ec) co_return;
  error_code ec;
  auto closing = visitor.shutdown_send(ec);
  co_await std::move(closing);
  while (!ec && !in.eof) {
    in.buf.consume(in.buf.size());
    ec = co_await in.fill();
  }
}

std::size_t proxy_read_buffer_bytes() {
  return read_bytes_held.load(std::memory_order_relaxed);
}

asio::awaitable<proxy_result> proxy(duplex& visitor, duplex& local, proxy_options options) {
  session s(visitor, local, std::move(options), co_await asio::this_coro::executor);
  auto running = s.run();
  co_return co_await std::move(running);
}

}  // namespace burrow::http
