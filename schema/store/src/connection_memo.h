// What the store has learnt about one connection's file and may reuse while the file is as it
// was: the verdicts of capture_rows_sql's range checks (capture_rows.cpp). Private to the store;
// each Database owns one.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace fleetscope::store {

// The file as this connection sees it: PRAGMA data_version (changes when another connection
// commits; fixed inside a read transaction, which reads one snapshot), the rows this connection
// changed itself (sqlite3_total_changes64, which the data version leaves out) and the statements
// it ran through Database::exec (DDL, which neither counts). Read before what it vouches for is
// read: while it is unchanged, nothing was committed in between.
struct FileVersion {
  int64_t data_version = -1;
  int64_t own_changes = -1;
  uint64_t execs = 0;
  bool operator==(const FileVersion&) const = default;
};

struct RangesVerdict {
  bool hold = false;
  int64_t found = 0;  // the capture's rows found in its ranges
};

struct ConnectionMemo {
  std::atomic<uint64_t> execs{0};  // Database::exec calls on this connection
  std::mutex mutex;                // a connection may be used from more than one thread
  FileVersion version;             // what the verdicts below were checked on
  std::map<std::pair<std::string, int64_t>, RangesVerdict> ranges;  // (table, capture)
};

}  // namespace fleetscope::store
