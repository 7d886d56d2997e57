// The link's reader, writer and keeper coroutines and its frame dispatch.
#include "link/link.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <limits>
#include <utility>
#include <vector>

#include "core/drained.hpp"
#include "link/link_tls.hpp"
#include "link/stream.hpp"
#include "link/write_now.hpp"
#include "proto/wire_unit.hpp"

namespace burrow::link {

namespace asio = boost::asio;
using proto::frame_type;
using proto::stream_status;

namespace {
// Plaintext encrypted per write: up to 16 records, sent with one system call.
constexpr std::size_t tls_write_batch = 256 * 1024;
constexpr std::size_t min_read_size = 16 * 1024;
constexpr std::size_t max_read_size = 256 * 1024;
constexpr int small_reads_to_shrink = 16;
constexpr auto quiet_to_shrink = std::chrono::seconds(1);
// What an idle link's buffers keep after a burst.
constexpr std::size_t idle_buffer_keep = 32 * 1024;
constexpr std::size_t every_record = std::numeric_limits<std::size_t>::max();
}  // namespace

link::link(tls_stream socket, link_role role, link_limits limits, std::string name,
           link_encryption encryption, bool own_records)
    : socket_(std::move(socket)),
      encryption_(encryption),
      own_records_(own_records && encryption != link_encryption::none),
      hold_writes_(role == link_role::acceptor),
      first_read_event_(socket_.get_executor()),
      executor_(socket_.get_executor()),
      role_(role),
      limits_(limits),
      name_(std::move(name)),
      next_local_id_(role == link_role::dialer ? 1 : 2),
      write_event_(executor_),
      writable_event_(executor_),
      keeper_timer_(executor_),
      last_received_(std::chrono::steady_clock::now()) {}

link::~link() = default;

asio::awaitable<std::string> link::run(handlers h) {
  using namespace asio::experimental::awaitable_operators;
  auto self = shared_from_this();
  handlers_ = std::move(h);
  if (role_ == link_role::dialer) {
    std::uint8_t hello_ping[8] = {};
    append_frame(frame_type::ping, 0, 0, hello_ping);
  }
  bool ready = true;
  if (encryption_ != link_encryption::none) {
    try {
      tls_ = std::make_unique<link_tls>(socket_.native_handle(), own_records_,
                                        role_ == link_role::dialer);
    } catch (const std::exception& e) {
      ready = false;
      close_reason_ = std::string("cannot take over the TLS session: ") + e.what();
    }
  }
  if (ready) {
    boost::system::error_code nb;
    socket_.next_layer().non_blocking(true, nb);  // write_now must never wait
    if (nb) {
      ready = false;
      close_reason_ = "cannot make the link's socket non-blocking: " + nb.message();
    }
  }
  if (ready) co_await (reader() || writer() || keeper());
  closed_ = true;
  reset_all(stream_status::cancelled);
  room_waiters_.clear();
  boost::system::error_code ec;
  socket_.lowest_layer().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.lowest_layer().close(ec);
  writable_event_.notify();
  handlers_ = {};  // the handlers may hold what holds this link
  if (close_reason_.empty()) close_reason_ = "closed";
  co_return close_reason_;
}

asio::awaitable<void> link::reader() {
  // Reads are large once one comes back large (bulk: many records per system call), and small
  // again, with the memory given back, after a run of small ones (requests), or a quiet second
  // (here at the next read, or by the keeper while this waits for one).
  // A single small read in a burst must not shrink them: reallocating costs more than it saves.
  int small_reads = 0;
  auto& tcp = socket_.next_layer();
  // The socket was left empty by the last read: wait until it is readable before reading again
  // (core/drained.hpp). Else read at once, as a burst or a FIN may be waiting. The same steps as
  // receive_when_ready, written out: this is the link's hottest loop, and it saves a coroutine
  // frame per read.
  bool drained = true;
  while (!aborted_) {
    if (drained) {
      auto [ec] = co_await tcp.async_wait(asio::ip::tcp::socket::wait_read,
                                          asio::as_tuple(asio::use_awaitable));
      if (ec) {
        read_failed(ec);
        co_return;
      }
    }
    // The keeper may have shrunk the buffers while this waited above; nothing else suspends.
    const std::size_t read_size = large_reads_ ? max_read_size : min_read_size;
    auto* into = tls_ ? tls_->prepare_read(read_size) : read_buffer_.prepare(read_size);
    boost::system::error_code ec;
    std::size_t n = receive_some(tcp, asio::buffer(into, read_size), drained, ec);
    if (ec == asio::error::would_block) continue;
    if (ec) {
      read_failed(ec);
      co_return;
    }
    if (hold_writes_) {
      hold_writes_ = false;
      first_read_event_.notify();
    }
    const auto now = std::chrono::steady_clock::now();
    // A small read after a quiet second (the peer's ping on a link a burst has left) ends the
    // burst at once, rather than after 16 pings.
    const bool after_quiet = now - last_received_ >= quiet_to_shrink;
    last_received_ = now;
    bool going_on;
    if (!tls_) {
      read_buffer_.commit(n);
      counters_.bytes_in += n;
      going_on = take_frames();
    } else {
      tls_->received(n);
      going_on = sealed_frames() ? take_units() : take_records(every_record);
    }
    if (!going_on || aborted_) co_return;
    if (n >= min_read_size) {
      // The keeper gives these buffers back after a quiet second; one resting until the next
      // ping (no streams: say a large control message came) must reckon with them now.
      if (!std::exchange(large_reads_, true)) wake_keeper();
      small_reads = 0;
    } else if (large_reads_ && (++small_reads == small_reads_to_shrink || after_quiet)) {
      shrink_read_buffers();
    }
  }
}

void link::shrink_read_buffers() {
  large_reads_ = false;
  read_buffer_.trim(idle_buffer_keep);  // keeps what it holds of a frame or record not yet whole
  if (tls_) tls_->trim_read(idle_buffer_keep);
}

bool link::holds_burst_buffers() const {
  return large_reads_ || write_buffer_.capacity() > idle_buffer_keep ||
         writing_.capacity() > idle_buffer_keep || records_.capacity() > idle_buffer_keep;
}

void link::give_back_burst_buffers() {
  if (large_reads_) shrink_read_buffers();
  if (batch_active_) return;  // the write in flight points into writing_ and records_
  writing_.trim(idle_buffer_keep);
  records_.trim(idle_buffer_keep);
  if (write_buffer_.empty()) write_buffer_.trim(idle_buffer_keep);
}

std::size_t link::read_buffer_capacity() const {
  return read_buffer_.capacity() + (tls_ ? tls_->read_capacity() : 0);
}

void link::read_failed(boost::system::error_code ec) {
  if (close_reason_.empty())
    close_reason_ = (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated)
                        ? "peer closed the link"
                        : "read failed: " + ec.message();
}

bool link::take_records(std::size_t size) {
  std::size_t before = read_buffer_.size();
  auto ec = size == every_record ? tls_->decrypt(read_buffer_) : tls_->decrypt(read_buffer_, size);
  if (ec) {
    read_failed(ec);
    return false;
  }
  counters_.bytes_in += read_buffer_.size() - before;
  return take_frames();
}

bool link::take_frames() {
  for (;;) {
    auto r = proto::decode_frame(read_buffer_.bytes(), limits_.max_frame);
    if (r.error == proto::decode_error::incomplete) return true;
    if (r.error != proto::decode_error::none) {
      close_reason_ = "protocol error: " + std::string(proto::to_string(r.error));
      return false;
    }
    ++counters_.frames_in;
    if (!dispatch(r.header, r.payload) || aborted_) return false;
    read_buffer_.consume(r.consumed);
  }
}

bool link::take_units() {
  for (;;) {
    auto u = proto::next_wire_unit(tls_->input(), limits_.max_frame);
    switch (u.kind) {
      case proto::wire_unit_kind::incomplete:
        return true;
      case proto::wire_unit_kind::error:
        close_reason_ = "protocol error: " + std::string(proto::to_string(u.error));
        return false;
      case proto::wire_unit_kind::tls_records:
        if (!take_records(u.size)) return false;
        break;
      case proto::wire_unit_kind::sealed_frame:
        // The sender puts sealed frames between whole frames of its TLS plaintext.
        if (!read_buffer_.empty()) {
          close_reason_ = "protocol error: a sealed frame inside a frame";
          return false;
        }
        ++counters_.frames_in;
        counters_.bytes_in += u.header.length;
        counters_.sealed_bytes_in += u.header.length;
        if (!dispatch_sealed(u.header, u.payload) || aborted_) return false;
        tls_->consume_input(u.size);
        break;
    }
  }
}

asio::awaitable<void> link::writer() {
  while (hold_writes_) co_await first_read_event_.wait();
  auto& tcp = socket_.next_layer();
  for (;;) {
    if (write_failed_) co_return;  // an inline send failed; close_reason_ says how
    if (!batch_active_ && write_buffer_.empty()) {
      if (going_away_ && closing_) co_return;
      writer_idle_ = true;
      co_await write_event_.wait();
      writer_idle_ = false;
      continue;
    }
    boost::system::error_code ec;
    if (send_queued(ec) && !ec) {
      auto [wec, wn] =
          co_await asio::async_write(tcp, gather_, asio::as_tuple(asio::use_awaitable));
      ec = wec;
      if (!ec) chunk_sent();
    }
    if (ec) {
      if (close_reason_.empty()) close_reason_ = "write failed: " + ec.message();
      co_return;
    }
  }
}

bool link::send_queued(boost::system::error_code& ec) {
  if (tail_pending_) return true;  // gather_ holds the rest of a write the socket took in part
  if (!batch_active_) {
    if (write_buffer_.empty()) return false;
    std::swap(write_buffer_, writing_);
    std::swap(sealed_runs_, writing_sealed_);
    unsent_ = writing_.size();
    batch_pos_ = batch_run_ = 0;
    batch_active_ = true;
  }
  auto& tcp = socket_.next_layer();
  while (batch_pos_ < writing_.size()) {
    if (tls_) {
      // Several records per system call, a bounded batch at a time, sealed frames among them.
      batch_covered_ = prepare_write(batch_pos_, batch_run_, ec);
      if (ec) return false;
    } else {
      batch_covered_ = writing_.size() - batch_pos_;
      gather_.assign(1, asio::buffer(writing_.data() + batch_pos_, batch_covered_));
    }
    const std::size_t total = asio::buffer_size(gather_);
    const std::size_t sent = write_now(tcp, gather_, ec);
    if (ec) return false;
    if (sent < total) {
      drop_front(gather_, sent);
      tail_pending_ = true;
      return true;
    }
    chunk_sent();
  }
  return false;
}

void link::chunk_sent() {
  tail_pending_ = false;
  records_.clear();
  counters_.bytes_out += batch_covered_;
  unsent_ -= batch_covered_;
  batch_pos_ += batch_covered_;
  if (batch_pos_ < writing_.size()) return;
  batch_active_ = false;
  const bool small_batch = writing_.size() < min_read_size;
  writing_.clear();
  writing_sealed_.clear();
  unsent_ = 0;
  if (small_batch) {  // after a burst, an idle link gives its buffers back
    writing_.trim(idle_buffer_keep);
    records_.trim(idle_buffer_keep);
  } else if (keeper_resting_) {
    wake_keeper();  // as for large reads: the keeper gives these back after a quiet second
  }
  if (write_blocked_ && write_buffer_.size() <= limits_.write_low_water) {
    write_blocked_ = false;
    writable_event_.notify();
    // Not from here: a joined stream would send while this batch is being finished.
    if (!room_waiters_.empty())
      asio::post(executor_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->wake_room_waiters();
      });
  }
}

