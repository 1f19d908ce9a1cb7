#include "net/write_queue.hpp"

#include <iterator>

namespace pagedserve::net {

void write_queue::push(std::string bytes) {
  if (bytes.empty()) return;
  bytes_ += bytes.size();
  ++pieces_;
  queued_.push_back(std::move(bytes));
}

const std::vector<std::string>& write_queue::start_write() {
  in_flight_.insert(in_flight_.end(), std::make_move_iterator(queued_.begin()), std::make_move_iterator(queued_.end()));
  queued_.clear();
  return in_flight_;
}

void write_queue::finish_write() {
  for (const std::string& s : in_flight_) bytes_ -= s.size();
  pieces_ -= in_flight_.size();
  in_flight_.clear();
}

void write_queue::drop_queued() {
  for (const std::string& s : queued_) bytes_ -= s.size();
  pieces_ -= queued_.size();
  queued_.clear();
}

}  // namespace pagedserve::net
