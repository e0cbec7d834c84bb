#!/usr/bin/env bash
# ptx-diff.sh BASE [--bench]: show that a change of device code changed no kernel.
#
# Emits the PTX of every CUDA source under kernels/ and src/ (and bench/ with --bench), once for the git
# revision BASE and once for the working tree, with the device flags of the build (CMakeLists.txt:
# --fmad=false -prec-div=true -prec-sqrt=true -ftz=false, C++20, -O3 -DNDEBUG as in Release), for
# compute_80 and compute_90. Then compares kernel by kernel, not file by file: each .entry (and .func)
# is cut out of its module and normalised (comments, .file/.loc and blank lines dropped; its own mangled
# name, which also prefixes its parameters and its function-local __shared__ variables, replaced by a
# placeholder; nvcc's per-path hash of anonymous namespaces blanked, since BASE is compiled in another
# directory; its linkage directive, .visible or .weak, dropped: a kernel moved out of an anonymous namespace
# is the same code under a new name). The multisets of bodies before and after are compared per architecture:
#   unchanged   same name, same body
#   renamed     same body under another mangled name (old -> new, demangled)
#   renumbered  same name, the same instructions up to a consistent renaming of virtual registers and
#               labels, and ptxas makes byte-identical machine code of the module for that architecture
#               (PTX registers are virtual: ptxas allocates its own, so a refactor that changes only how
#               the front end numbered them changes nothing that runs)
#   changed     same name, other body; or a body that disappeared or appeared (unified diff shown)
# Exit status: 0 when no body changed, 1 when one did, 2 on a usage or compile error.
# Environment: NVCC (default nvcc), PTX_DIFF_JOBS (parallel compiles, default 2), PTX_DIFF_CACHE (a
# directory that keeps BASE's PTX between runs), PTX_DIFF_KEEP (non-empty: keep the temporary directory).
set -euo pipefail

usage() { echo "usage: $0 BASE [--bench]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
base_rev=$1; shift
with_bench=0
for arg in "$@"; do
  case $arg in
    --bench) with_bench=1 ;;
    *) usage ;;
  esac
done

repo=$(git rev-parse --show-toplevel)
base_commit=$(git -C "$repo" rev-parse --verify --quiet "$base_rev^{commit}") || {
  echo "ptx-diff: unknown revision '$base_rev'" >&2; exit 2; }
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null || { echo "ptx-diff: $nvcc not found" >&2; exit 2; }
jobs=${PTX_DIFF_JOBS:-2}
cuda_include=$(dirname "$(dirname "$(command -v "$nvcc")")")/include

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptx-diff.XXXXXX")
trap '[[ -n ${PTX_DIFF_KEEP:-} ]] && echo "ptx-diff: kept $tmp" >&2 || rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base/src" "$tmp/work"

# The device flags of CMakeLists.txt (SDC_CUDA_FP_FLAGS) and of a Release build; the host-only
# -Xcompiler flags change no PTX.
export PTX_FLAGS="-std=c++20 -O3 -DNDEBUG --fmad=false -prec-div=true -prec-sqrt=true -ftz=false -DSDC_HAVE_CUDA=1"
export NVCC_BIN=$nvcc CUDA_INCLUDE=$cuda_include

# emit TREE OUT: PTX of every CUDA source of TREE into OUT/<arch>/<path with / as __>.ptx
emit() {
  local tree=$1 out=$2 dirs=(kernels src)
  [[ $with_bench == 1 ]] && dirs+=(bench)
  mkdir -p "$out/80" "$out/90"
  (cd "$tree" && find "${dirs[@]}" -name '*.cu' 2>/dev/null | sort) > "$out/sources"
  for arch in 80 90; do
    sed "s|^|$arch |" "$out/sources"
  done | TREE=$tree OUTDIR=$out xargs -P "$jobs" -L 1 sh -c '
    arch=$0 src=$1
    ptx="$OUTDIR/$arch/$(printf %s "$src" | sed "s|/|__|g").ptx"
    cd "$TREE" && "$NVCC_BIN" --ptx -arch=compute_$arch $PTX_FLAGS -I. -I"$CUDA_INCLUDE" -o "$ptx" "$src" ||
      { echo "ptx-diff: nvcc failed on $src (sm_$arch) in $TREE" >&2; exit 255; }'
}