void link::wake_room_waiters() {
  auto waiters = std::move(room_waiters_);
  room_waiters_.clear();
  for (auto& w : waiters)
    if (auto s = w.lock()) s->on_link_writable();
}

bool link::send_inline() {
  if (!writer_idle_ || batch_active_ || write_failed_ || closing_ || closed_ || streams_.size() > 1)
    return false;
  boost::system::error_code ec;
  if (send_queued(ec) || ec) {
    // The rest, or the failure, is the writer's: it sends what is left, or ends the link. Until
    // it runs, nothing else may send.
    writer_idle_ = false;
    if (ec) {
      write_failed_ = true;
      if (close_reason_.empty()) close_reason_ = "write failed: " + ec.message();
    }
    write_event_.notify();
  }
  return true;
}

std::size_t link::prepare_write(std::size_t pos, std::size_t& run, boost::system::error_code& ec) {
  const auto all = writing_.bytes();
  const std::size_t start = pos;
  pieces_.clear();
  auto add = [&](bool sealed, std::size_t offset, std::size_t size) {
    auto* last = pieces_.empty() ? nullptr : &pieces_.back();
    if (last && last->sealed == sealed && last->offset + last->size == offset)
      last->size += size;  // records of one write are contiguous, and so are adjacent runs
    else
      pieces_.push_back({sealed, offset, size});
  };
  // Records a read left behind (an alert, a key update) go first: records keep their order.
  std::size_t records = tls_->records_pending();
  if (records) add(false, 0, records);
  while (pos < all.size() && pos - start < tls_write_batch) {
    if (run < writing_sealed_.size() && writing_sealed_[run].first == pos) {
      add(true, pos, writing_sealed_[run].second);
      pos += writing_sealed_[run].second;
      ++run;
      continue;
    }
    std::size_t stop = run < writing_sealed_.size() ? writing_sealed_[run].first : all.size();
    stop = std::min(stop, pos + (tls_write_batch - (pos - start)));
    ec = tls_->encrypt(all.subspan(pos, stop - pos));
    if (ec) return 0;
    add(false, records, tls_->records_pending() - records);
    records = tls_->records_pending();
    pos = stop;
  }
  tls_->take_records(records_);
  gather_.clear();
  for (const auto& p : pieces_)
    gather_.emplace_back((p.sealed ? writing_.data() : records_.data()) + p.offset, p.size);
  return pos - start;
}

