"""The one-node Slurm cluster of test_slurm.py on localhost: a private munged (own key and socket), slurm.conf
in a temporary directory (random port pair, this host as the only node, a HealthCheckProgram), and the
daemons, each in its own process group so that stop() ends whatever it started.

Importing it checks what the cluster needs (root, the daemons and tools): without them it prints SKIP and the
test passes. Then it makes the cluster's directory (TMP).
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

def skip(why):
    print(f"SKIP: {why}", flush=True)
    sys.exit(0)


if os.geteuid() != 0:
    skip("needs root (slurmd, slurmctld and munged run as root here)")
TOOLS = ["slurmctld", "slurmd", "scontrol", "sinfo", "srun", "munged", "munge"]
missing = [t for t in TOOLS if not shutil.which(t, path=PATH + ":" + os.environ.get("PATH", ""))]
if missing:
    skip(f"missing {', '.join(missing)} (Debian packages slurm-wlm and munge)")

T0 = time.monotonic()
TMP = tempfile.mkdtemp(prefix="sdcs-slurm-")
os.chmod(TMP, 0o755)
NODE = socket.gethostname().split(".")[0]
CONF = os.path.join(TMP, "slurm.conf")
ENV = dict(os.environ, SLURM_CONF=CONF, PATH=PATH + ":" + os.environ.get("PATH", ""))
procs = {}      # name -> Popen (each in its own process group)


def elapsed():
    return time.monotonic() - T0


def sh(*argv, timeout=60, env=None, check=False):
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env or ENV)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()[:500]}")
    return p


def start(name, argv):
    log = open(os.path.join(TMP, f"{name}.out"), "ab")
    procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=ENV, start_new_session=True)
    log.close()


def stop(name, grace=15):
    p = procs.pop(name, None)
    if p is None:
        return
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)   # whatever is left of the group (slurmscriptd, steps)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def wait_for(what, fn, timeout):
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > end:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        for name, p in procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with {p.returncode} while waiting for {what}")
        time.sleep(0.2)


def free_port_pair():
    for _ in range(200):
        base = random.randrange(20000, 60000, 2)
        ok = True
        for port in (base, base + 1):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("0.0.0.0", port))
                except OSError:
                    ok = False
        if ok:
            return base
    raise RuntimeError("no free port pair")


def node_state():
    """(long state, reason) of the node from sinfo; reason '' when none."""
    p = sh("sinfo", "-h", "-N", "-n", NODE, "-o", "%T|%E", timeout=30)
    line = (p.stdout.strip().splitlines() or ["|"])[0]
    state, _, reason = line.partition("|")
    reason = reason.strip()
    return state.strip(), ("" if reason == "none" else reason)


def settled_state(timeout=60):
    """Waits until the node is responding (no '*' suffix) and not in a transient state; returns node_state()."""
    def ok():
        s, r = node_state()
        return (s, r) if s and not s.endswith("*") and s not in ("unknown", "completing") else None
    return wait_for("the node to settle", ok, timeout)


def write_cluster_config(health_check_program):
    """Starts munged and writes slurm.conf (the health check: health_check_program, every hour and when slurmd
    starts); returns (slurmctld's port, the node's CPUs). slurmctld and slurmd are the test's to start."""
    # --- munge: own key, own socket --------------------------------------------------------------------
    mdir = os.path.join(TMP, "munge")
    os.makedirs(mdir, mode=0o700)
    key = os.path.join(mdir, "munge.key")
    if shutil.which("mungekey", path=ENV["PATH"]):
        sh("mungekey", "-c", "-k", key, check=True)
    else:
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
    os.chmod(key, 0o600)
    sock = os.path.join(mdir, "munge.socket")
    start("munged", ["munged", "-F", "--force", f"--socket={sock}", f"--key-file={key}",
                     f"--pid-file={mdir}/munged.pid", f"--seed-file={mdir}/munged.seed",
                     f"--log-file={mdir}/munged.log"])
    wait_for("munged", lambda: os.path.exists(sock) and sh("munge", "-S", sock, "-n", timeout=10).returncode == 0, 30)

    # --- slurm.conf ------------------------------------------------------------------------------------
    cpus = os.cpu_count() or 1
    p = sh("slurmd", "-C", timeout=30)
    for tok in p.stdout.split():
        if tok.startswith("CPUs="):
            cpus = int(tok[5:])
    port = free_port_pair()
    for d in ("state", "spool", "log"):
        os.makedirs(os.path.join(TMP, d), exist_ok=True)
    with open(os.path.join(TMP, "plugstack.conf"), "w"):
        pass
    with open(CONF, "w") as f:
        f.write(f"""ClusterName=sdctest
SlurmctldHost={NODE}(127.0.0.1)
SlurmctldPort={port}
SlurmdPort={port + 1}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={TMP}/state
SlurmdSpoolDir={TMP}/spool
SlurmctldPidFile={TMP}/slurmctld.pid
SlurmdPidFile={TMP}/slurmd.pid
SlurmctldLogFile={TMP}/log/slurmctld.log
SlurmdLogFile={TMP}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig={TMP}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
HealthCheckProgram={health_check_program}
HealthCheckInterval=3600
HealthCheckNodeState=ANY
NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=100 State=UNKNOWN
PartitionName=sdctest Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")
    return port, cpus
