#include "importers/trace_event_pipeline.hpp"

#include <algorithm>
#include <memory>
#include <utility>

namespace stepscope {

namespace {

// Unwinds the producer once the consumer has gone.
struct Cancelled {};

}  // namespace

TraceEventPipeline::TraceEventPipeline(ByteStream& input, size_t chunk_size, bool plain_reader)
    : scanner_(input, std::max<size_t>(1, chunk_size / kBuffers)), plain_reader_(plain_reader), batches_(kBatches) {
  for (TraceEventBatch& batch : batches_) batch.pieces.reserve(kBatchPieces);
  scanner_.set_buffer_exchange(this);
  if (plain_reader_) scanner_.set_pre_reader(this);
  producer_ = std::thread([this] { produce(); });
}

TraceEventPipeline::~TraceEventPipeline() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  changed_.notify_all();
  producer_.join();
}

// --- the producer ------------------------------------------------------------

void TraceEventPipeline::produce() {
  try {
    produce_pieces();
    publish(true, nullptr);
  } catch (const Cancelled&) {
    // The consumer is gone: nobody waits for the rest.
  } catch (...) {
    try {
      publish(true, std::current_exception());
    } catch (const Cancelled&) {
    }
  }
}

void TraceEventPipeline::produce_pieces() {
  for (;;) {
    TraceEventScanner::Piece kind = scanner_.next();
    if (kind == TraceEventScanner::Piece::kEnd) return;
    // The pre-read (if any) filled this same piece: no batch is published
    // between a successful pre-read and the end of next().
    ScannedPiece& piece = next_piece();
    piece.is_event = kind == TraceEventScanner::Piece::kEvent;
    piece.text = scanner_.text();
    piece.padded_size = scanner_.padded_size();
    piece.offset = scanner_.offset();
    if (piece.is_event) {
      piece.event_index = scanner_.event_index();
      piece.read = scanner_.pre_read() || read_whole_event(piece);
    } else {
      piece.read = false;
      piece.key = open_->keys.size();
      open_->keys.emplace_back(scanner_.key());
    }
    commit_piece();
  }
}

size_t TraceEventPipeline::read_plain(ScannedPiece& piece, const char* data, size_t available,
                                      PlainEventCounts& counts) {
  piece.args.clear();  // fields are overwritten whole
  return plain_.read(data, available, piece.fields, piece.args, counts);
}

size_t TraceEventPipeline::pre_read(const char* data, size_t available) {
  if (open_ == nullptr) open_batch();
  if (!reads_open_batch_) return 0;
  PlainEventCounts counts;
  size_t length = read_plain(next_piece(), data, available, counts);
  if (length > 0) open_->bad_span_args += counts.bad_span_args;
  return length;
}

// An event cut by the end of a buffer was declined by the pre-read; whole
// now, it may be plain after all (as ChromeTraceEventReader::read tries).
bool TraceEventPipeline::read_whole_event(ScannedPiece& piece) {
  if (!reads_open_batch_) return false;
  static_assert(TraceEventScanner::kPadding >= PlainEventReader::kReadAhead);
  PlainEventCounts counts;
  if (read_plain(piece, piece.text.data(), piece.text.size(), counts) != piece.text.size()) return false;
  open_->bad_span_args += counts.bad_span_args;
  return true;
}

// The piece to fill next, in the open batch (opened when needed).
ScannedPiece& TraceEventPipeline::next_piece() {
  if (open_ == nullptr) open_batch();
  if (open_->size == open_->pieces.size()) open_->pieces.emplace_back();
  return open_->pieces[open_->size];
}

void TraceEventPipeline::commit_piece() {
  if (++open_->size == kBatchPieces) publish(false, nullptr);
}

void TraceEventPipeline::open_batch() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return cancelled_ || opened_ - done_ < kBatches; });
  if (cancelled_) throw Cancelled{};
  open_ = &batches_[opened_++ % kBatches];
  reads_open_batch_ = plain_reader_ && !leaves_open_batch_to_consumer();
  if (plain_reader_ && !reads_open_batch_) ++left_to_consumer_;
}

// The consumer is about to run dry (its last batch, or none): it reads the
// next batch's events itself, but at most every third batch's. Splitting
// without reading, then reading apart, costs about a third more than both
// in one pass, and on a loaded machine a consumer runs dry just because the
// producer was descheduled: the cap keeps that from costing much CPU while
// still balancing the threads on an idle machine.
bool TraceEventPipeline::leaves_open_batch_to_consumer() const {
  return published_ - done_ <= 1 && 3 * (left_to_consumer_ + 1) <= opened_;
}

void TraceEventPipeline::publish(bool last, std::exception_ptr error) {
  if (open_ == nullptr) open_batch();
  open_->last = last;
  open_->error = std::move(error);
  open_ = nullptr;
  {
    std::lock_guard lock(mutex_);
    ++published_;
  }
  changed_.notify_all();
}

// A fresh buffer: a returned one, or a new one while fewer than kBuffers
// exist. The scanner holds one; the others are in published batches or
// free, so the consumer always returns one eventually.
ScanBuffer TraceEventPipeline::acquire(size_t capacity) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return cancelled_ || !free_buffers_.empty() || buffers_made_ < kBuffers; });
  if (cancelled_) throw Cancelled{};
  if (free_buffers_.empty()) {
    ++buffers_made_;
  } else {
    ScanBuffer buffer = std::move(free_buffers_.back());
    free_buffers_.pop_back();
    if (buffer.capacity >= capacity) return buffer;
  }
  lock.unlock();
  return ScanBuffer{std::make_unique<char[]>(capacity + TraceEventScanner::kPadding), capacity};
}

// The pieces so far lie in `buffer`: they go to the consumer with it.
void TraceEventPipeline::release(ScanBuffer buffer) {
  if (open_ == nullptr) open_batch();
  open_->owned = std::move(buffer);
  publish(false, nullptr);
}

// --- the consumer ------------------------------------------------------------

const TraceEventBatch* TraceEventPipeline::next() {
  if (ended_) return nullptr;
  if (current_ != nullptr) {
    bool last = current_->last;
    std::exception_ptr error = std::move(current_->error);
    finish_current();
    if (last) {
      ended_ = true;
      if (error) std::rethrow_exception(error);
      return nullptr;
    }
  }
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return published_ > done_; });
  current_ = &batches_[done_ % kBatches];
  lock.unlock();
  bad_span_args_ += current_->bad_span_args;
  return current_;
}

// Gives the current batch (and the buffer it owns) back to the producer.
void TraceEventPipeline::finish_current() {
  TraceEventBatch& batch = *current_;
  current_ = nullptr;
  batch.size = 0;
  batch.keys.clear();
  batch.bad_span_args = 0;
  batch.last = false;
  batch.error = nullptr;
  ScanBuffer owned = std::move(batch.owned);
  {
    std::lock_guard lock(mutex_);
    if (owned.bytes) free_buffers_.push_back(std::move(owned));
    ++done_;
  }
  changed_.notify_all();
}

}  // namespace stepscope
