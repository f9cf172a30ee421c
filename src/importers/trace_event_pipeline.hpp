// The importer's reading thread: a producer that reads the input (inflating
// gzip), splits it into pieces (TraceEventScanner) and reads each event with
// the hand-written PlainEventReader, which needs no shared state, while the
// importer's own thread (the consumer) builds the Run from the batches of
// pieces it hands over, in input order, through a small bounded queue.
//
// What the consumer sees is what the one-thread importer sees, piece for
// piece: an event the plain reader declines comes with its text only and is
// read by the consumer (simdjson), in order; an error of the producer (JSON
// syntax, truncation, gzip, I/O) is rethrown by next() after the pieces that
// came before it, so a consumer error on an earlier event still wins. When
// the consumer stops early (it threw), destroying the pipeline stops and
// joins the producer.
//
// The producer reads events while it is ahead: when the consumer has few
// batches left, the producer only splits the next batch and leaves its
// events to the consumer (which reads them with the same plain reader), so
// the two threads share the reading when the producer is the slower.
//
// Memory stays bounded: a few reused scanner buffers (pieces are views into
// them, valid until their batch is done) and a few reused batches of at most
// kBatchPieces pieces each.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "importers/packed_event.hpp"
#include "importers/plain_event_reader.hpp"
#include "importers/trace_event_fields.hpp"
#include "importers/trace_event_scanner.hpp"
#include "util/byte_stream.hpp"

namespace stepscope {

struct TraceEventBatch {
  // Reused: `size` pieces are valid, the rest keep their place.
  std::vector<PackedPiece> pieces;
  size_t size = 0;
  CounterNumbers numbers;  // of its counter events
  std::vector<std::string> keys;  // decoded header keys
  // All pieces of a batch lie in one scanner buffer (a batch ends where the
  // scanner leaves a buffer): a piece's input offset is `origin` plus its
  // address, and its padded bytes run up to `padded_end`.
  uint64_t origin = 0;
  const char* padded_end = nullptr;
  // The scanner buffer the batch's pieces (and earlier batches') lie in,
  // when the scanner has left it; returned once the batch is done.
  ScanBuffer owned;
  size_t bad_span_args = 0;       // negative "correlation"/"bytes" args in its events
  bool last = false;              // nothing follows
  std::exception_ptr error;       // of a last batch: what stopped the producer

  uint64_t offset(const PackedPiece& piece) const { return origin + reinterpret_cast<uintptr_t>(piece.text); }
  size_t padded_size(const PackedPiece& piece) const { return static_cast<size_t>(padded_end - piece.text); }
};

class TraceEventPipeline : private ScanBufferExchange, private EventPreReader {
 public:
  static constexpr size_t kBatchPieces = 2048;
  static constexpr size_t kBatches = 16;
  static constexpr size_t kBuffers = 8;
  // The consumer reads a batch's events itself when it has this many
  // batches or fewer waiting.
  static constexpr size_t kLowWater = 3;

  // Starts the producer on `input`, which must outlive the pipeline and not
  // be touched by anyone else meanwhile. `chunk_size` is the size of all
  // buffers together (each is a kBuffers-th, grown only for a larger
  // piece), as the one-thread import's one buffer. `plain_reader` off: every
  // event is left to the consumer.
  TraceEventPipeline(ByteStream& input, size_t chunk_size, bool plain_reader);
  TraceEventPipeline(const TraceEventPipeline&) = delete;
  TraceEventPipeline& operator=(const TraceEventPipeline&) = delete;
  ~TraceEventPipeline() override;

  // The next batch (the previous one is done and must not be used any
  // more); nullptr at the end. Rethrows the producer's error in its place.
  const TraceEventBatch* next();

  // Negative "correlation"/"bytes" args in events the producer read; final
  // once next() has returned nullptr.
  size_t bad_span_args() const { return bad_span_args_; }

 private:
  void produce();
  void produce_pieces();
  void hand_over_piece(TraceEventScanner::Piece kind);
  size_t read_plain(const char* data, size_t available);
  bool read_whole_event(std::string_view text);
  TraceEventBatch& batch_for(std::string_view text, size_t padded_size, uint64_t offset);
  PackedPiece& next_slot();
  void commit_piece();
  void open_batch();
  bool leaves_open_batch_to_consumer() const;
  void publish(bool last, std::exception_ptr error);
  void finish_current();

  // The scanner's pre-reader and buffer exchange.
  size_t pre_read(const char* data, size_t available) override;
  ScanBuffer acquire(size_t capacity) override;
  void release(ScanBuffer buffer) override;

  // The producer's side.
  TraceEventScanner scanner_;
  bool plain_reader_;
  PlainEventReader plain_;
  // The event the plain reader read last, in the producer's own cache
  // until it is packed into the batch.
  EventFields fields_;
  EventArgs args_;
  PlainEventCounts counts_;
  TraceEventBatch* open_ = nullptr;  // being filled
  bool reads_open_batch_ = false;    // reads its events, or leaves them to the consumer

  // Shared, under mutex_. Batches go round batches_ in order: number n
  // lives in batches_[n % kBatches].
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<TraceEventBatch> batches_;
  size_t opened_ = 0;     // by the producer (being filled or published)
  size_t published_ = 0;  // handed to the consumer
  size_t done_ = 0;       // given back by the consumer
  std::vector<ScanBuffer> free_buffers_;
  size_t buffers_made_ = 1;  // the scanner's first one
  bool cancelled_ = false;

  // The consumer's side.
  ByteStream& input_;  // only to drop mapped pages the consumer is done with
  TraceEventBatch* current_ = nullptr;
  bool ended_ = false;
  size_t bad_span_args_ = 0;

  std::thread producer_;  // last: started once everything above exists
};

}  // namespace stepscope
