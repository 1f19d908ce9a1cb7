#pragma once
// The bytes an HTTP session has yet to write, in order: pieces queued behind one write in flight,
// counted in bytes and pieces. Its bound is the session's backpressure (issue 17 item 3): a client
// that pipelines requests without reading their answers would otherwise make the server queue
// responses without limit (a 40-byte GET of a static file queues ~14 KB). While the queue is over
// its bound the session answers and reads no further request, so such a client costs at most the
// bound plus the one response that crossed it. No Asio here: unit tests and the fuzz target drive it.
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace pagedserve::net {

class write_queue {
 public:
  write_queue(std::size_t max_bytes, std::size_t max_pieces) : max_bytes_(max_bytes), max_pieces_(max_pieces) {}

  void push(std::string bytes);
  bool has_queued() const { return !queued_.empty(); }
  // Moves every queued piece into the write in flight and returns them, to be written as one gather write.
  const std::vector<std::string>& start_write();
  void finish_write();  // the write in flight is out
  // Drops the queued pieces; the write in flight keeps its bytes until finish_write (Asio still reads them).
  void drop_queued();

  std::size_t bytes() const { return bytes_; }    // queued and in flight
  std::size_t pieces() const { return pieces_; }  // queued and in flight
  // False while over the bound: answer and read nothing more until the queue drains.
  bool accepting() const { return bytes_ <= max_bytes_ && pieces_ <= max_pieces_; }

 private:
  std::size_t max_bytes_, max_pieces_;
  std::deque<std::string> queued_;
  std::vector<std::string> in_flight_;
  std::size_t bytes_ = 0, pieces_ = 0;
};

}  // namespace pagedserve::net
