#include "src/cli/supervisor.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "src/core/activity.h"
#include "src/core/result.h"
#include "src/core/unit_name.h"
#include "src/util/say.h"

namespace sdc {
namespace {

volatile pid_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;  // the last signal passed on to the screen

void forward(int sig) {
  g_forwarded = sig;
  if (g_child > 0) kill(g_child, sig);
}

volatile sig_atomic_t g_deadline_passed = 0;  // run --deadline: the screen must be over now

// At the deadline, a screen that has not finished (it was asked to stop a margin before) is killed.
void on_deadline(int) {
  g_deadline_passed = 1;
  if (g_child > 0) kill(g_child, SIGKILL);
}

// The parent's deadline timer, disarmed on every way out of supervise().
struct DeadlineTimer {
  bool armed = false;
  struct sigaction old {};
  explicit DeadlineTimer(double seconds) {
    if (seconds <= 0) return;
    struct sigaction sa {};
    sa.sa_handler = on_deadline;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    set_alarm(seconds);
    armed = true;
  }
  ~DeadlineTimer() {
    if (!armed) return;
    set_alarm(0);
    sigaction(SIGALRM, &old, nullptr);
  }
  // In a forked child: the timer is not inherited, the handler is; the screen sets its own (arm_deadline).
  void in_child() const {
    if (armed) sigaction(SIGALRM, &old, nullptr);
  }
};

// The verdict when the screen ended without its completion record: a miscompare it found stands (exit 1,
// whatever killed it), then a unit that crashed earlier, else inconclusive (2), or the interruption when the
// screen quit at once on a repeated signal. `why` says what happened; the line names the miscompare.
// What the supervisor saw of a screen that did not finish (ScreenEnd), from the shared progress record.
void fill_end(const activity::Board& board, ScreenEnd* end, int sig, const std::string& why,
              const std::string& verdict) {
  if (!end) return;
  end->finished = false;
  end->signal = sig;
  end->why = why;
  end->verdict = verdict;
  end->miscompare = board.miscompares.load() > 0;
  end->miscompare_case.assign(board.miscompare_case, strnlen(board.miscompare_case, sizeof board.miscompare_case));
  end->miscompare_unit = board.miscompare_unit.load();
  end->miscompare_device = board.miscompare_device.load();
  if (end->miscompare_device >= 0) end->miscompare_gpu = activity::miscompare_gpu(board);
  end->miscompare_time_s = board.miscompare_ms.load() >= 0 ? static_cast<double>(board.miscompare_ms.load()) / 1000 : -1;
  end->seed_set = board.seed_set.load() != 0;
  end->seed = board.seed.load();
  end->outputs = board.outputs.load();
}

// The verdict when the screen ended without its completion record: a miscompare it found stands (exit 1,
// whatever killed it), then a unit that crashed earlier, else inconclusive (2), or the interruption when the
// screen quit at once on a repeated signal. `why` says what happened; the line names the miscompare. A failure
// (1) is then written by the supervisor into the outputs the screen did not write (run.cpp); otherwise the
// in-progress files stay.
int unfinished(const activity::Board& board, const std::vector<Crash>& crashes, int interrupted, const std::string& why,
               std::string* verdict, ScreenEnd* end, int sig) {
  std::string own_verdict;
  if (!verdict) verdict = &own_verdict;
  int code = crashes.empty() ? EXIT_INCONCLUSIVE : EXIT_FAIL;
  if (interrupted > 0 && crashes.empty()) code = 128 + interrupted;
  std::string line = why;
  if (board.miscompares.load() > 0) {
    const std::string c(board.miscompare_case, strnlen(board.miscompare_case, sizeof board.miscompare_case));
    const int unit = board.miscompare_unit.load();
    const int gpu = board.miscompare_device.load();
    const std::string where =
        unit < 0 ? "" : fmt::format(" on {}", unit_text(gpu >= 0 ? UnitName::of_sm(gpu, unit) : UnitName::of_cpu(unit)));
    line += fmt::format("; it had found a miscompare in {}{}: the screen fails", c, where);
    *verdict = fmt::format("SDC: {}{} (the screen then {})", c, where, why);
    code = EXIT_FAIL;
  } else {
    *verdict = code == EXIT_FAIL ? fmt::format("SDC: {} (then the screen {})", crashes.front().describe(), why)
                                 : fmt::format("Unknown: the screen {}", why);
  }
  line += code == EXIT_FAIL ? "; its supervisor writes the outputs it did not write (-o, --html, --prometheus, the "
                              "history line) from what it saw"
          : board.outputs.load() & activity::OUT_IN_PROGRESS
              ? "; its final report was not written (-o, --html and --prometheus, if given, still say that a screen "
                "was in progress)"
              : "; it ended in its set-up, before its outputs: its supervisor replaces -o, --html and --prometheus, "
                "if given, with a report that says so";
  say_err("sdcscreen: {}{}\n", code == EXIT_FAIL ? "" : "error: ", "the screen " + line);
  fill_end(board, end, sig, why, *verdict);
  if (end) end->interrupted = interrupted;
  return code;
}

constexpr size_t MAX_CRASHES = 64;  // then the parent gives up: something other than a unit is wrong

}  // namespace

void set_alarm(double seconds) {
  itimerval t{};
  if (seconds > 0) {
    t.it_value.tv_sec = static_cast<time_t>(seconds);
    t.it_value.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(t.it_value.tv_sec)) * 1e6);
    if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) t.it_value.tv_usec = 1;
  }
  setitimer(ITIMER_REAL, &t, nullptr);
}

