// A CUDA job with the real agent, for the daemon's end-to-end tests: loads the stand-in CUPTI and
// then the agent the way the CUDA driver does (dlopen + InitializeInjection; the agent finds the
// stand-in through FLEETSCOPE_CUPTI_PATH), and launches kernels in steps until told to stop.
//   agent_job AGENT.so STAND_IN_CUPTI.so [--children N] [--lifetime-ms T] [--other-subscriber]
// --children forks N worker processes first (like torchrun), each loading the agent itself.
// --other-subscriber: another tool subscribes to CUPTI before the agent (e.g. Nsight Systems).
// stdout: "ready pid=P" once the agent is loaded.
#include <cupti.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "stand_in_cupti.h"

namespace {

std::atomic<bool> stop_requested{false};

template <class F>
F symbol(void* handle, const char* name) {
  auto f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f) {
    std::fprintf(stderr, "agent_job: missing %s\n", name);
    std::exit(3);
  }
  return f;
}

void CUPTIAPI other_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
void CUPTIAPI other_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI other_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  free(buffer);
}

int run_job(const char* agent_path, const char* stand_in_path, int lifetime_ms,
            bool other_subscriber) {
  void* stand_in = dlopen(stand_in_path, RTLD_NOW | RTLD_GLOBAL);
  if (!stand_in) {
    std::fprintf(stderr, "agent_job: dlopen stand-in: %s\n", dlerror());
    return 3;
  }
  auto launch = symbol<decltype(&standin_launch_kernel)>(stand_in, "standin_launch_kernel");
  auto push = symbol<decltype(&standin_nvtx_push)>(stand_in, "standin_nvtx_push");
  auto pop = symbol<decltype(&standin_nvtx_pop)>(stand_in, "standin_nvtx_pop");
  if (other_subscriber) {
    CUpti_SubscriberHandle subscriber = nullptr;
    symbol<decltype(&cuptiSubscribe)>(stand_in, "cuptiSubscribe")(&subscriber, other_callback,
                                                                  nullptr);
    symbol<decltype(&cuptiActivityRegisterCallbacks)>(stand_in, "cuptiActivityRegisterCallbacks")(
        other_request, other_complete);
  }
  void* agent = dlopen(agent_path, RTLD_NOW | RTLD_LOCAL);
  if (!agent) {
    std::fprintf(stderr, "agent_job: dlopen agent: %s\n", dlerror());
    return 3;
  }
  symbol<int (*)()>(agent, "InitializeInjection")();
  std::printf("ready pid=%d\n", getpid());
  std::fflush(stdout);
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(lifetime_ms);
  for (int step = 0; !stop_requested && std::chrono::steady_clock::now() < end; ++step) {
    std::string name = "ProfilerStep#" + std::to_string(step);
    push(name.c_str());
    for (int k = 0; k < 20; ++k) {
      launch(k % 2 ? "_Z4gemmPf" : "_Z3addPf", 0);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    pop();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: agent_job AGENT.so STAND_IN_CUPTI.so [--children N] [--lifetime-ms T]\n");
    return 2;
  }
  int children = 0, lifetime_ms = 30'000;
  bool other_subscriber = false;
  for (int i = 3; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--children" && i + 1 < argc)
      children = std::atoi(argv[++i]);
    else if (arg == "--lifetime-ms" && i + 1 < argc)
      lifetime_ms = std::atoi(argv[++i]);
    else if (arg == "--other-subscriber")
      other_subscriber = true;
    else {
      std::fprintf(stderr, "agent_job: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  signal(SIGTERM, [](int) { stop_requested = true; });
  std::vector<pid_t> workers;
  for (int c = 0; c < children; ++c) {
    pid_t child = fork();
    if (child == 0) {
      workers.clear();
      break;
    }
    workers.push_back(child);
  }
  int rc = run_job(argv[1], argv[2], lifetime_ms, other_subscriber);
  for (pid_t worker : workers) {
    kill(worker, SIGTERM);
    waitpid(worker, nullptr, 0);
  }
  return rc;
}
