#include "grammar/grammar_matcher.hpp"

#include <algorithm>
#include <cstring>

namespace pagedserve::grammar {

namespace {
constexpr std::uint32_t no_pos = 0xFFFFFFFFu;
constexpr grammar_matcher::set_id unknown = 0xFFFFFFFFu;
}

grammar_matcher::grammar_matcher(std::shared_ptr<const grammar> g) : grammar_(std::move(g)) {
  nodes_.push_back({no_pos, 0, 0});  // id 0: the empty stack
  intern_set({});                    // set 0: the empty set
  state start;
  for (std::uint32_t alt : grammar_->alternatives[grammar_->root]) expand(intern(alt, 0), start);
  normalise(start);
  current_ = intern_set(std::move(start));
}

grammar_matcher::set_id grammar_matcher::intern_set(state s) {
  std::string key(s.size() * sizeof(std::uint32_t), '\0');
  if (!s.empty()) std::memcpy(key.data(), s.data(), key.size());
  auto [it, fresh] = set_ids_.try_emplace(std::move(key), static_cast<set_id>(sets_.size()));
  if (fresh) {
    sets_.push_back(std::move(s));
    transitions_.emplace_back();
    transitions_.back().fill(unknown);
  }
  return it->second;
}

grammar_matcher::set_id grammar_matcher::step(set_id from, unsigned char b) {
  if (set_id known = transitions_[from][b]; known != unknown) return known;
  state next;
  advance(sets_[from], b, next);
  const set_id to = intern_set(std::move(next));  // may grow transitions_: index again below
  transitions_[from][b] = to;
  return to;
}

std::uint32_t grammar_matcher::intern(std::uint32_t pos, std::uint32_t parent) {
  const std::uint64_t key = (std::uint64_t{pos} << 32) | parent;
  auto [it, fresh] = interned_.try_emplace(key, static_cast<std::uint32_t>(nodes_.size()));
  if (fresh) nodes_.push_back({pos, parent, nodes_[parent].depth + 1});
  return it->second;
}

void grammar_matcher::expand(std::uint32_t n, state& out) {
  if (n == 0) {
    out.push_back(0);
    return;
  }
  const node at = nodes_[n];
  if (at.depth > max_stack_depth) return;  // nesting past the cap: this path is dropped
  const element e = grammar_->elements[at.pos];
  switch (e.type) {
    case element::kind::bytes: out.push_back(n); return;
    case element::kind::end: expand(at.parent, out); return;
    case element::kind::rule: {
      // A reference in tail position replaces its frame, so R ::= x R never deepens the stack.
      const bool tail = grammar_->elements[at.pos + 1].type == element::kind::end;
      const std::uint32_t below = tail ? at.parent : intern(at.pos + 1, at.parent);
      for (std::uint32_t start : grammar_->alternatives[e.index]) expand(intern(start, below), out);
      return;
    }
  }
}

void grammar_matcher::normalise(state& s) const {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  if (s.size() > max_stack_set) s.resize(max_stack_set);
}

void grammar_matcher::advance(const state& from, unsigned char b, state& to) {
  to.clear();
  for (std::uint32_t n : from) {
    if (n == 0) continue;
    const node at = nodes_[n];
    if (!grammar_->sets[grammar_->elements[at.pos].index].contains(b)) continue;
    const std::uint64_t key = (std::uint64_t{n} << 8) | b;
    auto it = steps_.find(key);
    if (it == steps_.end()) {
      state next;
      expand(intern(at.pos + 1, at.parent), next);
      normalise(next);
      it = steps_.emplace(key, std::move(next)).first;
    }
    to.insert(to.end(), it->second.begin(), it->second.end());
  }
  if (from.size() > 1) normalise(to);
}

bool grammar_matcher::accept(std::string_view bytes) {
  set_id s = current_;
  for (char c : bytes) {
    s = step(s, static_cast<unsigned char>(c));
    if (s == 0) return false;
  }
  current_ = s;
  return true;
}

bool grammar_matcher::compact_if_large() {
  if (nodes_.size() < max_arena_nodes && sets_.size() < max_interned_sets) return false;
  const state live = current();
  // Copy the live stacks (bottom first) into a fresh arena; the memo is rebuilt on demand.
  std::vector<node> old = std::move(nodes_);
  nodes_.clear();
  interned_.clear();
  steps_.clear();
  sets_.clear();
  set_ids_.clear();
  transitions_.clear();
  nodes_.push_back({no_pos, 0, 0});
  intern_set({});
  state fresh;
  for (std::uint32_t n : live) {
    std::vector<std::uint32_t> chain;
    for (std::uint32_t k = n; k != 0; k = old[k].parent) chain.push_back(old[k].pos);
    std::uint32_t id = 0;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) id = intern(*it, id);
    fresh.push_back(id);
  }
  normalise(fresh);
  current_ = intern_set(std::move(fresh));
  return true;
}

}  // namespace pagedserve::grammar