std::string signal_name(int sig) {
  const char* name = sigabbrev_np(sig);
  return fmt::format("SIG{} (signal {})", name ? name : "?", sig);
}

std::string Crash::describe() const {
  const char* name = sigabbrev_np(signal);
  const std::string how = signal == 0 ? std::string("called exit() and ended the screen")
                                      : fmt::format("died of SIG{} (signal {})", name ? name : "?", signal);
  const std::string in =
      iteration >= 0 ? fmt::format("in {}, iteration {}", case_id, iteration) : fmt::format("in a retest of {}", case_id);
  std::string where;
  switch (stage) {
    case activity::STAGE_TILE:
      where = fmt::format("{}, tile {}", in, tile);
      break;
    case activity::STAGE_BETWEEN_TILES:
      where = in + (tile < 0 ? std::string(", before its first tile") : fmt::format(", between tiles (after tile {})", tile));
      break;
    case activity::STAGE_INPUTS:
      where = "while generating the inputs of " + case_id;
      break;
    case activity::STAGE_REFERENCE:
      where = "while computing the reference of " + case_id;
      break;
    case activity::STAGE_PROBE:
      where = "in the throughput probe";
      break;
    default:
      where = case_id.empty() ? std::string("while pinned, before any work") : "between jobs (after " + case_id + ")";
  }
  return fmt::format("cpu {} {} {}", cpu, how, where);
}

