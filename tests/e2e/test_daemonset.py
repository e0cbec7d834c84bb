"""The Kubernetes manifest (deploy/k8s/sdcscreen-daemonset.yaml): what Kubernetes requires of its documents,
two DaemonSets that split the nodes in two by nvidia.com/gpu.present (the GPU one with the NVIDIA runtime and
every GPU, neither requesting a GPU), and the node-problem-detector plugin config reaching NPD from a ConfigMap
that holds exactly deploy/k8s/npd-sdcscreen.json, with what its rule writes on writable mounts.
Needs python3-yaml.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

F = common.Failures("test_daemonset")
DAEMONSET = os.path.join(common.SOURCE_DIR, "deploy", "k8s", "sdcscreen-daemonset.yaml")


def check_daemonset(cfg):
    try:
        import yaml
    except ImportError:
        F.check(False, "python3-yaml is not installed (scripts/setup.sh installs it)")
        return
    with open(DAEMONSET) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        F.check(isinstance(d, dict) and d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name"),
                f"k8s: a document lacks apiVersion, kind or metadata.name: {str(d)[:200]}")
    dss = [d for d in docs if d.get("kind") == "DaemonSet"]
    cms = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ConfigMap"}
    F.check(len(dss) == 2, f"k8s: {len(dss)} DaemonSets, expected 2 (nodes without GPUs, GPU nodes)")
    # Every node runs exactly one: the GPU one on nodes labelled nvidia.com/gpu.present=true, with the NVIDIA
    # runtime and every GPU, and without a GPU request (that would take the GPUs from workloads for good).
    terms = {}
    for ds in dss:
        pod = ds.get("spec", {}).get("template", {}).get("spec", {})
        exprs = [e for t in pod.get("affinity", {}).get("nodeAffinity", {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
            for e in t.get("matchExpressions", [])]
        gpu_expr = [e for e in exprs if e.get("key") == "nvidia.com/gpu.present"]
        terms[ds["metadata"]["name"]] = gpu_expr
        env = {e.get("name"): e.get("value") for c in pod.get("containers", []) for e in c.get("env", [])}
        requests_gpu = any("nvidia.com/gpu" in str(c.get("resources", {})) for c in pod.get("containers", []))
        F.check(not requests_gpu, f"k8s: {ds['metadata']['name']} requests nvidia.com/gpu")
        if gpu_expr and gpu_expr[0].get("operator") == "In":
            F.check(pod.get("runtimeClassName") == "nvidia" and env.get("NVIDIA_VISIBLE_DEVICES") == "all",
                    f"k8s: the GPU DaemonSet lacks runtimeClassName nvidia or NVIDIA_VISIBLE_DEVICES=all")
    ops = sorted((e[0].get("operator"), tuple(e[0].get("values", []))) for e in terms.values() if e)
    F.check(ops == [("In", ("true",)), ("NotIn", ("true",))],
            f"k8s: the DaemonSets' nvidia.com/gpu.present affinities {terms} do not split the nodes in two")
    for ds in dss:
        check_one_daemonset(ds, docs, cms, cfg)


def check_one_daemonset(ds, docs, cms, cfg):
    F.check(ds.get("apiVersion") == "apps/v1", f"k8s: DaemonSet apiVersion {ds.get('apiVersion')!r}")
    spec = ds.get("spec", {})
    match = spec.get("selector", {}).get("matchLabels", {})
    labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    F.check(match and all(labels.get(k) == v for k, v in match.items()),
            f"k8s: selector.matchLabels {match} does not match template labels {labels}")
    pod = spec.get("template", {}).get("spec", {})
    containers = pod.get("containers", [])
    F.check(containers, "k8s: no containers")
    names = [c.get("name") for c in containers]
    F.check(all(names) and len(set(names)) == len(names), f"k8s: container names {names}")
    for c in containers:
        F.check(c.get("image"), f"k8s: container {c.get('name')} has no image")
        F.check(c.get("securityContext", {}).get("privileged") is False, f"k8s: container {c.get('name')} is not privileged: false")
        F.check(c.get("resources", {}).get("requests") and c["resources"].get("limits", {}).get("memory"),
                f"k8s: container {c.get('name')} lacks resource requests or a memory limit")
    F.check({"operator": "Exists"} in pod.get("tolerations", []), "k8s: no toleration of every taint (operator: Exists)")
    sa = pod.get("serviceAccountName")
    F.check(sa in [d["metadata"]["name"] for d in docs if d.get("kind") == "ServiceAccount"],
            f"k8s: serviceAccountName {sa!r} is not defined in the file")

    # The plugin config reaches NPD: a configMap volume -> a mount -> --config.custom-plugin-monitor=PATH.
    vols = {v.get("name"): v for v in pod.get("volumes", [])}
    c = containers[0]
    flags = [a for a in c.get("command", []) + c.get("args", []) if a.startswith("--config.custom-plugin-monitor=")]
    F.check(len(flags) == 1, f"k8s: {len(flags)} --config.custom-plugin-monitor flags, expected 1")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    found = None
    for flag in flags:
        for cfg_path in flag.split("=", 1)[1].split(","):
            for mp, m in mounts.items():
                if cfg_path.startswith(mp.rstrip("/") + "/"):
                    v = vols.get(m["name"], {})
                    cmname = v.get("configMap", {}).get("name")
                    rel = cfg_path[len(mp.rstrip("/")) + 1:]
                    items = {i["path"]: i["key"] for i in v.get("configMap", {}).get("items", [])}
                    found = (cmname, items.get(rel, rel))
    F.check(found is not None and found[0] in cms,
            f"k8s: the custom plugin config {flags} is not mounted from a ConfigMap defined in the file")
    if found and found[0] in cms:
        data = cms[found[0]].get("data", {})
        F.check(found[1] in data, f"k8s: ConfigMap {found[0]} has no key {found[1]}")
        if found[1] in data:
            try:
                F.check(json.loads(data[found[1]]) == cfg,
                        f"k8s: ConfigMap {found[0]}/{found[1]} differs from deploy/k8s/npd-sdcscreen.json")
            except ValueError as e:
                F.check(False, f"k8s: ConfigMap {found[0]}/{found[1]} is not JSON: {e}")
    # What the rule writes (lock, report) must be mounted: the container's root file system is read-only.
    for r in cfg.get("rules", []):
        args = r.get("args", [])
        for opt in ("--lock-file", "-o", "--prometheus"):
            if opt in args:
                target = args[args.index(opt) + 1]
                F.check(any(target.startswith(mp.rstrip("/") + "/") and not mounts[mp].get("readOnly") for mp in mounts),
                        f"k8s: the rule's {opt} {target} is not on a writable volume mount")


def check_plugin_config(cfg):
    """NPD publishes the default conditions when it starts unless skip_initial_status is set (pluginConfig):
    SilentDataCorruption=False before any screen ran. The default message is also what NPD shows after a
    pass, and before the first screen where an NPD ignores the setting: it must not claim a screen."""
    F.check(cfg.get("pluginConfig", {}).get("skip_initial_status") is True,
            f"npd: pluginConfig.skip_initial_status is not true: {cfg.get('pluginConfig')}")
    for c in cfg.get("conditions", []):
        msg = c.get("message", "")
        F.check(msg and not re.search(r"\b(found|passed|screened|clean|healthy)\b", msg, re.I),
                f"npd: the default message of {c.get('type')} claims a screen: {msg!r}")


cfg = common.npd_config(F)
check_plugin_config(cfg)
check_daemonset(cfg)
F.finish()
