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
    : scanner_(input, std::max<size_t>(1, chunk_size / kBuffers)),
      plain_reader_(plain_reader),
      batches_(kBatches),
      input_(input) {
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
    hand_over_piece(kind);
  }
}

// Packs the scanner's current piece into the open batch. The pre-read (if
// any) read this same event: no batch is published between a successful
// pre-read and the end of scanner_.next(), so its views are still valid.
void TraceEventPipeline::hand_over_piece(TraceEventScanner::Piece kind) {
  std::string_view text = scanner_.text();
  TraceEventBatch& batch = batch_for(text, scanner_.padded_size(), scanner_.offset());
  PackedPiece& slot = next_slot();
  if (kind == TraceEventScanner::Piece::kHeaderField) {
    slot = pack_unread(text, false, batch.keys.size());
    batch.keys.emplace_back(scanner_.key());
  } else if ((scanner_.pre_read() || read_whole_event(text)) &&
             pack_read_event(text, scanner_.event_index(), fields_, args_, slot, batch.numbers)) {
    batch.bad_span_args += counts_.bad_span_args;
  } else {
    slot = pack_unread(text, true, scanner_.event_index());  // the consumer reads it
  }
  commit_piece();
}

size_t TraceEventPipeline::read_plain(const char* data, size_t available) {
  args_.clear();  // fields are overwritten whole
  counts_ = PlainEventCounts{};
  return plain_.read(data, available, fields_, args_, counts_);
}

size_t TraceEventPipeline::pre_read(const char* data, size_t available) {
  if (open_ == nullptr) open_batch();
  if (!reads_open_batch_) return 0;
  return read_plain(data, available);
}

// An event cut by the end of a buffer was declined by the pre-read; whole
// now, it may be plain after all (as ChromeTraceEventReader::read tries).
bool TraceEventPipeline::read_whole_event(std::string_view text) {
  if (!reads_open_batch_) return false;
  static_assert(TraceEventScanner::kPadding >= PlainEventReader::kReadAhead);
  return read_plain(text.data(), text.size()) == text.size();
}

// The open batch, which a piece at `text` joins. A batch ends where the
// scanner leaves a buffer (release()), so its pieces share their buffer's
// origin and end; should one not, it starts a new batch, so offsets and
// padded sizes stay right whatever the scanner does.
TraceEventBatch& TraceEventPipeline::batch_for(std::string_view text, size_t padded_size, uint64_t offset) {
  if (open_ == nullptr) open_batch();
  uint64_t origin = offset - reinterpret_cast<uintptr_t>(text.data());
  const char* padded_end = text.data() + padded_size;
  if (open_->size > 0 && (open_->origin != origin || open_->padded_end != padded_end)) {
    publish(false, nullptr);
    open_batch();
  }
  open_->origin = origin;
  open_->padded_end = padded_end;
  return *open_;
}

// The slot to fill next, in the open batch.
PackedPiece& TraceEventPipeline::next_slot() {
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
}

// The consumer is running low (kLowWater batches left or fewer): it reads
// the next batch's events itself. Waiting until it had one batch left was
// too late: the producer was then mid-way through reading a whole batch, and
// the consumer sat idle a fifth of the import. Splitting without reading,
// then reading apart, costs about a third more than both in one pass, and on
// a loaded machine a consumer runs low just because the producer was
// descheduled; a cap of every second or third batch, which bounded that CPU,
// measured no cheaper under load and slower on an idle machine, most of all
// for gzip input, where the producer also inflates.
bool TraceEventPipeline::leaves_open_batch_to_consumer() const { return published_ - done_ <= kLowWater; }

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
  return ScanBuffer::make(capacity);
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
  // Later batches' pieces lie after this one's (the producer no longer
  // reads the input before them), so a mapped input is done with up to here.
  if (batch.size > 0) input_.release_mapped_before(batch.pieces[batch.size - 1].text);
  batch.size = 0;
  batch.keys.clear();
  batch.numbers.clear();
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
