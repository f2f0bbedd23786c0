#pragma once
// Minimal reader for the plain comma-separated job traces (no quoting in any of them). Every
// error names the file, the line and (for a value) the column, and says what was expected; text
// quoted from the input is cut to a short excerpt so a huge field is never echoed whole.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fleetscope::sharer::csv {

struct Row {
  std::vector<std::string> fields;
  int line = 0;
};

struct Table {
  std::string path;
  std::vector<std::string> header;  // empty for header-less files
  std::vector<Row> rows;

  // Index of a header column; throws "PATH:1: expected a column named NAME" when absent.
  size_t column(const std::string& name) const;
  bool has_column(const std::string& name) const;
};

// Throws "cannot read PATH: REASON; expected EXPECTED" for a file that could not be opened (the
// one wording of common/file_errors.h; "PATH: cannot open" said neither why nor what was wanted).
[[noreturn]] void throw_cannot_open(const std::string& path, const std::string& expected);

// The whole text of `path`, a file of kind `expected` ("a job trace (CSV)"), for every reader of
// the sharer's input files: a directory, a FIFO (whose read waited for a writer for ever), a
// missing or unreadable file is "cannot read PATH: REASON; expected EXPECTED" (file_errors.h),
// and a UTF-8 byte order mark (a CSV saved by a spreadsheet) is dropped.
std::string read_text(const std::string& path, const std::string& expected);

// Reads `path`. With `has_header`, the first line names the columns; every row must have at
// least `min_fields` fields (or as many as the header). With `skip_comments`, lines that start
// with '#' are skipped (they still count for line numbers): data files that carry their source
// in a header comment (the co-location runs).
Table read(const std::string& path, bool has_header, size_t min_fields = 0,
           bool skip_comments = false);
// The same over text already in memory; `source` names it in errors (the fuzz targets use this).
Table parse(std::string_view text, const std::string& source, bool has_header,
            size_t min_fields = 0, bool skip_comments = false);

// At most 40 characters of `text`, with a note of the full length when cut.
std::string excerpt(std::string_view text);

[[noreturn]] void fail(const std::string& path, int line, const std::string& expected);
// "PATH:LINE: column N (NAME): expected EXPECTED, found 'EXCERPT'".
[[noreturn]] void fail_value(const Table& table, const Row& row, size_t column, const char* what,
                             const std::string& expected);
// An error naming both lines when two rows have the same value in `column` (an id): "PATH:LINE:
// column N (NAME): expected NAME unique in the file (line M has it too), found 'VALUE'". Values
// are compared as written.
void require_unique(const Table& table, size_t column, const char* what);
// The same for a column of integers parsed with to_int ("7" and "07" are one id).
void require_unique_ints(const Table& table, size_t column, const char* what);
int64_t to_int(const Table& table, const Row& row, size_t column, const char* what);
// Finite numbers only: NaN and infinities are rejected like text.
double to_double(const Table& table, const Row& row, size_t column, const char* what);
// The same, and within [min, max].
int64_t to_int_in(const Table& table, const Row& row, size_t column, const char* what, int64_t min,
                  int64_t max);
double to_double_in(const Table& table, const Row& row, size_t column, const char* what, double min,
                    double max);

}  // namespace fleetscope::sharer::csv