asio::awaitable<void> link::keeper() {
  using clock = std::chrono::steady_clock;
  const auto tick =
      std::min<std::chrono::milliseconds>(limits_.ping_interval, std::chrono::seconds(1));
  const auto silence_limit = limits_.ping_interval + limits_.ping_timeout;
  // A ping only when the peer has sent nothing for a while: its own pings (or any frame) show
  // that it is there, and our pongs show it that we are. The acceptor waits a quarter of the
  // ping timeout longer than the dialer, so that on an idle link the dialer's pings and their
  // pongs are all there is: one exchange an interval, not one from each end.
  const auto quiet_before_ping =
      limits_.ping_interval +
      (role_ == link_role::acceptor ? limits_.ping_timeout / 4 : std::chrono::milliseconds(0));
  auto last_ping = clock::now();
  std::vector<std::shared_ptr<stream>> expired;
  for (;;) {
    // With streams, their deadlines and quiet spells are looked at every tick. Without, nothing
    // is due before the next ping or the end of the peer's allowed silence; a new stream or
    // close() wakes the keeper sooner (wake_keeper). An idle link costs a wake-up a ping.
    keeper_resting_ = streams_.empty();
    if (keeper_resting_) {
      auto wake =
          std::min(std::max(last_received_ + quiet_before_ping, last_ping + limits_.ping_interval),
                   last_received_ + silence_limit + std::chrono::milliseconds(1));
      if (holds_burst_buffers())  // not sooner than a tick: a write in flight may hold them
        wake = std::min(wake, std::max(last_received_ + quiet_to_shrink, clock::now() + tick));
      if (closing_) wake = std::min(wake, close_deadline_);
      keeper_timer_.expires_at(wake);
    } else {
      keeper_timer_.expires_after(tick);
    }
    auto [ec] = co_await keeper_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    keeper_resting_ = false;
    if (ec && !std::exchange(keeper_woken_, false)) co_return;
    auto now = clock::now();
    if (closing_ && now >= close_deadline_) co_return;
    if (now - last_received_ > silence_limit) {
      close_reason_ =
          "peer silent for " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(now - last_received_).count()) +
          "s (no pong)";
      co_return;
    }
    // A link a burst has left quiet gives its buffers back now, not at the next frame in or the
    // next small write out (a ping or its pong, up to an interval away). The reader is waiting
    // for the socket: it holds no pointer into them.
    if (now - last_received_ >= quiet_to_shrink && holds_burst_buffers()) give_back_burst_buffers();
    if (now - last_received_ >= quiet_before_ping && now - last_ping >= limits_.ping_interval) {
      std::uint8_t payload[8] = {};
      auto stamp = static_cast<std::uint64_t>(now.time_since_epoch().count());
      proto::write_u32(payload, static_cast<std::uint32_t>(stamp >> 32));
      proto::write_u32(payload + 4, static_cast<std::uint32_t>(stamp));
      append_frame(frame_type::ping, 0, 0, payload);
      last_ping = now;
    }
    expired.clear();
    for (auto& [id, s] : streams_) {
      s->notice_quiet(now);
      bool mine = (id & 1) == (role_ == link_role::dialer ? 1u : 0u);
      if (mine && !s->open_confirmed() && now - s->opened_at() > limits_.open_timeout) {
        expired.push_back(s);
      } else if (limits_.stream_idle_timeout.count() > 0 &&
                 now - s->last_activity() > limits_.stream_idle_timeout) {
        expired.push_back(s);
      }
    }
    std::size_t unanswered = 0;
    for (auto& s : expired) {
      if (!s->open_confirmed()) ++unanswered;
      s->reset(s->open_confirmed() ? stream_status::idle_timeout : stream_status::unreachable);
    }
    // One line a second at most: an overloaded or stuck peer drops visitors, and says so.
    if (unanswered)
      spdlog::warn("link {}: {} stream{} reset: no answer to the open within {}ms", name_,
                   unanswered, unanswered == 1 ? "" : "s", limits_.open_timeout.count());
  }
}