# The working tree as it is, untracked sources included (ignored build directories are not under
# kernels/ or src/).
echo "ptx-diff: compiling $base_rev ($(git -C "$repo" rev-parse --short "$base_commit")) and the working tree" >&2
# BASE's PTX depends only on the commit, the compiler and the flags: PTX_DIFF_CACHE keeps it between runs.
base_ptx=$tmp/base/ptx
if [[ -n ${PTX_DIFF_CACHE:-} ]]; then
  key=$(printf '%s\n' "$base_commit" "$with_bench" "$PTX_FLAGS" "$("$nvcc" --version)" | sha1sum | cut -c1-16)
  base_ptx=$PTX_DIFF_CACHE/$key
fi
if [[ ! -f $base_ptx/complete ]]; then
  rm -rf "$base_ptx"
  git -C "$repo" archive "$base_commit" | tar -x -C "$tmp/base/src"
  emit "$tmp/base/src" "$base_ptx"
  touch "$base_ptx/complete"
fi
emit "$repo" "$tmp/work"

python3 - "$base_ptx" "$tmp/work" "$base_rev" "$tmp" <<'PY'
import collections, difflib, pathlib, re, shutil, subprocess, sys

base_dir, work_dir, base_rev, tmp = (pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3],
                                     pathlib.Path(sys.argv[4]))
HEAD = re.compile(r'^(?:\.visible\s+|\.weak\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)')
ANON = re.compile(r'_GLOBAL__N__[0-9a-f]{8}_')
ANON_BYTES = re.compile(rb'_GLOBAL__N__[0-9a-f]{8}_')
VREG = re.compile(r'%(?:r|rd|rs|f|fd|p|h|hh|q)[0-9]+\b|\$L__BB[0-9_]+')
VREG_DECL = re.compile(r'^\s*\.reg\s+\.\w+\s+%\w+<[0-9]+>;$')

def functions(path):
    """(kind, name, normalised body lines) of every defined .entry/.func of one PTX module."""
    lines = path.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = HEAD.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i] != '{' and not lines[i].rstrip().endswith(';'):
            i += 1
        if i >= len(lines) or lines[i] != '{':   # a declaration (.extern .func ...;): no body
            i += 1
            continue
        while i < len(lines) and lines[i] != '}':
            i += 1
        kind, name = m.group(1), ANON.sub('_GLOBAL__N__00000000_', m.group(2))
        body = []
        for line in lines[start:i + 1]:
            line = ANON.sub('_GLOBAL__N__00000000_', line.split('//', 1)[0]).rstrip()
            if not line.strip() or re.match(r'\s*\.(loc|file)\b', line):
                continue
            line = line.replace('_ZZ' + name[2:], '_ZZ<self>').replace(name, '<self>')
            if not body:
                line = re.sub(r'^(?:\.visible\s+|\.weak\s+)+', '', line)
            body.append(line)
        out.append((kind, name, tuple(body)))
        i += 1
    return out

def renumbered(body):
    """The body with its virtual registers and labels named in order of first use, and the counts of the
    register declarations dropped: equal for two bodies that differ only by a consistent renaming."""
    names = {}
    def canon(m):
        key = m.group(0)
        if key not in names:
            names[key] = f'<v{len(names)}>'
        return names[key]
    return tuple(VREG.sub(canon, line) for line in body if not VREG_DECL.match(line))

def collect(root, arch):
    items = collections.defaultdict(list)   # (kind, name) -> bodies (a name may live in several modules)
    modules = collections.defaultdict(set)  # (kind, name) -> PTX files defining it
    for ptx in sorted((root / arch).glob('*.ptx')):
        for kind, name, body in functions(ptx):
            items[(kind, name)].append(body)
            modules[(kind, name)].add(ptx.name)
    return {k: sorted(set(v)) for k, v in items.items()}, modules

