"""run --html: one self-contained page, checked in a real browser. Headless Chromium (Debian's chromium package,
which scripts/setup.sh installs) loads the page from disk; the test reads the DOM Chromium built (--dump-dom) and
a 1280x900 screenshot (--screenshot), both read by browser.py.

  1. a CPU drill: the failing CPU's cell has class fail, the failing units and tiles match the JSON report of the
     same run, the failing case shows its tile and bit 20; the screenshot has pixels of the failing unit's colour;
  2. a clean run: no element has class fail, and no pixel has that colour;
  3. a drill on SM 2 of the second of two emulated GPUs: that SM's cell in that GPU's grid is the failing one,
     and it drills into the warp and lane that stored the drilled word;
  4. bad --html paths: unwritable is 78, inside the pattern directory is 64, one line on stderr each; a page
     that cannot be written after the run is 78 (1 on a miscompare); a screen that dies in its reporting code
     leaves the in-progress page (exit 2), never the previous verdict;
  5. a drill on an input element every tile of a column reads, repeating on one CPU (persist=always): hundreds
     of differing elements in each iteration, of which the report lists the first 32 (all of iteration 0): the
     failures over iterations count every one (the JSON's failures_by_iteration), bar by bar, and the tile map
     draws every failing tile of the column (the JSON's failed_tile_ids), not only the listed elements' tiles;
  6. two CPUs, one of them made ten times slower (SDCSCREEN_DRILL_SLOW_CPU): the other runs at several times
     its peer's rate, and its bar is drawn to scale, inside the chart, under an axis labelled in x;
  7. laid out by Chromium in a 480-pixel window (a script added to a copy of the page measures it): the
     reproduce box is labelled and its lines break between words, never inside a case id or a drill; every
     unit's cell carries its number, inside the cell, and the legend says what the number is;
  8. a level-3 replay drill whose loss spikes and comes back: its trajectory's chart names the JSON's failure mode,
     draws three lines of a point per step, each inside its plot as laid out, and the screenshot has their colours.
A big node (192 CPUs, 8 GPUs of 132 SMs) is tests/unit/report/test_html.cpp: this machine cannot produce its report.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from browser import Dom, png_pixels as decode_png  # noqa: E402
common.KEEP_PROBE = True  # the page shows the probe's figures and slow units

F = common.Failures("test_html")
FAIL_RGB = (0xD6, 0x27, 0x28)  # the failing unit's colour (src/report/html.h)
CPU_CASE = "softmax_f32.special_128x1000"
GPU_CASE = "gemm_bf16_exactint.uniform_256x192x512"  # 4 x 3 tiles; block t computes tile t, on SM t % 4
INPUT_CASE = "gemm_f32.special_512"  # 8 x 8 tiles; b's element 3 is read by every tile of the first column

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
if CHROMIUM is None:
    print("SKIP: chromium is not installed (scripts/setup.sh installs Debian's chromium package)")
    sys.exit(0)


def chromium(url_path, *flags):
    """Headless Chromium on a file from disk, with a fresh profile; returns its stdout."""
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--hide-scrollbars", f"--user-data-dir={profile}", *flags, "file://" + url_path],
                           capture_output=True, text=True, timeout=180)
    F.check(p.returncode == 0, f"chromium {' '.join(flags)}: exit {p.returncode}: {p.stderr[-400:]}")
    return p.stdout


def dump_dom(path):
    return Dom(chromium(path, "--dump-dom"))


def png_pixels(path):
    """(width, height, rows of RGB tuples) of Chromium's screenshot (browser.py)."""
    return decode_png(path, F.check)


def fail_pixels(png):
    w, h, rows = png_pixels(png)
    F.check((w, h) == (1280, 900), f"screenshot is {w}x{h}, want 1280x900")
    return sum(1 for row in rows for px in row if px == FAIL_RGB)