bool link::dispatch(const proto::frame_header& h, std::span<const std::uint8_t> payload) {
  auto find = [&]() -> stream* {
    auto it = streams_.find(h.stream_id);
    if (it == streams_.end()) {
      ++counters_.frames_ignored;  // a stream that just ended; frames may still be in flight
      return nullptr;
    }
    return it->second.get();
  };
  switch (h.type) {
    case frame_type::data: {
      if (auto* s = find(); s && !s->on_data(payload, h.flags & proto::flag::fin)) {
        ++counters_.stream_errors;
        spdlog::warn("link {}: stream {} broke flow control; reset", name_, h.stream_id);
        s->reset(stream_status::protocol_error);
      }
      return true;
    }
    case frame_type::open:
      return on_open_frame(h.stream_id, payload);
    case frame_type::open_result: {
      if (auto* s = find())
        s->on_open_result(static_cast<stream_status>(payload[0]),
                          {reinterpret_cast<const char*>(payload.data()) + 1, payload.size() - 1});
      return true;
    }
    case frame_type::window: {
      if (auto* s = find(); s && !s->on_window(proto::read_u32(payload.data()))) {
        ++counters_.stream_errors;
        s->reset(stream_status::protocol_error);
      }
      return true;
    }
    case frame_type::reset: {
      if (auto* s = find()) s->on_reset(static_cast<stream_status>(payload[0]));
      return true;
    }
    case frame_type::ping: {
      if (!(h.flags & proto::flag::ack))
        append_frame(frame_type::ping, proto::flag::ack, 0, payload);
      return true;
    }
    case frame_type::go_away: {
      peer_going_away_ = true;
      if (handlers_.on_go_away) handlers_.on_go_away();
      return true;
    }
    case frame_type::control: {
      auto decoded = proto::decode_control(
          std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()));
      if (decoded.unknown_type) {
        // A newer peer's message: skipping it keeps version 1 open to additions.
        spdlog::debug("link {}: skipped a control message of unknown type", name_);
        return true;
      }
      if (!decoded.message) {
        close_reason_ = "protocol error: " + decoded.error;
        return false;
      }
      if (handlers_.on_control) handlers_.on_control(std::move(*decoded.message));
      return true;
    }
    case frame_type::datagram:
      ++counters_.frames_ignored;  // reserved for UDP flows
      return true;
  }
  return true;
}

