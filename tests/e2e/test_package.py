"""Packaging and deployment files: the .deb that `cpack -G DEB` makes, the tree that `cmake --install` makes,
and the fleet integration files they carry (systemd unit, node-problem-detector config, Slurm sweep; the
Kubernetes manifest: test_daemonset.py).

- the .deb (built into a scratch directory from the build tree SDC_BUILD_DIR, default: the directory of
  SDCSCREEN) has the control fields a package needs (Package, Version, Maintainer, Depends computed), and
  carries the binary, its patterns, the unit, the Slurm/NHC/k8s scripts and the docs;
- extracted into a scratch root (dpkg-deb -x), the binary finds its installed patterns without --patterns:
  `run -q` exits 0, `verify-patterns` exits 0; the same for `cmake --install --prefix`;
- the unit's ExecStart, run from the scratch root with its paths moved into scratch directories, passes and
  writes the JSON report and the Prometheus textfile; every series in that file is documented in fleet.md;
  `systemd-analyze verify` accepts the unit (when systemd-analyze exists);
- the NPD config passes the checks node-problem-detector makes when it loads it, and its rule, run the same
  way, prints one line of at most max_output_length characters and exits 0;
- the Slurm sweep runs from where it is installed (its summary module beside it): --help exits 0.
Needs cpack, dpkg-deb, dpkg-shlibdeps (dpkg-dev).
"""
import glob
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_package")
SRC = common.SOURCE_DIR
BUILD = os.environ.get("SDC_BUILD_DIR") or os.path.dirname(os.path.abspath(common.SDCSCREEN))
UNIT = "sdcscreen-boot.service"
FLEET_MD = os.path.join(SRC, "docs", "fleet.md")
# Written separately (Slurm health check and sweep with its summary module, NHC check); each one present in the
# source tree must be installed, executable where it is in the source tree.
FLEET_SCRIPTS = ["slurm/sdcscreen-healthcheck", "slurm/sdcscreen-sweep", "slurm/sdcscreen_sweep_summary.py",
                 "nhc/sdcscreen.nhc"]
# Relative to the prefix (/usr in the package).
REQUIRED = [
    "bin/sdcscreen",
    "share/sdcscreen/patterns/battery.json",
    "share/sdcscreen/patterns/manifest.json",
    f"lib/systemd/system/{UNIT}",
    "share/sdcscreen/k8s/npd-sdcscreen.json",
    "share/sdcscreen/k8s/sdcscreen-daemonset.yaml",
    "share/sdcscreen/prometheus/sdcscreen.rules.yml",
    "share/doc/sdcscreen/report.schema.json",
    "share/doc/sdcscreen/fleet.md",
    "share/doc/sdcscreen/reliability.md",
]
T0 = time.monotonic()
NOTES = set()


def note(msg):
    if msg not in NOTES:
        NOTES.add(msg)
        print("NOTE:", msg, flush=True)