def screen(d, *args, html_name="page.html"):
    """sdcscreen run ARGS --html and -o JSON in d; returns (exit code, report, page path, stderr)."""
    page, out = os.path.join(d, html_name), os.path.join(d, "report.json")
    p = common.run("run", *args, "--html", page, "--output-format", "json", "-o", out, "-q", timeout=600)
    report = json.load(open(out)) if os.path.exists(out) else {}
    return p.returncode, report, page, p.stderr


# Added to a copy of a page (the page itself has no script): measures what Chromium laid out and leaves it, as
# JSON, in the body's data-measured attribute for --dump-dom.
MEASURE = r"""<script>
(function () {
  const out = {};
  const pre = document.querySelector("pre.reproduce");
  if (pre) {  // the line of each character of the reproduce box, by the top of its box
    const chars = [];
    const walk = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode())
      for (let i = 0; i < n.data.length; i++) chars.push([n, i]);
    const tops = chars.map(([n, i]) => {
      const r = document.createRange();
      r.setStart(n, i);
      r.setEnd(n, i + 1);
      const b = r.getClientRects();
      return b.length ? Math.round(b[0].top) : null;
    });
    out.text = chars.map(([n, i]) => n.data[i]).join("");
    out.tops = tops;
    // each word (a run of characters without a space), where it starts, and its width on one line
    const probe = document.createElement("span");
    probe.style.whiteSpace = "pre";
    pre.appendChild(probe);
    out.words = [...out.text.matchAll(/[^ ]+/g)].map(x => {
      probe.textContent = x[0];
      return [x[0], x.index, probe.getBoundingClientRect().width];
    });
    pre.removeChild(probe);
    const style = getComputedStyle(pre);
    out.width = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const sec = pre.closest("section");
    out.label = sec && sec.querySelector("h2") ? sec.querySelector("h2").textContent : null;
  }
  out.cells = [...document.querySelectorAll("g.unit")].map(g => {
    const cell = g.querySelector("rect").getBoundingClientRect();
    const t = g.querySelector("text");
    const b = t ? t.getBoundingClientRect() : null;
    return {unit: g.getAttribute("data-unit"), number: t ? t.textContent : null,
            inside: !!b && b.width > 0 && b.left >= cell.left - 0.5 && b.right <= cell.right + 0.5 &&
                    b.top >= cell.top - 0.5 && b.bottom <= cell.bottom + 0.5};
  });
  out.legend = [...document.querySelectorAll("#units .legend")].map(l => l.textContent).join(" ");
  const svg = document.querySelector("figure.throughput svg");
  if (svg) {
    const box = svg.getBoundingClientRect();
    out.chart = {top: box.top, bottom: box.bottom,
                 texts: [...svg.querySelectorAll("text")].map(t => t.textContent),
                 bars: [...svg.querySelectorAll("rect.throughput")].map(r => {
                   const b = r.getBoundingClientRect();
                   return {unit: r.getAttribute("data-unit"), relative: +r.getAttribute("data-relative"),
                           top: b.top, height: b.height};
                 })};
  }
  document.body.setAttribute("data-measured", JSON.stringify(out));
})();
</script>"""


def measured(page, width, script=MEASURE):
    """What Chromium laid out for the page in a window `width` pixels wide (the script's, MEASURE or TRAJECTORY, left
    in page + '.measure.html')."""
    copy = page + ".measure.html"
    with open(page, encoding="utf-8") as f, open(copy, "w", encoding="utf-8") as g:
        g.write(f.read().replace("</body>", script + "</body>"))
    dom = Dom(chromium(copy, "--dump-dom", f"--window-size={width},900"))
    body = next((a for t, a, _ in dom.elements if t == "body"), {})
    try:
        return json.loads(body.get("data-measured", "{}"))
    except ValueError:
        F.check(False, f"{page}: the measuring script left {body.get('data-measured')!r}")
        return {}


