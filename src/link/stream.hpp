// One visitor connection inside a link: credit in both directions, a queue for bytes that the
// local socket has not taken yet, and the pump that moves bytes between socket and link.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "link/byte_buffer.hpp"
#include "link/event.hpp"
#include "link/flow_window.hpp"
#include "link/rate_limit.hpp"
#include "proto/frame.hpp"

namespace burrow::link {

class link;

class stream : public std::enable_shared_from_this<stream> {
 public:
  stream(std::shared_ptr<link> owner, std::uint32_t id, std::uint32_t window);
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  std::uint32_t id() const { return id_; }
  // Sealed: the two ends encrypt and authenticate the stream's bytes themselves, so its data and
  // window frames travel outside the link's TLS (link::open_stream and the link's open decide).
  bool sealed() const { return sealed_; }
  void mark_sealed() { sealed_ = true; }
  boost::asio::any_io_executor executor() const;
  bool is_reset() const { return reset_; }
  proto::stream_status reset_status() const { return reset_status_; }
  bool open_confirmed() const { return open_confirmed_; }
  // Why the peer refused to open this stream (its open_result text), if it did.
  const std::string& refusal_reason() const { return refusal_reason_; }
  std::chrono::steady_clock::time_point opened_at() const { return opened_at_; }
  std::chrono::steady_clock::time_point last_activity() const { return last_activity_; }
  std::uint64_t bytes_in() const { return bytes_in_; }
  std::uint64_t bytes_out() const { return bytes_out_; }
  // Bytes from the peer queued here (not yet taken), and the memory the queue holds for them.
  std::size_t queued() const { return inbound_.size(); }
  std::size_t queue_capacity() const { return inbound_.capacity(); }
  // The largest queue given back as soon as it empties (give_back_small_queue).
  static constexpr std::size_t small_queue = 4 * 1024;

  // Moves bytes between `socket` and the link until both directions have finished or the stream
  // is reset. The caller owns the socket; on reset it is set to close with an RST. The socket
  // should have TCP_NODELAY already: accepted from a listener of make_acceptor's, which passes it
  // on, or set where it was connected (one system call fewer per connection here).
  boost::asio::awaitable<void> pump(boost::asio::ip::tcp::socket& socket);

  // Aborts the stream locally and tells the peer (unless the peer is the one who reset it).
  void reset(proto::stream_status status);

  // Reading and writing without a socket, for protocols carried inside the stream (TLS between
  // the two ends, say). At most one read and one write at a time. read_some ends with eof after
  // the peer's half-close; both end with connection_reset once the stream is reset.
  boost::asio::awaitable<std::size_t> read_some(boost::asio::mutable_buffer buffer,
                                                boost::system::error_code& ec);
  boost::asio::awaitable<std::size_t> write_some(boost::asio::const_buffer buffer,
                                                 boost::system::error_code& ec);
  // Returns once a read would not wait: bytes queued, the peer's half-close, or a reset.
  boost::asio::awaitable<void> wait_readable();
  bool readable_now() const { return reset_ || !inbound_.empty() || inbound_fin_; }
  // The relay's bridge between a visitor's stream and an agent's, with no coroutine (the relay
  // reads nothing but the frames: end to end, the bytes are TLS between the visitor and the
  // agent). From now on each of `a` and `b` hands what its peer sends on to the other from its
  // link's reader, queued bytes follow as credit and room on the far link come back, half-closes
  // follow the bytes, and a reset of either resets the other. Bandwidth caps apply as through a
  // read and a write: after bytes moved under a cap, credit goes back once a timer has waited out
  // the debt. `done` runs once, when both streams are finished (on either's thread). On one
  // executor the bytes go straight into the other link; on two (join_across, stream_cross.cpp) each
  // stream is touched only on its own and the bytes cross by posts, a chunk at a time. Call on
  // `a`'s executor; the two must not be read, written or bridged otherwise.
  static void join(const std::shared_ptr<stream>& a, const std::shared_ptr<stream>& b,
                   std::function<void()> done);
  // Sends all of `bytes`, waiting for credit as needed.
  boost::asio::awaitable<void> write_all(std::span<const std::uint8_t> bytes,
                                         boost::system::error_code& ec);
  // For a stream this side opened: waits until the peer accepts (ok) or refuses it.
  boost::asio::awaitable<proto::stream_status> wait_open_result();
  void shutdown_send();  // half-close toward the peer
  // Done with a stream used through read_some/write_some: resets it unless both sides
  // half-closed, and lets the link forget it.
  void finish();

  // `hook` runs on the stream's thread once the stream has moved no bytes for `quiet_after`
  // (checked by the link's keeper each second), and again only after the next quiet spell: a
  // protocol carried inside the stream (TLS) gives back the buffers it keeps while busy. Empty
  // removes it. A quiet stream gives back its own empty queue too.
  void on_quiet(std::function<void()> hook) { quiet_hook_ = std::move(hook); }
  static constexpr std::chrono::milliseconds quiet_after{1000};

  // Called by the link's reader.
  bool on_data(std::span<const std::uint8_t> bytes, bool fin);  // false: peer overran credit
  bool on_window(std::uint32_t increment);                      // false: overflow
  void on_reset(proto::stream_status status);
  void on_open_result(proto::stream_status status, std::string_view reason = {});
  // Called by the link once its write buffer has room again, for a joined stream that waited.
  void on_link_writable();
  // Called by the link's keeper: runs the quiet hook when it is due, gives back an empty queue.
  void notice_quiet(std::chrono::steady_clock::time_point now);

