// A stand-in host process: loads the agent the way the CUDA driver does (dlopen + the injection
// entry point), then prints and exits with a code of its own, so a test can check that the agent
// changed neither.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fleetscope_agent_host AGENT.so [EXIT_CODE]\n");
    return 2;
  }
  void* agent = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!agent) {
    std::fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 2;
  }
  using Init = int (*)();
  auto init = reinterpret_cast<Init>(dlsym(agent, "InitializeInjection"));
  if (!init) {
    std::fprintf(stderr, "no InitializeInjection\n");
    return 2;
  }
  int result = init();
  std::printf("host continues (InitializeInjection returned %d)\n", result);
  std::fflush(stdout);
  return argc > 2 ? std::atoi(argv[2]) : 0;
}
