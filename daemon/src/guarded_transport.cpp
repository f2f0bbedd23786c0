#include "fleetscope/daemon/guarded_transport.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace fleetscope::daemon {

using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransport;
using apache::thrift::transport::TTransportException;

namespace {

// A read buffer above this is freed after its message (TFramedTransport's reclaim threshold), so
// an idle connection holds at most this much after a large batch.
constexpr uint32_t kKeptReadBuffer = 1u << 20;
// The first allocation for a frame; the buffer then doubles as bytes arrive.
constexpr uint32_t kFirstChunk = 64u << 10;

}  // namespace

GuardedFramedTransport::GuardedFramedTransport(
    std::shared_ptr<TTransport> inner, std::shared_ptr<apache::thrift::TConfiguration> config,
    std::shared_ptr<ConnectionTicket> ticket, uint32_t max_frame_bytes, int idle_timeout_ms,
    std::chrono::milliseconds request_deadline)
    : TFramedTransport(inner, DEFAULT_BUFFER_SIZE, kKeptReadBuffer, std::move(config)),
      socket_(std::dynamic_pointer_cast<TSocket>(inner)),
      ticket_(std::move(ticket)),
      max_frame_bytes_(max_frame_bytes),
      idle_timeout_ms_(idle_timeout_ms),
      request_deadline_(request_deadline) {}

GuardedFramedTransport::~GuardedFramedTransport() = default;

void GuardedFramedTransport::close() {
  if (ticket_) ticket_->forget_socket();
  TFramedTransport::close();
}

uint32_t GuardedFramedTransport::readEnd() {
  uint32_t bytes = TFramedTransport::readEnd();
  if (ticket_) ticket_->release();
  return bytes;
}

void GuardedFramedTransport::arm_deadline() {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline_ - std::chrono::steady_clock::now());
  if (left.count() <= 0)
    throw TTransportException(TTransportException::TIMED_OUT,
                              "request not complete within the request deadline (" +
                                  std::to_string(request_deadline_.count()) + " ms)");
  if (socket_) socket_->setRecvTimeout(static_cast<int>(std::max<int64_t>(left.count(), 1)));
}

uint32_t GuardedFramedTransport::read_some(uint8_t* into, uint32_t wanted) {
  arm_deadline();
  uint32_t n = transport_->read(into, wanted);
  if (n == 0)
    throw TTransportException(TTransportException::END_OF_FILE,
                              "the peer closed the connection inside a frame");
  return n;
}

bool GuardedFramedTransport::readFrame() {
  // A connection admitted over a limit waits here, in its own thread, for a place (the accept loop
  // goes on); its request waits in the socket meanwhile.
  if (ticket_) {
    std::string why;
    if (!ticket_->wait_for_place(std::chrono::steady_clock::now() + request_deadline_, &why)) {
      if (ticket_->note_refusal_now())
        std::fprintf(stderr, "fleetscoped: refused a connection of uid %d: %s\n",
                     static_cast<int>(ticket_->uid()), why.c_str());
      throw TTransportException(TTransportException::TIMED_OUT, "refused: " + why);
    }
  }
  if (ticket_) {
    ticket_->release();  // a previous frame whose message was not read to its end
    ticket_->set_idle(true);
  }
  // Waiting for the next request: the idle timeout.
  if (socket_) socket_->setRecvTimeout(idle_timeout_ms_);
  uint8_t header[4];
  uint32_t have = transport_->read(header, sizeof header);
  if (have == 0) return false;  // end of file between requests
  // The request has begun: from here on, the deadline.
  deadline_ = std::chrono::steady_clock::now() + request_deadline_;
  if (ticket_) ticket_->set_idle(false);
  while (have < sizeof header) have += read_some(header + have, sizeof header - have);
  uint32_t network_order;
  std::memcpy(&network_order, header, sizeof network_order);
  const uint32_t size = ntohl(network_order);
  if (size > max_frame_bytes_ || size > 0x7fffffffu)
    throw TTransportException(TTransportException::CORRUPTED_DATA,
                              "frame of " + std::to_string(size) + " bytes exceeds the limit of " +
                                  std::to_string(max_frame_bytes_));
  if (ticket_ && !ticket_->reserve(size, deadline_))
    throw TTransportException(TTransportException::TIMED_OUT,
                              "no read budget for a frame of " + std::to_string(size) +
                                  " bytes within the request deadline");
  uint32_t got = 0;
  while (got < size) {
    if (got == rBufSize_ || rBufSize_ == 0) {
      uint32_t grown = std::min(size, std::max(kFirstChunk, rBufSize_ * 2));
      auto* bigger = new uint8_t[grown];
      if (got > 0) std::memcpy(bigger, rBuf_.get(), got);
      rBuf_.reset(bigger);
      rBufSize_ = grown;
    }
    got += read_some(rBuf_.get() + got, std::min(size, rBufSize_) - got);
  }
  setReadBuffer(rBuf_.get(), size);
  return true;
}

}  // namespace fleetscope::daemon
