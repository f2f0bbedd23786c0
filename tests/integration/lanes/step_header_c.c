/* step.h from C (ISO C11, -Wpedantic): compiles, and without fleetscope every call is a no-op. */
#include "fleetscope/step.h"

int main(void) {
  int i;
  for (i = 0; i < 3; ++i) fleetscope_step();
  fleetscope_step_set_total(3);
  fleetscope_step_release();
  return 0;
}
