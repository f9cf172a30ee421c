// The SQLite schema of a run file, shared by the writer and the reader.
// Keep in step with docs/run-format.md.
#pragma once

namespace stepscope::run_schema {

inline constexpr const char* kFormatName = "stepscope.run";

// Ids are the Run's dense indexes; a frame's is its block's first_frame plus
// its place in the block, a stack's its block's first_stack plus its place,
// a sample's its block's first_sample plus its place, a counter value's its
// block's first_value plus its place, a span's its block's first_span plus
// its place. A window is read without the rest (RunFileReader::load) through
// the blocks' indexes on time and, for flows, row_ranges: the span of each
// run of rows' key, a row per commit rather than an index entry per row. A
// block's data comes last: the columns after it would be read through its
// overflow pages.
inline constexpr const char* kSchemaSql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE metadata(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE processes(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, parent_pid INTEGER NOT NULL,
                       command INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
                       exit_status INTEGER NOT NULL);
CREATE TABLE threads(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
                     name INTEGER NOT NULL);
CREATE TABLE frame_blocks(id INTEGER PRIMARY KEY, first_frame INTEGER NOT NULL, count INTEGER NOT NULL,
                          data BLOB NOT NULL);
CREATE TABLE stack_blocks(id INTEGER PRIMARY KEY, first_stack INTEGER NOT NULL, count INTEGER NOT NULL,
                          data BLOB NOT NULL);
CREATE TABLE sample_blocks(id INTEGER PRIMARY KEY, first_sample INTEGER NOT NULL, count INTEGER NOT NULL,
                           start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE span_blocks(id INTEGER PRIMARY KEY, first_span INTEGER NOT NULL, count INTEGER NOT NULL,
                         start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, latest_end_ns INTEGER NOT NULL,
                         data BLOB NOT NULL);
CREATE TABLE flows(id INTEGER PRIMARY KEY, from_span INTEGER NOT NULL, to_span INTEGER NOT NULL,
                   kind INTEGER NOT NULL);
CREATE TABLE counter_tracks(id INTEGER PRIMARY KEY, name INTEGER NOT NULL, pid INTEGER NOT NULL,
                            unit INTEGER NOT NULL);
CREATE TABLE counter_blocks(id INTEGER PRIMARY KEY, first_value INTEGER NOT NULL, count INTEGER NOT NULL,
                            start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE row_ranges(id INTEGER PRIMARY KEY, rows TEXT NOT NULL, first_id INTEGER NOT NULL,
                        count INTEGER NOT NULL, low INTEGER NOT NULL, high INTEGER NOT NULL,
                        latest_ns INTEGER NOT NULL);
CREATE INDEX sample_blocks_by_time ON sample_blocks(end_ns, start_ns);
CREATE INDEX counter_blocks_by_time ON counter_blocks(end_ns, start_ns);
CREATE INDEX span_blocks_by_time ON span_blocks(end_ns, start_ns);
)sql";

}  // namespace stepscope::run_schema
