// How the programs that read trace files treat them: as untrusted input. A time budget, so that
// no file keeps a reader busy for ever: once set, every connection Database::open makes
// afterwards stops its statements when the budget is spent (SQLite's progress handler), and the
// error names the file and how to raise the budget. And the shape check of Database::open (no
// view, virtual table, generated column or trigger where the schema has tables, the schema's
// column types), which `sql` turns off to let a user inspect any file as it is (its queries have
// their own time limit, query_stream.h).
#pragma once

namespace fleetscope::store {

// `seconds` from now, for every database opened from here on; 0 (or less) removes the budget.
void set_read_time_limit(double seconds);
// Whether the budget set last is spent.
bool read_time_limit_passed();
double read_time_limit();

// On by default; off for the inspection of a file as it is (`fleetscope sql`).
void set_shape_checks(bool on);

}  // namespace fleetscope::store