 private:
  boost::asio::awaitable<void> upstream();    // socket -> link
  boost::asio::awaitable<void> downstream();  // link -> socket
  // Credit from the peer and room on the link; the wait covers whichever is missing.
  bool send_ready() const;
  boost::asio::awaitable<void> wait_send_ready();
  void consumed(std::size_t n);
  void touch() {
    last_activity_ = std::chrono::steady_clock::now();
    quiet_told_ = false;
  }
  // Waits out the bandwidth cap after `n` bytes moved; called only when a cap is set.
  boost::asio::awaitable<void> throttle(std::size_t n);
  bool throttled() const { return limiter_ && limiter_->limited(); }
  // The join's two halves: whether `n` bytes can leave on this stream now as one frame, and
  // sending them.
  bool can_send_now(std::size_t n) const;
  void send_now(std::span<const std::uint8_t> bytes);
  // Between two links bytes are queued only while the far stream cannot take them: a first
  // flight while the relay waits for the agent's answer, a burst on a full link. Once passed
  // on, a queue that small gives its memory back at once (making it again is cheap and rare),
  // rather than holding it for the stream's whole life; a larger one (bulk, which keeps
  // queueing) stays until the stream goes quiet (notice_quiet).
  void give_back_small_queue();
  // join's work: moves what is queued here on to the joined stream while it has credit and
  // its link has room (else waits for on_window there or on_link_writable), then the
  // half-close; ends the join once both directions are through or either stream is reset.
  void pass_joined();
  void end_join();
  // A cap's wait on the joined path, in slices (each touches the stream, as throttle does);
  // then the `owed` credit goes back and the bytes move on.
  void wait_cap(std::chrono::nanoseconds wait, std::size_t owed);
  void arm_cap_timer();
  void on_cap_timer();

  // The join across two executors (stream_cross.cpp). Each stream passes what its peer sends to
  // the other as chunks, one in flight at a time, its credit given back as it leaves; and sends
  // the other's chunk on its own link as credit and room allow.
  struct cross_done {
    std::atomic<int> left{2};  // streams not finished yet
    std::function<void()> done;
  };
  struct cross_state {
    std::shared_ptr<stream> peer;  // touched only through posts to its executor
    std::shared_ptr<cross_done> shared;
    std::vector<std::uint8_t> out;  // the peer's chunk, being sent on this stream's link
    std::size_t out_at = 0;
    bool in_flight = false;   // a chunk of ours is with the peer
    bool fin_passed = false;  // the half-close we had went on after the bytes
  };
  static void join_across(const std::shared_ptr<stream>& a, const std::shared_ptr<stream>& b,
                          std::function<void()> done);
  void start_cross(std::shared_ptr<stream> peer, std::shared_ptr<cross_done> shared);
  void cross_start();
  void cross_pass();  // ours to the peer: the next chunk, or the half-close after the bytes
  void cross_post(std::vector<std::uint8_t> chunk);
  void cross_take(std::vector<std::uint8_t> chunk);  // the peer's chunk: sent on our link
  void cross_send();
  void cross_sent(std::chrono::nanoseconds wait);  // the peer sent our chunk; its cap's wait
  void cross_take_fin();
  void cross_check_done();
  void cross_reset_peer();
  void cross_end();

  std::shared_ptr<link> link_;
  std::shared_ptr<rate_limiter> limiter_;  // null: no cap, as on agents and visitor links
  std::uint32_t id_;
  boost::asio::ip::tcp::socket* socket_ = nullptr;

  send_window send_;
  receive_window receive_;
  byte_buffer inbound_;  // from the peer, not yet written to the socket
  event inbound_event_;
  event credit_event_;  // also wakes wait_open_result

  bool inbound_fin_ = false;            // the peer half-closed
  bool outbound_fin_ = false;           // we half-closed toward the peer
  bool down_idle_ = false;              // downstream waits for bytes: a direct write is safe
  std::shared_ptr<stream> joined_;      // each holds the other until the join ends
  std::unique_ptr<cross_state> cross_;  // joined across two executors
  std::function<void()> join_done_;
  bool waiting_room_ = false;  // registered with the joined stream's link for room
  bool cap_waiting_ = false;
  std::size_t cap_owed_ = 0;  // credit held back until the cap's wait ends
  std::chrono::steady_clock::time_point cap_until_;
  std::unique_ptr<boost::asio::steady_timer> cap_timer_;  // made on the first wait only
  bool reset_ = false;
  bool sealed_ = false;
  bool open_confirmed_ = false;
  proto::stream_status reset_status_ = proto::stream_status::ok;
  std::string refusal_reason_;
  std::chrono::steady_clock::time_point opened_at_;
  std::chrono::steady_clock::time_point last_activity_;
  std::uint64_t bytes_in_ = 0, bytes_out_ = 0;
  // What upstream() reads at once: a whole frame after a read that filled its buffer (bulk),
  // and small again after a read that a small buffer would have held (requests). Room for a
  // whole frame grows the link's write buffer past what an idle link keeps, so every request
  // would allocate it anew and give it back.
  static constexpr std::size_t small_read = 16 * 1024;
  std::size_t read_size_ = small_read;
  std::function<void()> quiet_hook_;
  bool quiet_told_ = false;  // the hook ran since the last bytes moved
};

}  // namespace burrow::link