bool link::dispatch_sealed(const proto::frame_header& h, std::span<const std::uint8_t> payload) {
  auto it = streams_.find(h.stream_id);
  if (it == streams_.end()) {
    ++counters_.frames_ignored;
    return true;
  }
  // Outside the link's TLS nothing is authenticated: only a stream whose two ends authenticate
  // its bytes themselves may take frames from there.
  if (!it->second->sealed()) {
    close_reason_ =
        "protocol error: a sealed frame for stream " + std::to_string(h.stream_id) + ", not sealed";
    return false;
  }
  return dispatch(h, payload);
}

bool link::peer_may_open(std::uint32_t id) const {
  bool peer_odd = role_ == link_role::acceptor;
  return ((id & 1) == 1) == peer_odd && id > last_peer_id_;
}

bool link::on_open_frame(std::uint32_t id, std::span<const std::uint8_t> payload) {
  if (!peer_may_open(id)) {
    close_reason_ = "protocol error: stream id " + std::to_string(id) + " may not be opened";
    return false;
  }
  last_peer_id_ = id;
  auto answer = [&](stream_status st) {
    std::uint8_t b = static_cast<std::uint8_t>(st);
    append_frame(frame_type::open_result, 0, id, {&b, 1});
  };
  if (going_away_ || closing_) {
    answer(stream_status::going_away);
    return true;
  }
  if (streams_.size() >= limits_.max_streams) {
    answer(stream_status::overloaded);
    return true;
  }
  auto meta = proto::decode_open(
      std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()));
  if (!meta || !handlers_.on_open) {
    ++counters_.stream_errors;
    answer(meta ? stream_status::forbidden : stream_status::protocol_error);
    return true;
  }
  auto s = std::make_shared<stream>(shared_from_this(), id, limits_.initial_window);
  if (meta->sealed && sealed_frames()) s->mark_sealed();  // before the next frame is read
  streams_.emplace(id, s);
  wake_keeper();
  ++counters_.streams_opened;
  handlers_.on_open(std::move(s), std::move(*meta));
  return true;
}

