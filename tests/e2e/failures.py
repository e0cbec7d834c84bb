"""The end-to-end tests' check collector, apart from common.py so that a test that needs no built binary (common
runs `sdcscreen list` when imported) can use it too."""
import sys


class Failures:
    """Collects failed checks so a test reports all of them, then exits non-zero if any."""

    def __init__(self, name):
        self.name = name
        self.items = []
        self.checks = 0

    def check(self, cond, msg):
        self.checks += 1
        if not cond:
            self.items.append(msg)
            print("FAIL:", msg, flush=True)
        return cond

    def finish(self):
        print(f"{self.name}: {self.checks} checks, {len(self.items)} failed", flush=True)
        sys.exit(1 if self.items else 0)