# Added to a copy of a replay's page: the trajectory's chart moved to the top of the page (into the screenshot's
# window), then each of its lines' boxes and its plots', as Chromium laid them out.
TRAJECTORY = r"""<script>
const f = document.querySelector("figure.trajectory"), out = {paths: [], plots: []};
out.figures = [...document.querySelectorAll("figure.trajectory")].map(
  e => [e.getAttribute("data-unit"), e.getAttribute("data-failure-mode"), e.getAttribute("data-steps")]);
if (f) {
  document.body.prepend(f);  // first on the page, in the screenshot's window
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  out.plots = [...f.querySelectorAll("svg > rect")].map(box);
  out.paths = [...f.querySelectorAll("path")].map(p => ({cls: p.getAttribute("class"), box: box(p),
                                                         points: p.getAttribute("data-points")}));
}
document.body.setAttribute("data-measured", JSON.stringify(out));
</script>"""
TRAJECTORY_RGB = {"loss-unit": (0xC0, 0x39, 0x2B), "distance": (0x24, 0x71, 0xA3)}  # src/report/html_replay.cpp


def check_timeline(dom, report, case, device, name):
    """Every differing element counted over the iterations, as the JSON's failures_by_iteration has them."""
    t = next((t for t in report.get("tests", []) if t["id"] == case and t["device"] == device), {})
    want = {n["iteration"]: n["elements"] for n in t.get("failures_by_iteration", [])}
    listed = {}
    for m in t.get("miscompares", []):
        listed[m["iteration"]] = listed.get(m["iteration"], 0) + 1
    F.check(sum(want.values()) == t.get("miscompared_elements") and len(want) >= 2 and
            all(want[i] > listed.get(i, 0) for i in want),
            f"{name}: want a fault of more elements than the 32 listed: {t.get('miscompared_elements')} differing, "
            f"{len(t.get('miscompares', []))} listed, by iteration {want}")
    bars = {int(a["data-iteration"]): int(a["data-elements"]) for a in dom.having("iteration")}
    F.check(bars == want, f"{name}: failures over iterations drawn {bars}, JSON {want}")
    F.check([a.get("data-counted") for a in dom.having("timeline")] == ["all"],
            f"{name}: timeline {dom.having('timeline')}")


def check_layout(page, report, name, numbered):
    """The reproduce box and the unit cells as Chromium lays them out in a narrow window."""
    m = measured(page, 480)
    F.check(m.get("label") == "Reproduce", f"{name}: the reproduce box's label {m.get('label')!r}")
    text, tops = m.get("text", ""), m.get("tops", [])
    F.check(text == report.get("reproduce") and len(set(tops)) >= 2,
            f"{name}: the reproduce box holds {text!r} on {len(set(tops))} line(s), want the report's on several")
    # A word that fits the box stays on one line; a longer one (a drill) breaks after a comma, never inside
    # a case id.
    for word, start, width in m.get("words", []):
        lines = set(tops[start:start + len(word)])
        F.check(len(lines) == 1 or width > m.get("width", 0),
                f"{name}: {word!r} ({width:.0f} px) broken across {len(lines)} lines of a {m.get('width')} px box")
        breaks = [k for k in range(start + 1, start + len(word)) if tops[k] != tops[k - 1]]
        F.check(all(text[k - 1] == "," for k in breaks),
                f"{name}: {word!r} broken after {[text[start:k] for k in breaks]}, not after a comma")
    for t in report.get("tests", []):
        for at in (i for i in range(len(text)) if text.startswith(t["id"], i)):
            F.check(len(set(tops[at:at + len(t["id"])])) == 1, f"{name}: case id {t['id']} broken across lines")
    cells = m.get("cells", [])
    F.check(len(cells) == len(numbered) and all(c["inside"] and c["number"] == numbered.get(c["unit"]) for c in cells),
            f"{name}: cell numbers {[(c['unit'], c['number'], c['inside']) for c in cells][:8]}, want {numbered}")
    F.check("the number in a cell" in m.get("legend", ""), f"{name}: legend {m.get('legend')!r}")


