// Fuzz target: the Nsight Systems SQLite importer (and the store's open of an untrusted SQLite
// file), then the analysis of what it imported. Bad input must end in fleetscope::Error; any other
// exception, a crash or a sanitizer report is a finding.
#include <cstdint>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetscope;
  const std::string& path = fuzz::write_input(data, size, ".sqlite");
  try {
    importers::MemoryImport imported = importers::import_to_memory(path);
    store::Reader reader(std::move(imported.database));
    const analyzer::CaptureData capture =
        analyzer::load_capture(reader, imported.result.capture_id);
    (void)analyzer::analyze_capture(capture);
  } catch (const Error&) {
  }
  return 0;
}
