// A link: one TLS connection between agent and relay carrying many streams. One reader and one
// writer coroutine; everything queued for sending is coalesced into one write of many records. A
// link and its streams live on one executor (one thread), so nothing here takes a lock. With
// link_encryption::tls the data and window frames of sealed streams (encrypted end to end
// already) go next to the records as sealed frames; with none every frame goes straight over the
// TCP socket under the TLS session that authenticated it (see encryption.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "link/byte_buffer.hpp"
#include "link/encryption.hpp"
#include "link/event.hpp"
#include "link/limits.hpp"
#include "link/rate_limit.hpp"
#include "proto/control.hpp"
#include "proto/frame.hpp"

namespace burrow::link {

class stream;
class link_tls;

using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

// The dialer opens odd stream ids, the acceptor even ones, so both may open without clashing.
enum class link_role { dialer, acceptor };

struct link_counters {
  std::uint64_t frames_in = 0, frames_out = 0;
  std::uint64_t bytes_in = 0, bytes_out = 0;
  std::uint64_t streams_opened = 0;
  std::uint64_t frames_ignored = 0;  // frames for streams already gone
  std::uint64_t stream_errors = 0;   // streams reset for breaking the protocol
  std::uint64_t sealed_bytes_in = 0, sealed_bytes_out = 0;  // frames outside the link's TLS
  std::uint64_t write_blocks = 0;  // times the write buffer passed its high water
};

class link : public std::enable_shared_from_this<link> {
 public:
  struct handlers {
    // The peer opened a stream. Answer with accept() or refuse(), now or later.
    std::function<void(std::shared_ptr<stream>, proto::open_metadata)> on_open;
    std::function<void(proto::control_message)> on_control;
    std::function<void()> on_go_away;
  };

  // `encryption`: what hello and welcome agreed (tls: with sealed frames); `own_records`: they
  // agreed on the link's own records (record_protection.hpp) after the welcome.
  link(tls_stream socket, link_role role, link_limits limits, std::string name,
       link_encryption encryption = link_encryption::full, bool own_records = false);
  ~link();
  link(const link&) = delete;
  link& operator=(const link&) = delete;

  // Runs the link until it closes; returns why it closed.
  boost::asio::awaitable<std::string> run(handlers h);

  // Opens a stream toward the peer; null when the link is closing or full. With meta.sealed on a
  // link with sealed frames, the stream is sealed at both ends.
  std::shared_ptr<stream> open_stream(const proto::open_metadata& meta);
  void accept(stream& s);
  void refuse(stream& s, proto::stream_status status, std::string_view reason = {});
  void send_control(const proto::control_message& m);
  // Tells the peer to open nothing new here; streams in flight go on.
  void go_away(proto::stream_status status, std::string_view reason);
  // Closes at once: every stream is reset.
  void close(std::string reason);

  const std::string& name() const { return name_; }
  const link_limits& limits() const { return limits_; }
  link_encryption encryption() const { return encryption_; }
  bool own_records() const { return own_records_; }
  // How the link's records are protected after the welcome, for logs.
  std::string_view protection() const {
    return encryption_ == link_encryption::none ? "unencrypted"
           : own_records_                       ? "own TLS 1.3 records"
                                                : "OpenSSL's TLS 1.3 records";
  }
  bool sealed_frames() const { return encryption_ == link_encryption::tls; }
  // A reloaded relay configuration; on the link's executor.
  void set_stream_idle_timeout(std::chrono::milliseconds t) { limits_.stream_idle_timeout = t; }
  boost::asio::any_io_executor executor() const { return executor_; }
  std::size_t stream_count() const { return streams_.size(); }
  bool closed() const { return closed_; }
  bool going_away() const { return going_away_; }
  bool peer_going_away() const { return peer_going_away_; }
  const link_counters& counters() const { return counters_; }
  // Every stream of this link counts its bytes against `limiter` (the relay's bandwidth cap for
  // the agent's token). Set before run(); streams opened earlier are not limited.
  void set_rate_limiter(std::shared_ptr<rate_limiter> limiter) { limiter_ = std::move(limiter); }
  const std::shared_ptr<rate_limiter>& limiter() const { return limiter_; }
  std::chrono::steady_clock::time_point last_received() const { return last_received_; }
  // Room the link's read buffers hold (frames, and with TLS the records before decryption):
  // hundreds of KiB while bulk flows, 32 KiB or less again once reads are small.
  std::size_t read_buffer_capacity() const;

