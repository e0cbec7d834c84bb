"""The fault-injection drill's model of the tool, in Python and independent of it (test_injection.py): the
counter-based generator (src/spec/generator.h, src/spec/f64.h), the CPU executor's schedule
(src/backends/cpu/cpu_executor.cpp) and each boot family's output geometry and input dependencies (the kernels'
specification headers).
"""

M64 = (1 << 64) - 1


# ---- the generator (src/spec/generator.h), uniform distribution -------------------------------------------------

def mix64(z):
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def tensor_key(seed, tensor):
    return mix64(mix64(seed) ^ ((0x9E3779B97F4A7C15 * (tensor + 1)) & M64))


def element_hash(key, index):
    return mix64(key ^ mix64(index))


def uniform_value(seed, tensor, index):
    h = element_hash(tensor_key(seed, tensor), index)
    return ((h >> 40) - (1 << 23)) * 2.0 ** -23  # exact in a Python float


def uniform_word_i8(seed, tensor, index):
    """gemm_i8's uniform input word (kernels/gemm_i8/gemm_i8.h input_word): the hash's high 32 bits, four int8
    values, the lowest k in the low byte."""
    return element_hash(tensor_key(seed, tensor), index) >> 32


def int8_of(word, byte):
    v = (word >> (8 * byte)) & 0xFF
    return v - 256 if v >= 128 else v


def uniform_value_f64(seed, tensor, index):
    """The fp64 generator's uniform value of element index (src/spec/f64.h): multiples of 2^-53 in [-1, 1)."""
    h = element_hash(tensor_key(seed, tensor), index)
    return ((h >> 10) - (1 << 53)) * 2.0 ** -53  # exact in a Python float


def attention_bf16_q_exponent(seed, s, d, el):
    """Unbiased exponent of Q element el of an attention_bf16_exactint case: the head's block exponent
    (kernels/exactint/exactint.h block_exp over Q's window [-56, 56]) plus a pick among q_count exponents,
    q_count from the exponent budget of K = dim with bf16's p = 8 and W = 24."""
    worst = d * 255
    ds = 0
    while (worst << (ds + 1)) < (1 << 24):
        ds += 1
    q_count = ds - ds // 2 + 1
    head = el // (s * d)
    qb = -56 + element_hash(tensor_key(seed, 3), 3 * head) % (56 - (-56) - (q_count - 1) + 1)
    return qb + (element_hash(tensor_key(seed, 0), el) >> 32) % q_count


# ---- the schedule model (src/backends/cpu/cpu_executor.cpp) ---------------------------------------------------------------------

def string_hash(s):
    h = 0
    for ch in s.encode():
        h = mix64(h ^ ch)
    return h


def worker_of(case_id, seed, tile, iteration, workers):
    rotation = (mix64(seed ^ string_hash(case_id)) + iteration) & M64
    return ((tile + rotation) & M64) % workers


# ---- geometry and dependencies, from the kernels' spec headers --------------------------------------------------