def self_contained(page, name):
    text = open(page, encoding="utf-8").read()
    for bad in ("<script", "<link", "@import", "url(", "https://", "<img", "<iframe"):
        F.check(bad not in text, f"{name}: the page contains {bad!r}: it must need nothing outside itself")
    F.check(text.replace('xmlns="http://www.w3.org/2000/svg"', "").find("http://") < 0, f"{name}: an http:// reference")


def check_units(dom, report, name):
    """Every unit of the JSON once, with its class; counts of failing units and tiles as in the JSON."""
    cells = dom.having("unit")
    names = [c.get("data-unit") for c in cells]
    want = {}
    for u in report.get("units", []):
        key = f"cpu {u['cpu']}" if u["kind"] == "cpu" else f"gpu {u['gpu']} sm {u['sm']}"
        want[key] = u
    F.check(len(names) == len(set(names)), f"{name}: a unit is drawn twice: {sorted(names)}")
    F.check(set(want) <= set(names), f"{name}: units missing from the page: {set(want) - set(names)}")
    by_name = {c.get("data-unit"): c for c in cells}
    for key, u in want.items():
        cls = set(by_name.get(key, {}).get("class", "").split())
        expect = u["result"] if u["result"] != "idle" else "untested"
        F.check(expect in cls, f"{name}: {key} is {u['result']} in the JSON, class {cls} on the page")
        F.check(by_name.get(key, {}).get("data-failed-tiles") == str(u["failed_tiles"]),
                f"{name}: {key} failed tiles {by_name.get(key, {}).get('data-failed-tiles')}, JSON {u['failed_tiles']}")
    failing = [u for u in report.get("units", []) if u["result"] == "fail"]
    F.check(len(dom.having("unit", "fail")) == len(failing),
            f"{name}: {len(dom.having('unit', 'fail'))} failing unit cells, {len(failing)} in the JSON")
    section = next((a for t, a, _ in dom.elements if a.get("id") == "units"), {})
    F.check(section.get("data-failing-units") == str(len(failing)) and
            section.get("data-failed-tiles") == str(sum(u["failed_tiles"] for u in report.get("units", []))),
            f"{name}: units section {section}")
    return by_name