  // Used by streams.
  bool write_blocked() const { return write_blocked_; }
  boost::asio::awaitable<void> wait_writable();
  // Reads up to `max` bytes from `socket` (non-blocking) straight into a data frame: the bytes,
  // or eof, or would_block. `drained`: the socket is known to be empty now (core/drained.hpp).
  // `sealed`: the stream is sealed (a sealed frame, then).
  std::size_t send_data_from(std::uint32_t id, boost::asio::ip::tcp::socket& socket,
                             std::size_t max, bool& drained, boost::system::error_code& ec,
                             bool sealed);
  void send_fin(std::uint32_t id, bool sealed);
  void send_data(std::uint32_t id, std::span<const std::uint8_t> bytes, bool sealed);
  void send_window(std::uint32_t id, std::uint32_t increment, bool sealed);
  void send_reset(std::uint32_t id, proto::stream_status status);
  void stream_finished(std::uint32_t id);
  // A joined stream (stream::join) that waits for room here: called back (on_link_writable)
  // once the write buffer drains below its low water, unless the link closes first.
  void when_writable(std::weak_ptr<stream> s) { room_waiters_.push_back(std::move(s)); }

 private:
  boost::asio::awaitable<void> reader();
  boost::asio::awaitable<void> writer();
  boost::asio::awaitable<void> keeper();  // pings, dead-peer detection, stream deadlines
  void wake_keeper();  // a stream or a close deadline needs the resting keeper's ticks again
  // What the last read brought: frames in read_buffer_, or (sealed frames) the units in the
  // TLS input. False when the link must end (close_reason_ says why).
  bool take_frames();
  void shrink_read_buffers();  // back to small reads and idle_buffer_keep
  // Read or write buffers a burst grew, which the keeper gives back once the link is quiet.
  bool holds_burst_buffers() const;
  void give_back_burst_buffers();
  bool take_units();
  bool take_records(std::size_t size);  // decrypts `size` bytes of records (all: every_record)
  void read_failed(boost::system::error_code ec);
  bool dispatch(const proto::frame_header& h, std::span<const std::uint8_t> payload);
  bool dispatch_sealed(const proto::frame_header& h, std::span<const std::uint8_t> payload);
  // One write's worth of writing_ from `pos`: records encrypted and sealed frames as they are,
  // gathered into gather_; `run` is the next of writing_sealed_. Returns the bytes it covers.
  std::size_t prepare_write(std::size_t pos, std::size_t& run, boost::system::error_code& ec);
  // Sends what is queued as far as the socket takes it now, without waiting: true when the
  // socket took only part of a write, whose rest is in gather_ (an asio::async_write of it, then
  // chunk_sent(), and the batch goes on). The writer's step, and send_inline's.
  bool send_queued(boost::system::error_code& ec);
  void chunk_sent();  // the kernel took the batch's current write
  // A stream's bytes go out at once, from the code that queued them, when the writer is idle
  // and the link carries that stream alone: no wake-up through the scheduler, which costs a
  // zero-timeout epoll_wait of its own. With more streams, waking the
  // writer lets frames that other streams queue meanwhile share one write. False: not sent;
  // the caller wakes the writer.
  bool send_inline();
  bool on_open_frame(std::uint32_t id, std::span<const std::uint8_t> payload);
  void append_frame(proto::frame_type type, std::uint8_t flags, std::uint32_t id,
                    std::span<const std::uint8_t> payload);
  // A data or window frame of a stream: sealed when asked and the link has sealed frames.
  void append_stream_frame(proto::frame_type type, std::uint8_t flags, std::uint32_t id,
                           std::span<const std::uint8_t> payload, bool sealed,
                           bool wake_writer = true);
  // A frame's header at `p` (after the sealed marker when sealed); commit_frame() adds the frame
  // that was prepared in write_buffer_.
  static void write_head(std::uint8_t* p, const proto::frame_header& h, bool sealed);
  void commit_frame(std::size_t payload, bool sealed, bool wake_writer = true);
  void queued(bool wake_writer);
  bool peer_may_open(std::uint32_t id) const;
  void reset_all(proto::stream_status status);