def same_machine_code(arch, module):
    """Assembles the module's PTX before and after with ptxas for sm_<arch>; true when the cubins are the
    same bytes once nvcc's per-path hash of anonymous namespaces is blanked."""
    ptxas = shutil.which('ptxas')
    if not ptxas:
        return False
    cubins = []
    for side, root in (('before', base_dir), ('after', work_dir)):
        out = tmp / f'{side}.{arch}.{module}.cubin'
        res = subprocess.run([ptxas, f'-arch=sm_{arch}', '-O3', str(root / arch / module), '-o', str(out)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            return False
        cubins.append(ANON_BYTES.sub(b'_GLOBAL__N__00000000_', out.read_bytes()))
    return cubins[0] == cubins[1]

def demangle(names):
    tool = shutil.which('cu++filt') or shutil.which('c++filt')
    if not tool:
        return list(names)
    res = subprocess.run([tool], input='\n'.join(names), capture_output=True, text=True)
    got = res.stdout.splitlines()
    return got if len(got) == len(names) else list(names)

def label(key):
    return f'.{key[0]} {key[1]}  [{demangle([key[1]])[0]}]'

changed_any = False
for arch in ('80', '90'):
    (before, mods_before), (after, mods_after) = collect(base_dir, arch), collect(work_dir, arch)
    unchanged, changed, same_code = [], [], []
    for key in sorted(before.keys() & after.keys()):
        if before[key] == after[key]:
            unchanged.append(key)
        elif ([renumbered(b) for b in before[key]] == [renumbered(b) for b in after[key]] and
              mods_before[key] == mods_after[key] and
              all(same_machine_code(arch, m) for m in sorted(mods_after[key]))):
            same_code.append(key)   # a consistent renaming of virtual registers, the same machine code
        else:
            changed.append(key)
    gone = {k: before[k] for k in before.keys() - after.keys()}
    new = {k: after[k] for k in after.keys() - before.keys()}
    # A body that left one name and arrived under another is a rename.
    by_body = collections.defaultdict(list)
    for key, bodies in new.items():
        by_body[(key[0], tuple(bodies))].append(key)
    renamed = []
    for key in sorted(gone):
        cands = by_body.get((key[0], tuple(gone[key])))
        if cands:
            renamed.append((key, cands.pop(0)))
    for old, newkey in renamed:
        del gone[old], new[newkey]
    print(f'== sm_{arch}: {len(unchanged)} unchanged, {len(same_code)} renumbered, {len(renamed)} renamed, '
          f'{len(changed)} changed, {len(gone)} disappeared, {len(new)} appeared '
          f'(before {len(before)}, after {len(after)})')
    for key in unchanged:
        print(f'  unchanged  {label(key)}')
    for key in same_code:
        print(f'  renumbered {label(key)}\n             (the same instructions with the virtual registers renamed; '
              f'ptxas makes the same sm_{arch} machine code of {", ".join(sorted(mods_after[key]))})')
    if renamed:
        olds = demangle([o[1] for o, _ in renamed])
        news = demangle([n[1] for _, n in renamed])
        for (old, newkey), od, nd in zip(renamed, olds, news):
            print(f'  renamed    .{old[0]} {od}\n          -> .{newkey[0]} {nd}')
    def show(title, key, a, b):
        print(f'  {title:<10} {label(key)}')
        text = lambda bodies: '\n\n'.join('\n'.join(body) for body in bodies).splitlines()
        diff = difflib.unified_diff(text(a), text(b), f'{base_rev}:{key[1]}', f'working tree:{key[1]}',
                                    lineterm='', n=3)
        for line in diff:
            print('    ' + line)
    for key in changed:
        show('changed', key, before[key], after[key])
    for key in sorted(gone):
        show('gone', key, gone[key], [])
    for key in sorted(new):
        show('new', key, [], new[key])
    if changed or gone or new:
        changed_any = True
print('ptx-diff: ' + ('kernel bodies CHANGED' if changed_any else 'no kernel body changed'))
sys.exit(1 if changed_any else 0)
PY