std::shared_ptr<stream> link::open_stream(const proto::open_metadata& meta) {
  if (closed_ || closing_ || peer_going_away_ || streams_.size() >= limits_.max_streams ||
      next_local_id_ > 0x7ffffff0u)
    return nullptr;
  std::uint32_t id = next_local_id_;
  next_local_id_ += 2;
  auto s = std::make_shared<stream>(shared_from_this(), id, limits_.initial_window);
  streams_.emplace(id, s);
  wake_keeper();
  ++counters_.streams_opened;
  std::string m;
  if (meta.sealed && !sealed_frames()) {
    auto plain = meta;  // the peer of this link would not know what to make of it
    plain.sealed = false;
    m = proto::encode_open(plain);
  } else {
    m = proto::encode_open(meta);
  }
  if (meta.sealed && sealed_frames()) s->mark_sealed();
  append_frame(frame_type::open, 0, id,
               {reinterpret_cast<const std::uint8_t*>(m.data()), m.size()});
  return s;
}

void link::accept(stream& s) {
  s.on_open_result(stream_status::ok);
  std::uint8_t b = static_cast<std::uint8_t>(stream_status::ok);
  append_frame(frame_type::open_result, 0, s.id(), {&b, 1});
}

void link::refuse(stream& s, stream_status status, std::string_view reason) {
  std::uint8_t buf[256];
  buf[0] = static_cast<std::uint8_t>(status);
  std::size_t n = std::min<std::size_t>(reason.size(), sizeof(buf) - 1);
  std::memcpy(buf + 1, reason.data(), n);
  if (!closed_) append_frame(frame_type::open_result, 0, s.id(), {buf, n + 1});
  s.on_reset(status);
  streams_.erase(s.id());
}

void link::send_control(const proto::control_message& m) {
  std::string json = proto::encode_control(m);
  if (json.size() > proto::max_control_payload) {
    spdlog::error("link {}: control message of {} bytes is over the limit; not sent", name_,
                  json.size());
    return;
  }
  append_frame(frame_type::control, 0, 0,
               {reinterpret_cast<const std::uint8_t*>(json.data()), json.size()});
}

void link::go_away(stream_status status, std::string_view reason) {
  if (going_away_ || closed_) return;
  going_away_ = true;
  std::uint8_t buf[5 + 256];
  proto::write_u32(buf, last_peer_id_);
  buf[4] = static_cast<std::uint8_t>(status);
  std::size_t n = std::min<std::size_t>(reason.size(), 256);
  std::memcpy(buf + 5, reason.data(), n);
  append_frame(frame_type::go_away, 0, 0, {buf, n + 5});
}

void link::close(std::string reason) {
  if (closing_ || closed_) return;
  if (close_reason_.empty()) close_reason_ = std::move(reason);
  closing_ = true;
  going_away_ = true;
  close_deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  write_event_.notify();  // the writer flushes what is queued, then the link ends
  wake_keeper();          // ends the link at the deadline if the writer cannot
}

void link::wake_keeper() {
  if (!keeper_resting_) return;
  keeper_resting_ = false;
  if (keeper_timer_.cancel() > 0) keeper_woken_ = true;
}

asio::awaitable<void> link::wait_writable() {
  if (write_blocked_ && !closed_) co_await writable_event_.wait();
}