  tls_stream socket_;  // its TLS engine did the handshake and the opening exchange only
  link_encryption encryption_;
  bool own_records_;
  std::unique_ptr<link_tls> tls_;  // the session from then on; null on an unencrypted link
  // After the welcome, the link leaves asio's TLS engine (for link_tls, or for plain bytes). The
  // acceptor writes nothing until the dialer's first bytes arrive, and the dialer opens with a
  // ping, so neither side's engine can have read ahead into bytes that belong to the link.
  bool hold_writes_ = false;
  event first_read_event_;
  boost::asio::any_io_executor executor_;
  link_role role_;
  link_limits limits_;
  std::string name_;
  handlers handlers_;

  std::unordered_map<std::uint32_t, std::shared_ptr<stream>> streams_;
  std::uint32_t next_local_id_;
  std::uint32_t last_peer_id_ = 0;

  byte_buffer read_buffer_;
  bool large_reads_ = false;  // reads of max_read_size: a burst is on, or has not been quiet yet
  byte_buffer write_buffer_;  // frames being queued
  byte_buffer writing_;       // frames being written
  std::size_t unsent_ = 0;    // bytes of writing_ not yet handed to the kernel
  byte_buffer records_;       // TLS records being written
  // Sealed frames in write_buffer_ and writing_: (offset, size) runs, in order, outside TLS.
  std::vector<std::pair<std::size_t, std::size_t>> sealed_runs_, writing_sealed_;
  struct piece {
    bool sealed;  // bytes of writing_; else of records_
    std::size_t offset, size;
  };
  std::vector<piece> pieces_;
  std::vector<boost::asio::const_buffer> gather_;
  // The batch being written: writing_ from batch_pos_ on; its current write covers
  // batch_covered_ bytes of it (batch_run_: the next of writing_sealed_).
  bool batch_active_ = false;
  bool tail_pending_ = false;  // gather_ holds what the socket has not taken of the current write
  std::size_t batch_pos_ = 0, batch_run_ = 0, batch_covered_ = 0;
  bool writer_idle_ = false;   // the writer waits for frames: send_inline may write
  bool write_failed_ = false;  // send_inline's write failed; the writer ends the link
  event write_event_;
  event writable_event_;
  bool write_blocked_ = false;
  std::vector<std::weak_ptr<stream>> room_waiters_;
  void wake_room_waiters();

  bool closed_ = false;
  bool closing_ = false;
  bool aborted_ = false;  // the peer stopped reading: end now, without flushing
  std::chrono::steady_clock::time_point close_deadline_;
  boost::asio::steady_timer keeper_timer_;
  bool keeper_resting_ = false;  // the keeper sleeps to its next ping: the link has no stream
  bool keeper_woken_ = false;    // wake_keeper() cancelled its wait; the link goes on
  bool going_away_ = false;
  bool peer_going_away_ = false;
  std::string close_reason_;
  std::chrono::steady_clock::time_point last_received_;
  link_counters counters_;
  std::shared_ptr<rate_limiter> limiter_;
};

}  // namespace burrow::link
