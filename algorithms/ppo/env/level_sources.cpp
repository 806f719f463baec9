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

}  // namespace ppo
