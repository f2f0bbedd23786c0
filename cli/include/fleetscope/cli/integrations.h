// Wires the parts' hooks together (e.g. the sharer's candidate loader to the analyzer). Called
// once by run_cli before dispatching; idempotent.
#pragma once

namespace fleetscope::cli {

void wire_integrations();

}  // namespace fleetscope::cli