class Geometry:
    """Output layout and tiles of one case, and the outputs that depend on one input element."""

    def __init__(self, case):
        self.case = case
        self.id = case["id"]
        self.family = case["family"]
        self.seed = case["seed"]
        s = case["shape"]
        f = self.family
        if f == "gemm_f32":
            self.m, self.n, self.k = s["m"], s["n"], s["k"]
            self.outputs = self.m * self.n
            self.tiles = (self.m // 64) * (self.n // 64)
            self.tensors = {"a": (0, self.m * self.k), "b": (1, self.k * self.n)}
        elif f == "gemm_f64":  # gemm_f32's layout counted in 32-bit words, two per value (src/spec/f64.h)
            self.m, self.n, self.k = s["m"], s["n"], s["k"]
            self.outputs = 2 * self.m * self.n
            self.tiles = (self.m // 64) * (self.n // 64)
            self.tensors = {"a": (0, 2 * self.m * self.k), "b": (1, 2 * self.k * self.n)}
        elif is_exactint(f):  # A is M x K, B is N x K (both K-contiguous), C as gemm_f32's
            self.m, self.n, self.k = s["m"], s["n"], s["k"]
            self.outputs = self.m * self.n
            self.tiles = (self.m // 64) * (self.n // 64)
            self.tensors = {"a": (0, self.m * self.k), "b": (1, self.n * self.k)}
        elif f == "gemm_i8":  # a: M x K/4 words, b: K/4 x N words, 4 int8 per word along k; C as gemm_f32's
            self.m, self.n, self.k = s["m"], s["n"], s["k"]
            self.kq = self.k // 4
            self.outputs = self.m * self.n
            self.tiles = (self.m // 64) * (self.n // 64)
            self.tensors = {"a": (0, self.m * self.kq), "b": (1, self.kq * self.n)}
        elif is_attention(f):  # tiles of 32 (fp32) or 64 (bf16 tensor cores) query rows of one head
            self.h, self.s, self.d, self.causal = s["heads"], s["seq"], s["dim"], s["causal"] != 0
            self.rows = 32 if f == "attention_f32" else 64
            self.outputs = self.h * self.s * self.d
            self.tiles = self.h * (self.s // self.rows)
            n = self.h * self.s * self.d
            self.tensors = {"q": (0, n), "k": (1, n), "v": (2, n)}
        elif f in ("softmax_f32", "rmsnorm_f32"):
            self.rows, self.cols = s["rows"], s["cols"]
            self.outputs = self.rows * self.cols
            self.tiles = self.rows // 4
            self.tensors = {"x": (0, self.rows * self.cols)}
            if f == "rmsnorm_f32":
                self.tensors["w"] = (1, self.cols)
        elif f == "rmsnorm_f64":  # rmsnorm_f32's in words, two per value (src/spec/f64.h)
            self.rows, self.cols = s["rows"], s["cols"]
            self.outputs = 2 * self.rows * self.cols
            self.tiles = self.rows // 4
            self.tensors = {"x": (0, 2 * self.rows * self.cols), "w": (1, 2 * self.cols)}
        elif f == "reduce_sum_f32":
            self.rows, self.cols = s["rows"], s["cols"]
            self.outputs = self.rows
            self.tiles = self.rows // 16
            self.tensors = {"x": (0, self.rows * self.cols)}
        elif f == "reduce_sum_f64":  # reduce_sum_f32's in words, two per value (src/spec/f64.h)
            self.rows, self.cols = s["rows"], s["cols"]
            self.outputs = 2 * self.rows
            self.tiles = self.rows // 16
            self.tensors = {"x": (0, 2 * self.rows * self.cols)}
        elif f in ("convert_f32", "elementwise_f32"):  # 8 words per element, tiles of 512 elements
            self.n = s["n"]
            self.outputs = 8 * self.n
            self.tiles = self.n // 512
            self.tensors = {"x": (0, self.n)}
        elif f == "cross_entropy_f32":
            self.tokens, self.vocab = s["tokens"], s["vocab"]
            self.outputs = self.tokens + self.tokens // 16
            self.tiles = self.tokens // 16
            self.tensors = {"logits": (0, self.tokens * self.vocab)}
        elif f == "memtest_u32":  # a record of 16 words per slice, no inputs (kernels/memtest_u32/memtest_u32.h)
            self.outputs = 16 * s["slices"]
            self.tiles = s["slices"]
            self.tensors = {}
        else:
            raise ValueError(f"unknown family {f}")

    def tile_of(self, e):
        """The tile holding logical output element e."""
        f = self.family
        if f == "gemm_f64":
            e //= 2  # the value of the word
        if f in ("gemm_f32", "gemm_f64", "gemm_i8") or is_exactint(f):
            i, j = divmod(e, self.n)
            return (i // 64) * (self.n // 64) + j // 64
        if is_attention(f):
            hi = e // self.d  # h * seq + i
            h, i = divmod(hi, self.s)
            return h * (self.s // self.rows) + i // self.rows
        if f in ("softmax_f32", "rmsnorm_f32"):
            return (e // self.cols) // 4
        if f == "rmsnorm_f64":
            return (e // 2 // self.cols) // 4
        if f == "reduce_sum_f32":
            return e // 16
        if f == "reduce_sum_f64":
            return e // 32
        if f in ("convert_f32", "elementwise_f32"):
            return e // (8 * 512)
        if f == "memtest_u32":
            return e // 16
        if e < self.tokens:  # cross_entropy: loss[t]
            return e // 16
        return e - self.tokens  # partial[p] is in tile p

    def dependents(self, tensor, el):
        """(predicate on a logical output element, set of tiles): the outputs that depend on input element el."""
        f = self.family
        if f == "gemm_f32":
            if tensor == "a":
                i = el // self.k
                return (lambda e: e // self.n == i), {(i // 64) * (self.n // 64) + jb for jb in range(self.n // 64)}
            j = el % self.n
            return (lambda e: e % self.n == j), {ib * (self.n // 64) + j // 64 for ib in range(self.m // 64)}
        if f == "gemm_f64":  # as gemm_f32's, by the values of the words
            v = el // 2
            if tensor == "a":
                i = v // self.k
                return (lambda e: e // 2 // self.n == i), {(i // 64) * (self.n // 64) + jb for jb in range(self.n // 64)}
            j = v % self.n
            return (lambda e: e // 2 % self.n == j), {ib * (self.n // 64) + j // 64 for ib in range(self.m // 64)}
        if is_exactint(f):  # a[i][k] feeds row i of C, b[j][k] column j
            if tensor == "a":
                i = el // self.k
                return (lambda e: e // self.n == i), {(i // 64) * (self.n // 64) + jb for jb in range(self.n // 64)}
            j = el // self.k
            return (lambda e: e % self.n == j), {ib * (self.n // 64) + j // 64 for ib in range(self.m // 64)}
        if f == "gemm_i8":  # word (i, q) of a feeds row i of C, word (q, j) of b column j
            if tensor == "a":
                i = el // self.kq
                return (lambda e: e // self.n == i), {(i // 64) * (self.n // 64) + jb for jb in range(self.n // 64)}
            j = el % self.n
            return (lambda e: e % self.n == j), {ib * (self.n // 64) + j // 64 for ib in range(self.m // 64)}
        if is_attention(f):
            hi = el // self.d
            h, i = divmod(hi, self.s)
            per_head = self.s // self.rows
            if tensor == "q":
                return (lambda e: e // self.d == hi), {h * per_head + i // self.rows}
            j = i  # k[h][j][:] and v[h][j][:] feed O[h][i][:] for i >= j (causal) or every i of head h
            if self.causal:
                return ((lambda e: e // self.d // self.s == h and e // self.d % self.s >= j),
                        {h * per_head + ib for ib in range(j // self.rows, per_head)})
            return (lambda e: e // self.d // self.s == h), {h * per_head + ib for ib in range(per_head)}
        if f in ("softmax_f32", "rmsnorm_f32"):
            if tensor == "w":
                j = el
                return (lambda e: e % self.cols == j), set(range(self.tiles))
            r = el // self.cols
            return (lambda e: e // self.cols == r), {r // 4}
        if f == "rmsnorm_f64":  # as rmsnorm_f32's, by the values of the words
            v = el // 2
            if tensor == "w":
                return (lambda e: e // 2 % self.cols == v), set(range(self.tiles))
            r = v // self.cols
            return (lambda e: e // 2 // self.cols == r), {r // 4}
        if f == "reduce_sum_f32":
            r = el // self.cols
            return (lambda e: e == r), {r // 16}
        if f == "reduce_sum_f64":
            r = el // 2 // self.cols
            return (lambda e: e // 2 == r), {r // 16}
        if f in ("convert_f32", "elementwise_f32"):  # x[i] feeds exactly words 8 i .. 8 i + 7
            return (lambda e: e // 8 == el), {el // 512}
        t = el // self.vocab  # cross_entropy
        return (lambda e: e == t or e == self.tokens + t // 16), {t // 16}

    def i8_changed(self, tensor, el, mask):
        """gemm_i8, uniform inputs: the logical outputs a flip of mask in input word el changes. Integer sums are
        exact, so C[i][j] changes exactly when some flipped byte's change d (nonzero) meets a nonzero partner:
        by sum of d_b * partner_b != 0 over the word's bytes."""
        tid, _ = self.tensors[tensor]
        w = uniform_word_i8(self.seed, tid, el)
        delta = [int8_of(w ^ mask, b) - int8_of(w, b) for b in range(4)]
        out = set()
        if tensor == "a":
            i, q = divmod(el, self.kq)
            for j in range(self.n):
                p = uniform_word_i8(self.seed, 1, q * self.n + j)
                if sum(delta[b] * int8_of(p, b) for b in range(4)) != 0:
                    out.add(i * self.n + j)
        else:
            q, j = divmod(el, self.n)
            for i in range(self.m):
                p = uniform_word_i8(self.seed, 0, i * self.kq + q)
                if sum(delta[b] * int8_of(p, b) for b in range(4)) != 0:
                    out.add(i * self.n + j)
        return out

    def effective_tiles(self, tensor, el, mask=None):
        """Tiles in which the fault provably changes an output (a subset of the dependency tiles)."""
        if self.family == "gemm_i8" and mask is not None:
            return {self.tile_of(e) for e in self.i8_changed(tensor, el, mask)}
        _, tiles = self.dependents(tensor, el)
        if self.family == "attention_f32" and self.causal and tensor in ("k", "v"):
            j = (el // self.d) % self.s
            first_row = max(j, 1) if tensor == "k" else j  # query 0 has a single key: its scores do not matter
            h = (el // self.d) // self.s
            per_head = self.s // 32
            return {h * per_head + ib for ib in range(first_row // 32, per_head)}
        return tiles


def visible_input_flip(g, tensor, el, mask):
    """Whether flipping mask in input element el of a uniform-distribution case provably changes an output.
    Sign flips need a value far from zero (so that the flip is not absorbed by rounding); bit 30 turns any
    uniform value (|x| < 1, exponent field <= 126) into one of 2 or more (x * 2^128, or 2 for a zero)."""
    if is_exactint(g.family):
        # No input of these patterns is zero and every sum is exact (kernels/exactint/exactint.h): a sign
        # flip moves its outputs by 2|a*b| >= 2 lsb of the tile; bit 30 scales the element by 2^+-128, out
        # of the pattern's bound, and the reference's double rule then gives inf, NaN or a sum that lacks
        # a*b. Every flip drawn here shows in every output that reads the element.
        return True
    if g.family == "gemm_i8":  # exact integer sums: visible exactly when some output's sum changes
        return bool(g.i8_changed(tensor, el, mask))
    tid, _ = g.tensors[tensor]
    if is_f64(g.family):
        # Only high words are drawn (the sign, the exponent's top bits): bit 30 scales the value by 2^1024 (a
        # zero becomes 2), out of any sum's reach; a sign flip as for fp32 below.
        if el % 2 == 0:
            return False
        x = uniform_value_f64(g.seed, tid, el // 2)
    else:
        x = uniform_value(g.seed, tid, el)
    if mask & 0x40000000:
        return True
    if g.family == "attention_f32" and g.causal and tensor == "q" and (el // g.d) % g.s < 8:
        return False  # query i sees i+1 keys; row 0 ignores q entirely, and few keys make the effect fragile
    threshold = 0.25 if g.family == "cross_entropy_f32" else 1.0 / 16
    if abs(x) < threshold:
        return False
    if g.family == "rmsnorm_f32":  # y = (x * inv) * w: a zero factor hides the sign of the other
        if tensor == "x" and uniform_value(g.seed, 1, el % g.cols) == 0.0:
            return False
        if tensor == "w" and any(uniform_value(g.seed, 0, r * g.cols + el) == 0.0 for r in range(g.rows)):
            return False
    if g.family == "rmsnorm_f64":  # the same, by values
        v = el // 2
        if tensor == "x" and uniform_value_f64(g.seed, 1, v % g.cols) == 0.0:
            return False
        if tensor == "w" and any(uniform_value_f64(g.seed, 0, r * g.cols + v) == 0.0 for r in range(g.rows)):
            return False
    return True


def is_exactint(family):
    """The exact-integer GEMMs (kernels/exactint)."""
    return family.startswith("gemm_") and family.endswith("_exactint")


def is_f64(family):
    """The binary64 families: two 32-bit words per value, low half first (src/spec/f64.h)."""
    return family in ("gemm_f64", "reduce_sum_f64", "rmsnorm_f64")


def is_attention(family):
    return family in ("attention_f32", "attention_bf16_exactint")


def ulp_distance(a, b):
    def ordv(u):
        return -(u & 0x7FFFFFFF) if u & 0x80000000 else u
    return abs(ordv(a) - ordv(b))
