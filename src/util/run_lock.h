// One screen at a time per node: an exclusive flock on a lock file held for the whole run. The kernel
// drops the lock when its holder dies, however it dies, so a stale file from a dead process is simply
// taken over; the pid written into the file only names the holder in the refusal message.
#pragma once

#include <string>

namespace sdc {

class RunLock {
 public:
  // The default lock file: /run/sdcscreen/lock for root, else $XDG_RUNTIME_DIR, else a private /tmp/sdcscreen-UID/.
  static std::string default_path();
  // The lock file a screen takes: `given` (run --lock-file), or the default when it is empty.
  static std::string path(const std::string& given) { return given.empty() ? default_path() : given; }
  // Returns "" when the lock is held, else a one-line reason: "another screen is running (pid N)", or
  // why the lock file could not be used. *busy is set when another process holds it.
  std::string acquire(const std::string& path, bool* busy, long owner_pid = 0);  // 0: this process
  ~RunLock();

 private:
  int fd_ = -1;
};

}  // namespace sdc
