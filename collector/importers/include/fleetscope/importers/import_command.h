// `fleetscope import FILE... -o OUT.db [--force]`.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::importers {

// "512M", "2G", "1048576" (K/M/G are powers of 1024) -> bytes; nullopt when malformed or above
// 1 TiB. For --memory-budget.
std::optional<int64_t> parse_byte_size(const std::string& text);

// Exit codes: 0 ok, 1 bad input or I/O failure (no output left), 2 usage error.
int run_import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace fleetscope::importers
