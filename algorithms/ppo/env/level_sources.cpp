#include "level_sources.hpp"

#include <stdexcept>
#include <string>

namespace ppo {

SolveWindow::SolveWindow(int window) {
  if (window < 1) throw std::invalid_argument("SolveWindow: window must be >= 1");
  ring_.assign(static_cast<size_t>(window), 0);
}

void SolveWindow::add(bool solved) {
  const int w = static_cast<int>(ring_.size());
  if (count_ == w) in_window_ -= ring_[head_];
  else ++count_;
  ring_[head_] = solved ? 1 : 0;
  in_window_ += ring_[head_];
  head_ = (head_ + 1) % w;
  ++episodes_;
  solved_ += solved ? 1 : 0;
}

double SolveWindow::rate() const { return count_ ? static_cast<double>(in_window_) / count_ : 0.0; }

nlohmann::json SolveWindow::state() const {
  return {{"window", ring_}, {"head", head_},          {"count", count_},
          {"in_window", in_window_}, {"episodes", episodes_}, {"solved", solved_}};
}

void SolveWindow::load_state(const nlohmann::json& state) {
  const auto window = state.at("window").get<std::vector<uint8_t>>();
  if (window.size() != ring_.size())
    throw std::invalid_argument("the saved solve window holds " + std::to_string(window.size()) + " episodes, not " +
                                std::to_string(ring_.size()));
  ring_ = window;
  head_ = state.at("head").get<int>();
  count_ = state.at("count").get<int>();
  in_window_ = state.at("in_window").get<int>();
  episodes_ = state.at("episodes").get<int64_t>();
  solved_ = state.at("solved").get<int64_t>();
}

RecordingSource::RecordingSource(std::shared_ptr<PuzzleSource> inner, std::shared_ptr<SolveWindow> results)
    : inner_(std::move(inner)), results_(std::move(results)) {
  if (!inner_ || !results_) throw std::invalid_argument("RecordingSource: no source or no record");
}

void RecordingSource::report(bool solved) {
  results_->add(solved);
  inner_->report(solved);
}

MixedSource::MixedSource(std::shared_ptr<PuzzleSource> levels, std::shared_ptr<PuzzleSource> generated, double share,
                         uint64_t seed)
    : levels_(std::move(levels)), generated_(std::move(generated)), share_(share), rng_(seed) {
  if (!levels_ || !generated_) throw std::invalid_argument("MixedSource: both sources are needed");
  if (!(share_ > 0.0 && share_ <= 1.0))
    throw std::invalid_argument("MixedSource: share " + std::to_string(share_) + " not in (0, 1]");
}

Puzzle MixedSource::next() {
  current_ = uniform_unit(rng_) < share_ ? levels_.get() : generated_.get();
  return current_->next();
}

void MixedSource::report(bool solved) {
  if (current_) current_->report(solved);
  current_ = nullptr;
}

nlohmann::json MixedSource::state() const {
  const char* playing = current_ == levels_.get() ? "levels" : current_ == generated_.get() ? "generated" : "none";
  return {{"rng", rng_text(rng_)}, {"playing", playing}};
}

void MixedSource::load_state(const nlohmann::json& state) {
  const std::string playing = state.at("playing").get<std::string>();
  if (playing != "levels" && playing != "generated" && playing != "none")
    throw std::invalid_argument("the saved mix plays '" + playing + "'");
  rng_from_text(state.at("rng").get<std::string>(), rng_);
  current_ = playing == "levels" ? levels_.get() : playing == "generated" ? generated_.get() : nullptr;
}

}  // namespace ppo
