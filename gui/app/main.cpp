// fleetscope-gui: everything lives in the gui libraries (run_gui.h).
#include "run_gui.h"

int main(int argc, char** argv) {
  return fleetscope::gui::run_gui(argc, argv);
}