def sh(cmd, timeout=600, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def tail(p):
    return (p.stdout + p.stderr).strip()[-600:]


def files_under(root):
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def project_version():
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_PROJECT_VERSION:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def run_help(exe):
    return sh([exe, "run", "--help"], timeout=60).stdout


def check_installed_tree(label, prefix, lock):
    """The binary under prefix/bin finds prefix/share/sdcscreen/patterns on its own and passes."""
    exe = os.path.join(prefix, "bin", "sdcscreen")
    for rel in REQUIRED:
        F.check(os.path.isfile(os.path.join(prefix, rel)), f"{label}: {rel} is missing")
    for rel in FLEET_SCRIPTS:
        src = os.path.join(SRC, "deploy", rel)
        F.check(os.path.exists(src), f"deploy/{rel} is missing from the source tree")
        dst = os.path.join(prefix, "share", "sdcscreen", rel)
        F.check(os.path.isfile(dst), f"{label}: share/sdcscreen/{rel} is missing")
        if os.path.isfile(dst) and os.access(src, os.X_OK):
            F.check(os.stat(dst).st_mode & stat.S_IXUSR, f"{label}: share/sdcscreen/{rel} lost its executable bit")
    # The sweep imports its summary module from beside itself: it runs where it is installed, also through a
    # link from elsewhere (a PATH directory), and writes nothing there.
    sweep = os.path.join(prefix, "share", "sdcscreen", "slurm", "sdcscreen-sweep")
    with tempfile.TemporaryDirectory() as d:
        link = os.path.join(d, "sdcscreen-sweep")
        os.symlink(sweep, link)
        for how, path in (("installed", sweep), ("through a link", link)):
            p = sh([path, "--help"], timeout=60)
            F.check(p.returncode == 0 and "usage: sdcscreen-sweep" in p.stdout,
                    f"{label}: the sweep {how}: --help exit {p.returncode}: {tail(p)}")
    junk = [f for f in files_under(prefix) if "__pycache__" in f.split(os.sep) or f.endswith((".pyc", "~", ".swp"))]
    F.check(not junk, f"{label}: installs build or editor leftovers: {junk}")
    src_patterns = files_under(os.path.join(SRC, "patterns"))
    inst_patterns = files_under(os.path.join(prefix, "share", "sdcscreen", "patterns"))
    F.check(src_patterns == inst_patterns,
            f"{label}: installed patterns differ from the source tree's: missing {sorted(src_patterns - inst_patterns)}, "
            f"extra {sorted(inst_patterns - src_patterns)}")
    if not os.access(exe, os.X_OK):
        F.check(False, f"{label}: {exe} is not executable")
        return
    info = sh([exe, "info"], timeout=60)
    want = os.path.realpath(os.path.join(prefix, "share", "sdcscreen", "patterns"))
    m = re.search(r"^patterns: (.*) \(next to the executable\)$", info.stdout, re.M)  # patterns_location.h
    F.check(info.returncode == 0 and m and os.path.realpath(m.group(1)) == want,
            f"{label}: `sdcscreen info` names patterns {m.group(1) if m else None!r}, expected {want} ({tail(info)})")
    p = sh([exe, "verify-patterns"], timeout=120)
    F.check(p.returncode == 0, f"{label}: verify-patterns exit {p.returncode}, expected 0: {tail(p)}")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "report.json")
        t = time.monotonic()
        p = sh([exe, "run", "-q", "--lock-file", lock, "--output-format", "json", "-o", out], timeout=300)
        print(f"{label}: run -q: exit {p.returncode} in {time.monotonic() - t:.1f} s", flush=True)
        F.check(p.returncode == 0, f"{label}: run -q exit {p.returncode}, expected 0: {tail(p)}")
        F.check(p.stdout == "", f"{label}: run -q printed on stdout: {p.stdout[:200]!r}")
        try:
            with open(out) as f:
                report = json.load(f)
            gpu_only = sum(1 for t in report["tests"] if common.gpu_only_skip(t))  # not applicable on CPUs
            F.check(report["exit"]["code"] == 0 and report["summary"]["pass"] == report["summary"]["tests"] - gpu_only > 0
                    and report["summary"]["not_applicable"] == gpu_only,
                    f"{label}: report exit {report['exit']} summary {report['summary']}")
        except (OSError, ValueError, KeyError) as e:
            F.check(False, f"{label}: no readable JSON report: {e}")


# ---------------------------------------------------------------- unit file
def parse_unit(path):
    """systemd unit file -> {section: [(key, value), ...]} (keys may repeat; comments and blank lines dropped)."""
    sections, cur = {}, None
    with open(path) as f:
        lines = f.read().replace("\\\n", " ").splitlines()
    for line in lines:
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s.startswith("[") and s.endswith("]"):
            cur = sections.setdefault(s[1:-1], [])
            continue
        if cur is None or "=" not in s:
            F.check(False, f"unit: cannot parse line {line!r}")
            continue
        k, v = s.split("=", 1)
        cur.append((k.strip(), v.strip()))
    return sections


def unit_values(sections, section, key):
    return [v for k, v in sections.get(section, []) if k == key]


def unit_environment(sections):
    env = {}
    for v in unit_values(sections, "Service", "Environment"):
        for word in shlex.split(v):
            k, _, val = word.partition("=")
            env[k] = val
    return env


def relocate(arg, scratch):
    """Moves an absolute host path under /var or /run into the scratch directory (created)."""
    if arg.startswith(("/var/", "/run/")):
        new = scratch + arg
        os.makedirs(os.path.dirname(new), exist_ok=True)
        return new
    return arg


