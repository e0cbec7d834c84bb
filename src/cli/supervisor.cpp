#include "supervisor.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "../core/activity.h"
#include "../core/result.h"
#include "../util/say.h"

namespace sdc {
namespace {

volatile pid_t g_child = 0;

void forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

constexpr size_t MAX_CRASHES = 64;  // then the parent gives up: something other than a unit is wrong

}  // namespace

std::string Crash::describe() const {
  const char* name = sigabbrev_np(signal);
  return fmt::format("cpu {} died of SIG{} (signal {}) in {}, iteration {}, {}", cpu, name ? name : "?", signal,
                     case_id, iteration,
                     tile < 0 ? std::string("before its first tile") : fmt::format("tile {}", tile));
}

std::optional<int> supervise(std::vector<Crash>& crashes) {
  crashes.clear();
  if (const char* v = std::getenv("SDCSCREEN_SUPERVISE"); v && std::strcmp(v, "0") == 0) return std::nullopt;
  void* mem = mmap(nullptr, sizeof(activity::Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return std::nullopt;  // run unsupervised rather than not at all
  auto* board = new (mem) activity::Board;
  struct sigaction fwd {
  }, old[3];
  fwd.sa_handler = forward;
  fwd.sa_flags = SA_RESTART;
  sigemptyset(&fwd.sa_mask);
  const int passed[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; ++i) sigaction(passed[i], &fwd, &old[i]);
  for (;;) {
    board->crashed_slot.store(-1);
    board->crash_signal.store(0);
    const pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < 3; ++i) sigaction(passed[i], &old[i], nullptr);
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent killed outright takes its screen along
      activity::set_board(board);
      activity::install_crash_handlers();
      return std::nullopt;
    }
    if (pid < 0) {
      if (!crashes.empty()) {  // cannot screen the rest: what crashed stands
        say_err("sdcscreen: error: cannot start a screen after a crash: {}\n", std::strerror(errno));
        return EXIT_FAIL;
      }
      for (int i = 0; i < 3; ++i) sigaction(passed[i], &old[i], nullptr);
      return std::nullopt;
    }
    g_child = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    const int slot = board->crashed_slot.load();
    if (slot >= 0 && slot < activity::MAX_SLOTS && board->crash_signal.load() == sig) {
      const activity::Slot& s = board->slots[slot];
      Crash c;
      c.cpu = s.cpu.load();
      c.signal = sig;
      c.case_id.assign(s.case_id, strnlen(s.case_id, sizeof s.case_id));
      c.iteration = s.iteration.load();
      c.tile = s.tile.load();
      say_err("sdcscreen: {}; screening the other CPUs again without it\n", c.describe());
      crashes.push_back(c);
      if (crashes.size() < MAX_CRASHES) continue;
      say_err("sdcscreen: error: {} units crashed: giving up\n", crashes.size());
      return EXIT_FAIL;
    }
    // Not a unit's work: the screen itself died (or was killed). A unit that crashed before still fails.
    say_err(
        "sdcscreen: error: the screen died of signal {} outside any unit's work; its final report was not written "
        "(-o and --prometheus, if given, still say that a screen was in progress)\n",
        sig);
    return crashes.empty() ? EXIT_INCONCLUSIVE : EXIT_FAIL;
  }
}

}  // namespace sdc
