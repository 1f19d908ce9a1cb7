#pragma once
// The actor base: a strand and a mailbox. A mailbox is a std::variant of plain message structs;
// tell() posts one to the strand, where one std::visit calls the actor's on(T) overload for it, so a
// message no actor handles fails to compile. Handlers never run concurrently for one actor.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <memory>
#include <variant>

namespace pagedserve {

// What a sender holds to reach an actor without knowing its type (tests plug recorders in here).
template <class Mailbox>
class mailbox_ref {
 public:
  virtual ~mailbox_ref() = default;
  virtual void tell(Mailbox message) = 0;
};

template <class Derived, class Mailbox>
class actor : public mailbox_ref<Mailbox> {
 public:
  explicit actor(const boost::asio::any_io_executor& ex) : strand_(boost::asio::make_strand(ex)) {}

  void tell(Mailbox message) final {
    auto* self = static_cast<Derived*>(this);
    // Short-lived actors (one per request) are owned by shared_ptr: the posted handler keeps them alive.
    if constexpr (requires { self->shared_from_this(); }) {
      boost::asio::post(strand_, [keep = self->shared_from_this(), self, m = std::move(message)]() mutable {
        std::visit([self](auto& msg) { self->on(std::move(msg)); }, m);
      });
    } else {
      boost::asio::post(strand_, [self, m = std::move(message)]() mutable {
        std::visit([self](auto& msg) { self->on(std::move(msg)); }, m);
      });
    }
  }

  const boost::asio::strand<boost::asio::any_io_executor>& strand() const { return strand_; }

 protected:
  boost::asio::strand<boost::asio::any_io_executor> strand_;
};

}  // namespace pagedserve