def check_unit(prefix, scratch, lock):
    path = os.path.join(prefix, "lib", "systemd", "system", UNIT)
    if not os.path.isfile(path):
        return
    u = parse_unit(path)
    words = lambda sec, key: " ".join(unit_values(u, sec, key)).split()  # noqa: E731
    F.check("local-fs.target" in words("Unit", "After"), "unit: After= lacks local-fs.target")
    for d in ("slurmd.service", "kubelet.service"):
        F.check(d in words("Unit", "Before"), f"unit: Before= lacks {d}")
    F.check("multi-user.target" in words("Install", "WantedBy"), "unit: WantedBy= lacks multi-user.target")
    F.check(unit_values(u, "Service", "Type") == ["oneshot"], "unit: Type= is not oneshot")
    F.check(unit_values(u, "Service", "StateDirectory") == ["sdcscreen"], "unit: StateDirectory= is not sdcscreen")
    F.check(unit_values(u, "Service", "TimeoutStartSec") == ["90"], "unit: TimeoutStartSec= is not 90")
    F.check("-/etc/default/sdcscreen" in unit_values(u, "Service", "EnvironmentFile"),
            "unit: no optional EnvironmentFile=-/etc/default/sdcscreen")
    execs = unit_values(u, "Service", "ExecStart")
    F.check(len(execs) == 1, f"unit: {len(execs)} ExecStart= lines, expected 1")
    if len(execs) != 1:
        return
    argv = execs[0].split()
    F.check(argv[:2] == ["/usr/bin/sdcscreen", "run"], f"unit: ExecStart runs {argv[:2]}, expected /usr/bin/sdcscreen run")
    joined = " ".join(argv)
    for want in ("--profile boot", "--output-format json", "-o /var/lib/sdcscreen/boot-report.json", "$SDCSCREEN_ARGS"):
        F.check(want in joined, f"unit: ExecStart lacks {want!r}")
    # The screen's own deadline ends it, with its verdict, before systemd's SIGTERM at TimeoutStartSec.
    deadline = argv[argv.index("--deadline") + 1] if "--deadline" in argv[:-1] else ""
    F.check(deadline.endswith("s") and deadline[:-1].isdigit() and int(deadline[:-1]) < 90,
            f"unit: ExecStart --deadline {deadline!r}, expected whole seconds below TimeoutStartSec=90")
    env = unit_environment(u)
    default_args = env.get("SDCSCREEN_ARGS", "").split()
    prom = "/var/lib/prometheus/node-exporter/sdcscreen.prom"
    F.check(default_args[-2:] == ["--prometheus", prom],
            f"unit: default SDCSCREEN_ARGS {default_args}, expected --prometheus {prom}")

    # systemd's own check of the unit, with ExecStart pointing at the installed binary.
    if shutil.which("systemd-analyze"):
        d = os.path.join(scratch, "unit-verify")
        os.makedirs(d)
        with open(path) as f, open(os.path.join(d, UNIT), "w") as g:
            g.write(f.read().replace("/usr/bin/sdcscreen", os.path.join(prefix, "bin", "sdcscreen")))
        p = sh(["systemd-analyze", "verify", os.path.join(d, UNIT)], timeout=120)
        F.check(p.returncode == 0 and UNIT not in p.stdout + p.stderr, f"unit: systemd-analyze verify: {tail(p)}")
    else:
        note("systemd-analyze not found; unit not verified by systemd")

    # Run the unit's command as systemd would (variables expanded), its /var paths in the scratch directory.
    exe = os.path.join(prefix, "bin", "sdcscreen")
    if "--prometheus" not in run_help(exe):
        note("this sdcscreen has no --prometheus yet; the unit's command is not run")
        return
    cmd = []
    for a in argv:
        if a == "$SDCSCREEN_ARGS":
            cmd += default_args
        elif a.startswith("$") or a.startswith("${"):
            cmd += env.get(a.strip("${}"), "").split()
        else:
            cmd.append(a)
    cmd = [exe] + [relocate(a, scratch) for a in cmd[1:]] + ["--lock-file", lock]
    p = sh(cmd, timeout=300)
    F.check(p.returncode == 0, f"unit: ExecStart {cmd} exit {p.returncode}, expected 0: {tail(p)}")
    try:
        with open(scratch + "/var/lib/sdcscreen/boot-report.json") as f:
            report = json.load(f)
        F.check(report["exit"]["code"] == 0 and report["profile"] == "boot",
                f"unit: boot report exit {report['exit']} profile {report['profile']}")
    except (OSError, ValueError, KeyError) as e:
        F.check(False, f"unit: no readable boot report: {e}")
    try:
        with open(scratch + prom) as f:
            text = f.read()
    except OSError as e:
        F.check(False, f"unit: no Prometheus textfile: {e}")
        return
    series = re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})? \S+$", text, re.M)
    F.check("sdcscreen_exit_code" in series and re.search(r"^sdcscreen_exit_code 0$", text, re.M),
            "unit: the textfile has no sdcscreen_exit_code 0")
    for name in ("sdcscreen_last_run_timestamp_seconds", "sdcscreen_last_success_timestamp_seconds",
                 "sdcscreen_run_duration_seconds", "sdcscreen_device_healthy"):
        F.check(name in series, f"unit: the textfile has no {name}")
    for line in text.splitlines():
        F.check(line.startswith("#") or re.match(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.eE+-]+$", line),
                f"unit: textfile line is not in the exposition format: {line!r}")
    with open(FLEET_MD) as f:
        doc = f.read()
    for name in sorted(set(series)):
        F.check(name in doc, f"docs/fleet.md does not document the series {name}")