std::optional<int> supervise(std::vector<Crash>& crashes, std::string* verdict, double deadline_s, ScreenEnd* end) {
  crashes.clear();
  if (const char* v = std::getenv("SDCSCREEN_SUPERVISE"); v && std::strcmp(v, "0") == 0) return std::nullopt;
  void* mem = mmap(nullptr, sizeof(activity::Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return std::nullopt;  // run unsupervised rather than not at all
  auto* board = new (mem) activity::Board;
  const DeadlineTimer timer(deadline_s);
  const std::string past_deadline = "did not finish by its deadline (--deadline) and was killed";
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
    board->exit_slot.store(-1);
    board->completed.store(0);
    board->outputs.store(0);
    if (g_deadline_passed) {  // no time left to screen again after a crash
      for (int i = 0; i < 3; ++i) sigaction(passed[i], &old[i], nullptr);
      return unfinished(*board, crashes, 0, "reached its deadline (--deadline) before it could screen again", verdict,
                        end, 0);
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // Drill (SDCSCREEN_DRILL_FORK_DELAY=SECONDS): the screen waits here, before it asks for its parent's death
      // signal, so that a test can kill the parent inside that window. Compiled in, off unless set.
      if (const char* d = std::getenv("SDCSCREEN_DRILL_FORK_DELAY"); d && *d)
        usleep(static_cast<useconds_t>(std::min(std::strtod(d, nullptr), 10.0) * 1e6));
      // A parent killed outright takes its screen along. One killed before this line sends no death signal:
      // the screen would run on as an orphan holding the node's lock (its owner named as pid 1, init), and
      // refuse the next screens; it ends as the signal would have ended it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) raise(SIGKILL);
      for (int i = 0; i < 3; ++i) sigaction(passed[i], &old[i], nullptr);
      timer.in_child();
      activity::set_board(board);
      activity::install_crash_handlers();
      activity::install_exit_watch();
      return std::nullopt;
    }
    if (pid < 0) {
      if (!crashes.empty()) {  // cannot screen the rest: what crashed stands
        say_err("sdcscreen: error: cannot start a screen after a crash: {}\n", std::strerror(errno));
        if (verdict) *verdict = "SDC: " + crashes.front().describe();
        fill_end(*board, end, 0, "could not be started again after a crash", "SDC: " + crashes.front().describe());
        return EXIT_FAIL;
      }
      for (int i = 0; i < 3; ++i) sigaction(passed[i], &old[i], nullptr);
      return std::nullopt;
    }
    g_child = pid;
    if (g_deadline_passed) kill(pid, SIGKILL);  // the deadline came while it was being started
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
    // A pass (or any code) is taken only from a screen that finished: its completion record, written after
    // its report, carries the code it exits with. An exit(0) from a worker or a library is not a pass.
    if (WIFEXITED(status) && board->completed.load() && board->completed_code.load() == WEXITSTATUS(status))
      return WEXITSTATUS(status);
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    const int exited = WIFEXITED(status) ? board->exit_slot.load() : -1;  // the worker that called exit()
    const int slot = exited >= 0 ? exited : board->crashed_slot.load();
    if (slot >= 0 && slot < activity::MAX_SLOTS && (exited >= 0 || (sig != 0 && board->crash_signal.load() == sig))) {
      const activity::Slot& s = board->slots[slot];
      Crash c;
      c.cpu = s.cpu.load();
      c.signal = sig;  // 0: the unit's work called exit()
      c.case_id.assign(s.case_id, strnlen(s.case_id, sizeof s.case_id));
      c.iteration = s.iteration.load();
      c.tile = s.tile.load();
      c.stage = s.stage.load();
      say_err("sdcscreen: {}; screening the other CPUs again without it\n", c.describe());
      crashes.push_back(c);
      if (crashes.size() < MAX_CRASHES) continue;
      say_err("sdcscreen: error: {} units crashed: giving up\n", crashes.size());
      const std::string v = fmt::format("SDC: {} units crashed, first {}", crashes.size(), crashes.front().describe());
      if (verdict) *verdict = v;
      fill_end(*board, end, c.signal, fmt::format("crashed on {} units: the supervisor gave up", crashes.size()), v);
      return EXIT_FAIL;
    }
    // Not a unit's work: the screen itself died, was killed, or left without finishing. A miscompare it had
    // found, or a unit that crashed before, still fails. A screen that quit at once on a repeated signal
    // (screen.cpp) exits 128+N for the signal passed on to it: an interruption, not an unknown end.
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const int interrupted = g_forwarded > 0 && code == 128 + g_forwarded ? g_forwarded : 0;
    if (g_deadline_passed && !interrupted && sig == SIGKILL)
      return unfinished(*board, crashes, 0, past_deadline, verdict, end, sig);
    const std::string why =
        interrupted ? fmt::format("quit at once on a repeated signal {}", interrupted)
        : sig       ? fmt::format("died of {} outside any unit's work", signal_name(sig))
                    : fmt::format("exited (status {}) without finishing", code);
    return unfinished(*board, crashes, interrupted, why, verdict, end, sig);
  }
}

}  // namespace sdc