def check_case(dom, report, case, device, name):
    """The failing case's section: its counts as the JSON's, the listed tiles marked, the flipped bits counted."""
    t = next((t for t in report.get("tests", []) if t["id"] == case and t["device"] == device), {})
    sec = [a for a in dom.having("case") if a.get("data-test") == case and a.get("data-device") == device]
    F.check(len(sec) == 1 and sec[0].get("data-failed-tiles") == str(t.get("failed_tiles")) and
            sec[0].get("data-elements") == str(t.get("miscompared_elements")),
            f"{name}: case section {sec} against JSON failed_tiles {t.get('failed_tiles')}")
    # Every failing tile (the JSON's failed_tile_ids, schema 21), the listed elements' among them.
    marked = {int(x) for a in dom.having("tile", "failed") for x in a.get("data-tile", "").split()}
    listed = {m["tile"] for m in t.get("miscompares", [])}
    F.check(marked == set(t.get("failed_tile_ids", [])) and listed <= marked,
            f"{name}: failing tiles on the page {sorted(marked)}, JSON {t.get('failed_tile_ids')}, listed {sorted(listed)}")
    # Each failing tile where the report's tile_grid puts it over the output (row t / cols, column t % cols,
    # folded into cells of fr x fc tiles on a grid larger than 64 either way).
    g = t.get("tile_grid")
    F.check(g and g["rows"] * g["cols"] == t.get("tiles"), f"{name}: tile_grid {g} for {t.get('tiles')} tiles")
    if g:
        fr, fc = -(-g["rows"] // 64), -(-g["cols"] // 64)
        for a in dom.having("tile", "failed"):
            first = int(a.get("data-tile", "0").split()[0])
            F.check((a.get("data-row"), a.get("data-col")) == (str(first // g["cols"] // fr), str(first % g["cols"] // fc)),
                    f"{name}: tile {first} drawn at row {a.get('data-row')}, column {a.get('data-col')} of {g}")
    flips = [0] * 32
    for g in t.get("signatures", []):
        for b in range(32):
            flips[b] += g["bit_flips"]["zero_to_one"][b] + g["bit_flips"]["one_to_zero"][b]
    bars = {int(a["data-bit"]): int(a["data-flips"]) for a in dom.having("bit")}
    F.check(bars == dict(enumerate(flips)), f"{name}: bit histogram {bars}, JSON {flips}")
    return bars


with tempfile.TemporaryDirectory() as d:
    # 1. A CPU drill: bit 20 of element 0 on a CPU this process may use. The page lives in a folder whose name
    #    has markup in it: the reproduce command shows it, escaped.
    cpu = sorted(os.sched_getaffinity(0))[-1]
    odd = os.path.join(d, 'a<i>b&"c')
    os.mkdir(odd)
    drill = f"case={CPU_CASE},iteration=0,unit={cpu},element=0,bit=20"
    code, report, page, err = screen(odd, "--enable", CPU_CASE, "--retest-on-failure", "2", "--inject",
                                     drill + ",persist=always")
    F.check(code == 1 and report.get("exit", {}).get("code") == 1, f"cpu drill: exit {code}: {err[-300:]}")
    F.check(os.path.exists(page), "cpu drill: no page written")
    if os.path.exists(page):
        self_contained(page, "cpu drill")
        dom = dump_dom(page)
        cells = check_units(dom, report, "cpu drill")
        F.check("fail" in cells.get(f"cpu {cpu}", {}).get("class", "").split(), f"cpu drill: cpu {cpu} not marked fail")
        bars = check_case(dom, report, CPU_CASE, "cpu", "cpu drill")
        F.check(bars.get(20, 0) >= 1 and sum(bars.values()) == bars.get(20, 0), f"cpu drill: bits {bars}")
        verdict = next((a for _, a, _ in dom.elements if a.get("id") == "verdict"), {})
        F.check(verdict.get("data-verdict") == "fail" and verdict.get("data-exit-code") == "1",
                f"cpu drill: verdict {verdict}")
        F.check(not any(t == "i" for t, _, _ in dom.elements), "cpu drill: markup from the command line became an element")
        F.check(report.get("reproduce", "?") in "".join(dom.text), "cpu drill: the reproduce command is not on the page")
        F.check("FAULT INJECTION RUN" in "".join(dom.text), "cpu drill: the page does not say it is a drill")
        rows = [a for _, a, _ in dom.elements if "data-classification" in a]
        F.check([(a.get("data-unit"), a.get("data-classification")) for a in rows] == [(f"cpu {cpu}", "persistent")],
                f"cpu drill: retest rows {rows}")
        png = os.path.join(d, "cpu.png")
        chromium(page, f"--screenshot={png}", "--window-size=1280,900")
        n = fail_pixels(png) if os.path.exists(png) else 0
        F.check(n >= 100, f"cpu drill: {n} pixels of the failing unit's colour in the screenshot, want a cell's worth")
        check_layout(page, report, "cpu drill", {f"cpu {u['cpu']}": str(u["cpu"]) for u in report.get("units", [])})

    # 2. The same case without a fault: nothing failing on the page, no failure colour in the screenshot.
    code, report, page, err = screen(d, "--enable", CPU_CASE, html_name="clean.html")
    F.check(code == 0, f"clean: exit {code}: {err[-300:]}")
    if os.path.exists(page):
        self_contained(page, "clean")
        dom = dump_dom(page)
        check_units(dom, report, "clean")
        F.check(not dom.having("fail"), f"clean: elements with class fail: {dom.having('fail')[:3]}")
        F.check(not dom.having("case") and not dom.having("tile", "failed"), "clean: a failing case is drawn")
        F.check(not any(a.get("id") == "retest" for _, a, _ in dom.elements), "clean: an empty retest section")
        png = os.path.join(d, "clean.png")
        chromium(page, f"--screenshot={png}", "--window-size=1280,900")
        n = fail_pixels(png) if os.path.exists(png) else -1
        F.check(n == 0, f"clean: {n} pixels of the failing unit's colour")

    # 3. Two emulated GPUs of 4 SMs, a drill on every tile SM 2 of the second computes: that SM fails, in its
    #    GPU's grid, and every other SM of both grids passes.
    code, report, page, err = screen(d, "--backend", "emulated:sm_90x4,sm_90x4", "--profile", "boot", "--enable",
                                     GPU_CASE, "--inject", f"case={GPU_CASE},element=0,bit=30,unit=2,device=1",
                                     html_name="gpu.html")
    F.check(code == 1, f"gpu drill: exit {code}: {err[-300:]}")
    if os.path.exists(page):
        self_contained(page, "gpu drill")
        dom = dump_dom(page)
        cells = check_units(dom, report, "gpu drill")
        F.check(len(cells) == 8, f"gpu drill: {len(cells)} SM cells, want 2 x 4")
        F.check([a.get("data-unit") for a in dom.having("unit", "fail")] == ["gpu 1 sm 2"],
                f"gpu drill: failing cells {[a.get('data-unit') for a in dom.having('unit', 'fail')]}")
        gpus = [a.get("data-device") for a in dom.having("gpu")]
        F.check(gpus == ["cuda:0", "cuda:1"], f"gpu drill: GPU grids {gpus}")
        check_case(dom, report, GPU_CASE, "cuda:1", "gpu drill")
        check_layout(page, report, "gpu drill", {f"gpu {g} sm {s}": str(s) for g in (0, 1) for s in range(4)})
        # The failing SM drills into its warps: the drilled word (offset 0 of each tile SM 2 computed) is stored by
        # lane 0 of warp 0 (the kernel's thread-to-element map), and so is every listed miscompare of that SM.
        t = next((t for t in report.get("tests", []) if t.get("id") == GPU_CASE and t.get("device") == "cuda:1"), {})
        listed = [m for m in t.get("miscompares", []) if (m.get("unit") or {}).get("sm") == 2]
        named = sorted({(m.get("warp"), m.get("lane")) for m in listed})
        F.check(listed and named == [(0, 0)], f"gpu drill: miscompares name (warp, lane) {named}, want (0, 0)")
        drills = [(a.get("data-device"), a.get("data-sm"), a.get("data-elements")) for a in dom.having("sm-warps")]
        F.check(drills == [("cuda:1", "2", str(len(listed)))], f"gpu drill: SM drill-downs {drills}")
        rows = [(a.get("data-warp"), a.get("data-lanes"))
                for tag, a, _ in dom.elements if tag == "tr" and "data-warp" in a]
        F.check(rows == [("0", "0")], f"gpu drill: warp rows {rows}, want warp 0 with lane 0")
        png = os.path.join(d, "gpu.png")
        chromium(page, f"--screenshot={png}", "--window-size=1280,900")
        n = fail_pixels(png) if os.path.exists(png) else 0
        F.check(n >= 100, f"gpu drill: {n} pixels of the failing unit's colour")

    # 5. A fault that stays, in more elements than the report lists: every iteration's bar counts all of them.
    unit = sorted(os.sched_getaffinity(0))[-1]
    code, report, page, err = screen(d, "--enable", INPUT_CASE, "--inject", f"case={INPUT_CASE},target=input,tensor=b,"
                                     f"element=3,bit=30,unit={unit},persist=always", html_name="input.html")
    F.check(code == 1, f"input drill: exit {code}: {err[-300:]}")
    if os.path.exists(page):
        dom = dump_dom(page)
        check_timeline(dom, report, INPUT_CASE, "cpu", "input drill")
        # The tile map draws every tile of the first tile column (each reads b's element 3), not only the tiles of
        # the 32 listed elements.
        check_case(dom, report, INPUT_CASE, "cpu", "input drill")
        marked = {int(x) for a in dom.having("tile", "failed") for x in a.get("data-tile", "").split()}
        F.check(marked == set(range(0, 64, 8)), f"input drill: failing tiles on the page {sorted(marked)}, want 0, 8 .. 56")

    # 6. Two CPUs, one doing ten times the probe's work: the other runs at several times its peer's rate. Its
    #    bar is drawn to scale (heights in proportion to the rates) and inside the chart, the axis labelled in x.
    pair = sorted(os.sched_getaffinity(0))[:2]
    if len(pair) < 2:
        print("SKIP part 6: needs two CPUs (a unit's peer)")
    else:
        page, out = os.path.join(d, "slow.html"), os.path.join(d, "slow.json")
        p = subprocess.run([common.SDCSCREEN, *common.with_lock(
            ["run", "--time-budget", "1h", "--cpuset", f"{pair[0]},{pair[1]}", "--enable", CPU_CASE, "-q",
             "--html", page, "--output-format", "json", "-o", out])],
            capture_output=True, text=True, timeout=600, env=dict(os.environ, SDCSCREEN_DRILL_SLOW_CPU=str(pair[1])))
        report = json.load(open(out)) if os.path.exists(out) else {}
        rates = {u["unit"]: u["relative"] for u in report.get("throughput", {}).get("units", [])}
        F.check(p.returncode == 0 and len(rates) == 2 and max(rates.values(), default=0) > 1.5,
                f"slow drill: exit {p.returncode}, rates {rates}: {p.stderr[-300:]}")
        if os.path.exists(page):
            chart = measured(page, 1280).get("chart", {})
            bars = chart.get("bars", [])
            F.check({b["unit"]: round(b["relative"], 2) for b in bars} == {k: round(v, 2) for k, v in rates.items()},
                    f"slow drill: bars {bars}, JSON {rates}")
            tall = max(bars, key=lambda b: b["relative"], default={"relative": 1, "height": 0})
            for b in bars:
                F.check(b["top"] >= chart.get("top", 0) and
                        abs(b["height"] - tall["height"] * b["relative"] / tall["relative"]) <= 1.5,
                        f"slow drill: {b['unit']} at {b['relative']}x drawn {b['height']:.1f} px high from "
                        f"{b['top']:.1f}, {tall['unit']} at {tall['relative']}x {tall['height']:.1f} px; chart from "
                        f"{chart.get('top')}")
            texts = chart.get("texts", [])
            ticks = [t for t in texts if t.endswith("x") and t[:-1].replace(".", "", 1).isdigit()]
            F.check(len(ticks) >= 3 and max(float(t[:-1]) for t in ticks) >= max(rates.values(), default=0),
                    f"slow drill: the axis's ticks {ticks} do not reach {max(rates.values(), default=0)}")
            F.check(any("median" in t for t in texts) and any(t.startswith("floor ") for t in texts) and
                    all(u in texts for u in rates), f"slow drill: the chart's labels {texts}")

    # 8. A level-3 replay drill: a logit of step 5 flipped to about 1e36 spikes that step's loss; the run comes back.
    l3 = "train_step_f32.l3_tiny_20"
    pair = sorted(os.sched_getaffinity(0))[:2]
    code, report, page, err = screen(d, "--profile", "standard", "--time-budget", "0.2s", "--enable", l3, "--cpuset",
                                     ",".join(map(str, pair)), "--inject", f"case={l3},submodule=lm_head.forward,"
                                     f"step=5,microbatch=0,element=6,bit=30,unit={pair[-1]}", html_name="replay.html")
    modes = [f.get("failure_mode") for f in (report.get("tests") or [{}])[0].get("replay_failure_modes", [])]
    F.check(code == 1 and modes == ["spike_and_recover"], f"replay drill: exit {code}, modes {modes}: {err[-300:]}")
    if os.path.exists(page):
        self_contained(page, "replay drill")
        m = measured(page, 1280, TRAJECTORY)  # the DOM Chromium built, measured
        figures = m.get("figures", [])
        F.check(figures == [[f"cpu {pair[-1]}", modes[0] if modes else "?", "20"]], f"replay drill: charts {figures}")
        lines = {x["cls"]: x["points"] for x in m.get("paths", [])}
        F.check(lines == {"loss-reference": "20", "loss-unit": "20", "distance": "20"}, f"replay drill: lines {lines}")
        plots = m.get("plots", [])
        inside = lambda b, p: p[0] - 1 <= b[0] < b[2] <= p[2] + 1 and p[1] - 1 <= b[1] <= b[3] <= p[3] + 1
        placed = [(x["cls"], any(inside(x["box"], p) for p in plots)) for x in m.get("paths", [])]
        F.check(len(plots) == 2 and len(placed) == 3 and all(ok for _, ok in placed),
                f"replay drill: lines inside their plots {placed}, plots {plots}")
        png = os.path.join(d, "replay.png")
        chromium(page + ".measure.html", f"--screenshot={png}", "--window-size=720,240")  # the chart alone: quick to decode
        if os.path.exists(png):
            near = lambda px, c: all(abs(a - b) <= 24 for a, b in zip(px, c))  # a 1.5-pixel line is anti-aliased
            counts = {k: sum(near(px, c) for row in png_pixels(png)[2] for px in row) for k, c in TRAJECTORY_RGB.items()}
            F.check(all(n >= 40 for n in counts.values()), f"replay drill: pixels of the lines' colours {counts}")

    # 4. Bad paths: one line on stderr, the right code, nothing written.
    def one_line(name, p, code, word):
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        F.check(p.returncode == code and len(lines) == 1 and lines[0].startswith("sdcscreen: error: --html") and
                word in lines[0], f"{name}: exit {p.returncode}, want {code}; stderr {p.stderr[-300:]!r}")

    missing = os.path.join(d, "no", "such", "dir", "page.html")
    one_line("--html in a missing folder", common.run("run", "--enable", CPU_CASE, "-q", "--html", missing), 78, missing)
    one_line("--html is a folder", common.run("run", "--enable", CPU_CASE, "-q", "--html", d), 78, d)
    pat = os.path.join(d, "patterns")
    shutil.copytree(common.PATTERNS, pat)
    target = os.path.join(pat, "page.html")
    one_line("--html into the pattern directory",
             common.run("run", "--enable", CPU_CASE, "-q", "--patterns", pat, "--html", target), 64, "pattern")
    F.check(not os.path.exists(target), "--html into the pattern directory: written anyway")
    # A page that cannot be written after the run (a valid 245-character name whose temporary name is too long):
    # the error on stderr, the JSON report still written, exit 78; a miscompare still makes it 1.
    for extra, want in (([], 78), (["--inject", drill], 1)):
        out = os.path.join(d, "after.json")
        p = common.run("run", "--enable", CPU_CASE, *extra, "-q", "--output-format", "json", "-o", out, "--html",
                       os.path.join(d, "p" * 240 + ".html"))
        F.check(p.returncode == want and "sdcscreen: error: --html: " in p.stderr and os.path.exists(out),
                f"--html after the run failed ({'drill' if extra else 'clean'}): exit {p.returncode}, want {want}; "
                f"stderr {p.stderr[-300:]!r}")
        if os.path.exists(out):
            os.unlink(out)
    # A screen that dies in its reporting code leaves the in-progress page, not the previous (clean) one.
    page = os.path.join(d, "clean.html")
    p = subprocess.run([common.SDCSCREEN, *common.with_lock(["run", "--enable", CPU_CASE, "-q", "--html", page])],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, SDCSCREEN_DRILL_REPORT_CRASH="1"))
    text = open(page, encoding="utf-8").read() if os.path.exists(page) else ""
    F.check(p.returncode == 2 and 'data-verdict="error"' in text and "screen in progress" in text,
            f"report crash drill: exit {p.returncode}, page says in progress: {'screen in progress' in text}")
F.finish()