# ---------------------------------------------------------------- node-problem-detector
def go_duration(s):
    """Go's time.ParseDuration for the units NPD configs use; None when it would not parse."""
    if not isinstance(s, str) or not re.fullmatch(r"(\d+(\.\d+)?(h|m|s|ms|us|ns))+", s):
        return None
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    return sum(float(n) * scale[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(h|ms|us|ns|m|s)", s))


def check_npd(cfg, root, scratch, lock):
    """root: the extracted package (the rule's path is an absolute path in it)."""
    F.check(cfg.get("plugin") == "custom", f"npd: plugin {cfg.get('plugin')!r}, expected 'custom'")
    pc = cfg.get("pluginConfig", {})
    interval, timeout = go_duration(pc.get("invoke_interval")), go_duration(pc.get("timeout"))
    F.check(interval is not None and interval > 0, f"npd: pluginConfig.invoke_interval {pc.get('invoke_interval')!r}")
    F.check(timeout is not None and timeout > 0, f"npd: pluginConfig.timeout {pc.get('timeout')!r}")
    F.check(pc.get("max_output_length") == 80, f"npd: max_output_length {pc.get('max_output_length')!r}, expected 80")
    F.check(pc.get("concurrency") == 1, f"npd: concurrency {pc.get('concurrency')!r}, expected 1")
    F.check(isinstance(cfg.get("source"), str) and cfg["source"], "npd: no source")
    conds = cfg.get("conditions", [])
    F.check(isinstance(conds, list) and conds, "npd: no conditions")
    for c in conds:
        for k in ("type", "reason", "message"):
            F.check(isinstance(c.get(k), str) and c[k], f"npd: condition {c} has no {k}")
    F.check(any(c.get("type") == "SilentDataCorruption" for c in conds), "npd: no SilentDataCorruption condition")
    rules = cfg.get("rules", [])
    F.check(isinstance(rules, list) and rules, "npd: no rules")
    for r in rules:
        F.check(r.get("type") in ("temporary", "permanent"), f"npd: rule type {r.get('type')!r}")
        if r.get("type") == "permanent":  # NPD refuses a permanent rule without its default condition
            F.check(r.get("condition") in [c.get("type") for c in conds],
                    f"npd: permanent rule's condition {r.get('condition')!r} is not among the conditions")
        F.check(isinstance(r.get("reason"), str) and r["reason"], f"npd: rule {r} has no reason")
        path = r.get("path", "")
        F.check(path.startswith("/usr/") and os.access(root + path, os.X_OK),
                f"npd: rule path {path!r} is not an executable the package installs")
        args = r.get("args", [])
        F.check(isinstance(args, list) and all(isinstance(a, str) for a in args) and "--npd" in args,
                f"npd: rule args {args} lack --npd")
        rt = go_duration(r.get("timeout"))
        F.check(rt is not None and (timeout is None or rt <= timeout),  # NPD refuses a rule timeout > global
                f"npd: rule timeout {r.get('timeout')!r} missing or above the global {pc.get('timeout')!r}")
        if r.get("path") != "/usr/bin/sdcscreen" or not isinstance(args, list):
            continue
        exe = root + path
        if "--npd" not in run_help(exe):
            note("this sdcscreen has no --npd yet; the rule is not run")
            continue
        cmd = [exe] + [relocate(a, scratch) for a in args]
        if "--lock-file" in cmd:
            cmd[cmd.index("--lock-file") + 1] = lock
        p = sh(cmd, timeout=(rt or 90) + 30)
        lines = p.stdout.splitlines()
        F.check(p.returncode == 0, f"npd: rule exit {p.returncode}, expected 0 (OK): {tail(p)}")
        F.check(len(lines) == 1 and 0 < len(lines[0]) <= pc.get("max_output_length", 80),
                f"npd: rule printed {p.stdout!r}, expected one line of at most {pc.get('max_output_length')} characters")
        if "-o" in args:
            out = relocate(args[args.index("-o") + 1], scratch)
            try:
                with open(out) as f:
                    F.check(json.load(f)["exit"]["code"] == 0, "npd: the rule's report does not say pass")
            except (OSError, ValueError, KeyError) as e:
                F.check(False, f"npd: no readable report from the rule: {e}")


# ---------------------------------------------------------------- main
for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps"):
    F.check(shutil.which(tool), f"{tool} is not installed (dpkg-dev, cmake)")
if not os.path.isfile(os.path.join(BUILD, "CPackConfig.cmake")):
    F.check(False, f"{BUILD}/CPackConfig.cmake is missing: set SDC_BUILD_DIR to a configured build tree")
    F.finish()
npd_cfg = common.npd_config(F)

with tempfile.TemporaryDirectory(prefix="sdc-package-") as tmp:
    lock = os.path.join(tmp, "lock")

    # The .deb.
    t = time.monotonic()
    p = sh(["cpack", "-G", "DEB", "-B", os.path.join(tmp, "pkg"), "--config", os.path.join(BUILD, "CPackConfig.cmake")],
           timeout=900)
    debs = glob.glob(os.path.join(tmp, "pkg", "*.deb"))
    print(f"cpack: exit {p.returncode} in {time.monotonic() - t:.1f} s: {[os.path.basename(d) for d in debs]}", flush=True)
    F.check(p.returncode == 0 and len(debs) == 1, f"cpack -G DEB: exit {p.returncode}, {len(debs)} .deb: {tail(p)}")
    if len(debs) == 1:
        deb = debs[0]
        fields = {}
        for k in ("Package", "Version", "Architecture", "Maintainer", "Description", "Depends"):
            fields[k] = sh(["dpkg-deb", "-f", deb, k]).stdout.strip()
        print(f"control: Package {fields['Package']}, Version {fields['Version']}, Depends {fields['Depends']}", flush=True)
        F.check(fields["Package"] == "sdcscreen", f"deb: Package {fields['Package']!r}")
        F.check(fields["Version"] and fields["Version"] == project_version(),
                f"deb: Version {fields['Version']!r}, project version {project_version()!r}")
        F.check(fields["Architecture"] == sh(["dpkg", "--print-architecture"]).stdout.strip(),
                f"deb: Architecture {fields['Architecture']!r}")
        for k in ("Maintainer", "Description"):
            F.check(fields[k], f"deb: empty {k}")
        F.check(fields["Depends"], "deb: empty Depends")
        # xxhash is inlined and cudart static: the C/C++ runtimes and fmt are all the binary needs.
        for lib in ("libc6", "libstdc++6", "libfmt"):
            F.check(lib in fields["Depends"], f"deb: Depends {fields['Depends']!r} lacks {lib}")
        for lib in ("libxxhash", "libcuda", "libcudart"):
            F.check(lib not in fields["Depends"], f"deb: Depends {fields['Depends']!r} names {lib}, which the binary must not need")
        control = os.path.join(tmp, "control")
        p = sh(["dpkg-deb", "-e", deb, control])
        F.check(p.returncode == 0, f"dpkg-deb -e: {tail(p)}")
        for script in ("postinst", "prerm", "postrm"):
            path = os.path.join(control, script)
            F.check(os.access(path, os.X_OK), f"deb: no executable {script} maintainer script")
            if os.path.isfile(path):
                p = sh(["sh", "-n", path])
                F.check(p.returncode == 0, f"deb: {script} is not valid sh: {tail(p)}")
        listing = sh(["dpkg-deb", "-c", deb]).stdout
        owners = {ln.split()[1] for ln in listing.splitlines() if ln.split()}
        F.check(owners == {"root/root"}, f"deb: files owned by {owners}, expected root/root")
        root = os.path.join(tmp, "root")
        p = sh(["dpkg-deb", "-x", deb, root])
        F.check(p.returncode == 0, f"dpkg-deb -x: {tail(p)}")
        deb_files = files_under(os.path.join(root, "usr"))
        F.check(files_under(root) == {os.path.join("usr", f) for f in deb_files}, "deb: files outside /usr")
        check_installed_tree("deb", os.path.join(root, "usr"), lock)
        scratch = os.path.join(tmp, "host")
        check_unit(os.path.join(root, "usr"), scratch, lock)
        check_npd(npd_cfg, root, scratch, lock)

        # cmake --install: the same files, the same behaviour.
        inst = os.path.join(tmp, "inst")
        p = sh(["cmake", "--install", BUILD, "--prefix", inst], timeout=300)
        F.check(p.returncode == 0, f"cmake --install: exit {p.returncode}: {tail(p)}")
        inst_files = files_under(inst)
        F.check(inst_files == deb_files, f"cmake --install and the .deb differ: only installed {sorted(inst_files - deb_files)}, "
                                         f"only in the .deb {sorted(deb_files - inst_files)}")
        check_installed_tree("cmake --install", inst, lock)

print(f"test_package: {time.monotonic() - T0:.1f} s", flush=True)
F.finish()
