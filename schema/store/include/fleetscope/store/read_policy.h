// How the programs that read trace files treat them: as untrusted input. A time budget, so that
// no file keeps a reader busy for ever: once set, every connection Database::open makes
// afterwards stops its statements when the budget is spent (SQLite's progress handler), and the
// error names the file and how to raise the budget. And the shape check of Database::open (no
// view, virtual table, generated column or trigger where the schema has tables, the schema's
// column types), which `sql` turns off to let a user inspect any file as it is (its queries have
// their own time limit, query_stream.h).
//
// And a memory budget, so that no file makes a reader take the host's memory or end in a bare
// std::bad_alloc that names nothing (memory_budget.cpp says how it is enforced and why so).
#pragma once

#include <cstdint>
#include <new>
#include <string>

namespace fleetscope::store {

// `seconds` from now, for every database opened from here on; 0 (or less) removes the budget.
void set_read_time_limit(double seconds);
// Whether the budget set last is spent.
bool read_time_limit_passed();
double read_time_limit();

// The memory budget: from now on the process may take `bytes` more data memory than it holds now
// (RLIMIT_DATA: heap, anonymous mappings and thread stacks, whoever allocates them: SQLite, the
// analyzer's columns, JSON, zlib); 0 removes it and restores the limit that was there before.
// When an allocation fails within the budget, operator new throws MemoryBudgetExceeded and SQLite
// answers SQLITE_NOMEM (an InputError): both name the file this thread was reading and the budget.
void set_read_memory_limit(uint64_t bytes);
uint64_t read_memory_limit();
// Half the host's physical memory, at least 1 GiB and at most 16 GiB: ample for the largest
// captures measured (docs/scale.md: `analyze` of a 1e7-event trace peaks at 1.2 GB, the analyzer
// benchmark of 10 M GPU events + 10 M runtime calls at 3.6 GB), far below what ends a shared host.
uint64_t default_read_memory_limit();
// "the memory budget of 64 MiB (raise it with --memory-limit SIZE, 0 for none)".
std::string memory_budget_text();

// The input file this thread reads from now on, named when the budget is hit (Database::open and
// importers::open_input call it).
void note_reading(const std::string& path);

// Thrown by operator new (std::set_new_handler) while a budget is set: still a std::bad_alloc,
// with a message that names the file and the budget. The message lives in the object itself, as
// the heap may be spent when it is thrown.
class MemoryBudgetExceeded : public std::bad_alloc {
 public:
  explicit MemoryBudgetExceeded(const char* file, uint64_t budget_bytes) noexcept;
  const char* what() const noexcept override { return message_; }

 private:
  char message_[1024];
};

// On by default; off for the inspection of a file as it is (`fleetscope sql`).
void set_shape_checks(bool on);

}  // namespace fleetscope::store