std::size_t link::send_data_from(std::uint32_t id, asio::ip::tcp::socket& socket, std::size_t max,
                                 bool& drained, boost::system::error_code& ec, bool sealed) {
  sealed = sealed && sealed_frames();
  const std::size_t head = sealed ? proto::sealed_frame_overhead : proto::frame_header_size;
  std::uint8_t* p = write_buffer_.prepare(head + max);
  std::size_t n = receive_some(socket, asio::buffer(p + head, max), drained, ec);
  if (ec || n == 0) return 0;
  write_head(p, {static_cast<std::uint32_t>(n), frame_type::data, 0, id}, sealed);
  commit_frame(n, sealed, false);
  if (!send_inline()) write_event_.notify();
  return n;
}

void link::send_data(std::uint32_t id, std::span<const std::uint8_t> bytes, bool sealed) {
  append_stream_frame(frame_type::data, 0, id, bytes, sealed, false);
  if (!send_inline()) write_event_.notify();
}

void link::send_fin(std::uint32_t id, bool sealed) {
  append_stream_frame(frame_type::data, proto::flag::fin, id, {}, sealed);
}

void link::send_window(std::uint32_t id, std::uint32_t increment, bool sealed) {
  std::uint8_t b[4];
  proto::write_u32(b, increment);
  append_stream_frame(frame_type::window, 0, id, b, sealed);
}

void link::send_reset(std::uint32_t id, stream_status status) {
  std::uint8_t b = static_cast<std::uint8_t>(status);
  append_frame(frame_type::reset, 0, id, {&b, 1});
}

void link::stream_finished(std::uint32_t id) {
  streams_.erase(id);
}

void link::append_frame(frame_type type, std::uint8_t flags, std::uint32_t id,
                        std::span<const std::uint8_t> payload) {
  append_stream_frame(type, flags, id, payload, false);
}

void link::append_stream_frame(frame_type type, std::uint8_t flags, std::uint32_t id,
                               std::span<const std::uint8_t> payload, bool sealed,
                               bool wake_writer) {
  if (closed_) return;
  sealed = sealed && sealed_frames();
  const std::size_t head = sealed ? proto::sealed_frame_overhead : proto::frame_header_size;
  std::uint8_t* p = write_buffer_.prepare(head + payload.size());
  write_head(p, {static_cast<std::uint32_t>(payload.size()), type, flags, id}, sealed);
  if (!payload.empty()) std::memcpy(p + head, payload.data(), payload.size());
  commit_frame(payload.size(), sealed, wake_writer);
}

void link::write_head(std::uint8_t* p, const proto::frame_header& h, bool sealed) {
  if (sealed)
    proto::encode_sealed_header(
        h, std::span<std::uint8_t, proto::sealed_frame_overhead>(p, proto::sealed_frame_overhead));
  else
    proto::encode_header(
        h, std::span<std::uint8_t, proto::frame_header_size>(p, proto::frame_header_size));
}

void link::commit_frame(std::size_t payload, bool sealed, bool wake_writer) {
  const std::size_t at = write_buffer_.size();
  const std::size_t size =
      payload + (sealed ? proto::sealed_frame_overhead : proto::frame_header_size);
  write_buffer_.commit(size);
  if (sealed) {
    if (!sealed_runs_.empty() && sealed_runs_.back().first + sealed_runs_.back().second == at)
      sealed_runs_.back().second += size;
    else
      sealed_runs_.emplace_back(at, size);
    counters_.sealed_bytes_out += payload;
  }
  ++counters_.frames_out;
  queued(wake_writer);
}

void link::queued(bool wake_writer) {
  if (wake_writer) write_event_.notify();
  // Everything not yet handed to the kernel counts, including the batch the writer is on.
  if (write_buffer_.size() + unsent_ > limits_.write_hard_limit && !closing_) {
    spdlog::warn("link {}: {} bytes queued and the peer is not reading; closing", name_,
                 write_buffer_.size() + unsent_);
    close_reason_ = "peer stopped reading";
    closing_ = true;
    aborted_ = true;
    boost::system::error_code ec;
    socket_.lowest_layer().cancel(ec);  // wakes the reader, which sees aborted_ and ends the link
    return;
  }
  if (!write_blocked_ && write_buffer_.size() >= limits_.write_high_water) {
    write_blocked_ = true;
    ++counters_.write_blocks;
  }
}

void link::reset_all(stream_status status) {
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, s] : streams) s->on_reset(status);
}

}  // namespace burrow::link
