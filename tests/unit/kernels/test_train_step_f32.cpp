// Training-step replay's core (kernels/train_step_f32): the fast path of every op equals the plain
// specification bit for bit, micro-batch accumulation has a fixed order that matters, training lowers the
// loss reproducibly, the observer sees and can replace every submodule output, a drill's flip hits the
// executions it names (once, or every K-th: a rate), and the own sine and cosine
// are accurate over the rotary angles. The backward's derivatives: test_train_step_f32_grad.cpp; the
// family's tiles: test_train_step_f32_family.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/unit/catch.h"
#include "kernels/train_step_f32/train_step_f32_model.h"
#include "src/core/signature.h"
#include "tests/unit/train_step_test.h"

using namespace sdc;
using namespace sdc::train_step_f32;
using namespace train_step_test;

namespace {

// Distance in units in the last place (the reports' measure, signature.h).
uint64_t ulps(float a, float b) { return ulp_distance(float_bits(a), float_bits(b)); }

constexpr Path kPaths[] = {Path::plain, Path::fast};

// Records every output of a step: (submodule, micro-batch, output) -> values, and the call order.
struct Recorder final : Observer {
  std::map<std::tuple<std::string, int, int>, Vec> outputs;
  std::vector<std::tuple<int, int, int>> calls;  // submodule index, micro-batch, output
  void output(const Submodule& s, const Site& at, std::span<float> out) override {
    outputs[{s.name, at.microbatch, at.output}] = Vec(out.begin(), out.end());
    calls.emplace_back(s.index, at.microbatch, at.output);
  }
};

// Computation sync: compares every output with a golden run's and substitutes the golden one.
struct Sync final : Observer {
  const Recorder& golden;
  std::vector<std::string> mismatches;
  explicit Sync(const Recorder& g) : golden(g) {}
  void output(const Submodule& s, const Site& at, std::span<float> out) override {
    const Vec& want = golden.outputs.at({s.name, at.microbatch, at.output});
    if (std::memcmp(want.data(), out.data(), want.size() * sizeof(float)) != 0) {
      mismatches.push_back(s.name + "#" + std::to_string(at.output));
      std::copy(want.begin(), want.end(), out.begin());
    }
  }
};

}  // namespace

TEST_CASE("train_step_f32: every op's fast path equals the plain specification bit for bit", "[replay]") {
  const Config c = tiny_config();
  const int64_t t = c.tokens() * 2, d = c.dim, f = c.ffn, hd = c.head_dim(), vocab = c.vocab;
  train_step_f32::Workspace ws;
  auto both = [&](auto run) {
    const Vec a = run(Path::plain), b = run(Path::fast);
    CHECK(same_bits(a, b));
  };
  const Vec x = random_vec(t * d, 1), w = random_vec(d * f, 2, 0.125f), dy = random_vec(t * f, 3);
  SECTION("matmul forward and backward, also with ragged sizes") {
    for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{t, d, f}, {37, 70, 45}, {1, 3, 130}}) {
      const Vec xm = random_vec(m * k, 4), wm = random_vec(k * n, 5), dym = random_vec(m * n, 6);
      both([&](Path p) {
        Vec y(m * n);
        ops::matmul(p, xm.data(), wm.data(), m, k, n, y.data(), ws);
        return y;
      });
      both([&](Path p) {
        Vec y(m * k);
        ops::matmul_dx(p, dym.data(), wm.data(), m, k, n, y.data(), ws);
        return y;
      });
      both([&](Path p) {
        Vec y(k * n);
        ops::matmul_dw(p, xm.data(), dym.data(), m, k, n, y.data(), ws);
        return y;
      });
    }
  }
  SECTION("rmsnorm") {
    const Vec nw = random_vec(d, 7), dyn = random_vec(t * d, 8);
    both([&](Path p) {
      Vec y(t * d + t);
      ops::rmsnorm(p, x.data(), nw.data(), t, d, y.data(), y.data() + t * d, ws);
      return y;
    });
    Vec inv(t), tmp(t * d);
    ops::rmsnorm(Path::plain, x.data(), nw.data(), t, d, tmp.data(), inv.data(), ws);
    both([&](Path p) {
      Vec y(t * d + d);
      ops::rmsnorm_back(p, x.data(), nw.data(), inv.data(), dyn.data(), t, d, y.data(), y.data() + t * d, ws);
      return y;
    });
  }
  SECTION("rope") {
    const RopeTables tab = rope_tables(c.seq, hd);
    both([&](Path p) {
      Vec y(t * d);
      ops::rope(p, x.data(), t, c.heads, tab, y.data(), ws);
      return y;
    });
    both([&](Path p) {
      Vec y(t * d);
      ops::rope_back(p, x.data(), t, c.heads, tab, y.data(), ws);
      return y;
    });
  }
  SECTION("attention") {
    const Vec q = random_vec(t * d, 9, 2.0f), k = random_vec(t * d, 10, 2.0f), v = random_vec(t * d, 11);
    const Vec d_o = random_vec(t * d, 12);
    const int64_t seqs = t / c.seq;
    both([&](Path p) {
      Vec o(t * d);
      ops::attention(p, q.data(), k.data(), v.data(), seqs, c.seq, c.heads, hd, o.data(), ws);
      return o;
    });
    both([&](Path p) {
      Vec g(3 * t * d);
      ops::attention_back(p, q.data(), k.data(), v.data(), d_o.data(), seqs, c.seq, c.heads, hd, g.data(),
                          g.data() + t * d, g.data() + 2 * t * d, ws);
      return g;
    });
  }
  SECTION("swiglu, including saturated gates") {
    Vec g = random_vec(t * f, 13, 8.0f);
    g[0] = -100.0f;
    g[1] = 100.0f;
    g[2] = -0.0f;
    const Vec u = random_vec(t * f, 14);
    both([&](Path p) {
      Vec z(t * f);
      ops::swiglu(p, g.data(), u.data(), t * f, z.data(), ws);
      return z;
    });
    both([&](Path p) {
      Vec r(2 * t * f);
      ops::swiglu_back(p, g.data(), u.data(), dy.data(), t * f, r.data(), r.data() + t * f, ws);
      return r;
    });
  }
  SECTION("cross-entropy, embedding, add, sum") {
    const Vec logits = random_vec(t * vocab, 15, 4.0f);
    std::vector<int32_t> tg(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) tg[i] = static_cast<int32_t>(element_hash(3, i) % (i % 5 == 0 ? 3 : vocab));
    both([&](Path p) {
      Vec l(t);
      ops::cross_entropy(p, logits.data(), tg.data(), t, vocab, l.data(), ws);
      return l;
    });
    both([&](Path p) {
      Vec g(t * vocab);
      ops::cross_entropy_back(p, logits.data(), tg.data(), t, vocab, pow2f(-7), g.data(), ws);
      return g;
    });
    const Vec table = random_vec(vocab * d, 16);
    both([&](Path p) {
      Vec y(t * d);
      ops::embedding(p, table.data(), tg.data(), t, d, y.data(), ws);
      return y;
    });
    both([&](Path p) {
      Vec y(vocab * d);
      ops::embedding_back(p, x.data(), tg.data(), t, vocab, d, y.data(), ws);  // repeated tokens
      return y;
    });
    both([&](Path p) {
      Vec y(t * d);
      ops::add(p, x.data(), table.data(), t * d, y.data(), ws);
      return y;
    });
    for (int64_t n : {int64_t{1}, int64_t{7}, t * d - 3})
      both([&](Path p) { return Vec{ops::sum(p, x.data(), n, ws)}; });
  }
  SECTION("optimizers") {
    const int64_t n = 1000;
    const Vec g = random_vec(n, 17, 0.01f);
    for (int64_t step : {0, 5}) {
      const OptScalars s = opt_scalars(1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, step + 1);
      for (int kind = 0; kind < 2; ++kind)
        both([&](Path p) {
          Vec w = random_vec(n, 18), m = random_vec(n, 19, 0.01f), v = random_vec(n, 20, 0.0001f);
          for (float& e : v) e = std::fabs(e);
          if (kind == 0)
            ops::adamw(p, w.data(), g.data(), m.data(), v.data(), n, s, ws);
          else
            ops::lamb(p, w.data(), g.data(), m.data(), v.data(), n, s, ws);
          w.insert(w.end(), m.begin(), m.end());
          w.insert(w.end(), v.begin(), v.end());
          return w;
        });
    }
  }
}

TEST_CASE("train_step_f32: a whole tiny step, fast equals plain in every output, gradient and parameter", "[replay]") {
  Config two_per_micro = tiny_config();
  two_per_micro.micro = 2;  // two sequences per micro-batch: attention per sequence, positions t mod S
  for (const Config& c : {tiny_config(), two_per_micro})
    for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb}) {
      Optimizer o;
      o.kind = kind;
      o.lr = 1e-2f;
      TensorSet params[2];
      OptState st[2];
      Recorder rec[2];
      float loss[2][2];
      for (int i = 0; i < 2; ++i) {
        Options opts;
        opts.path = kPaths[i];
        params[i] = init_params(c, 5);
        st[i] = init_opt_state(c);
        for (int step = 0; step < 2; ++step) loss[i][step] = train_step(c, params[i], st[i], step, 5, o, &rec[i], opts);
      }
      CHECK(float_bits(loss[0][0]) == float_bits(loss[1][0]));
      CHECK(float_bits(loss[0][1]) == float_bits(loss[1][1]));
      CHECK(same_bits(params[0], params[1]));
      CHECK(same_bits(st[0].grads, st[1].grads));
      CHECK(same_bits(st[0].m, st[1].m));
      CHECK(same_bits(st[0].v, st[1].v));
      REQUIRE(rec[0].outputs.size() == rec[1].outputs.size());
      for (const auto& [key, values] : rec[0].outputs) {
        INFO(std::get<0>(key) << " micro-batch " << std::get<1>(key) << " output " << std::get<2>(key));
        CHECK(same_bits(values, rec[1].outputs.at(key)));
      }
    }
}

TEST_CASE("train_step_f32: micro-batch gradients are accumulated in the specified order, and order matters",
          "[replay]") {
  const Config c = tiny_config();
  REQUIRE(c.micro_batches() >= 3);  // two terms commute; three or more need not associate
  const TensorSet params = init_params(c, 21);
  std::vector<TensorSet> g(static_cast<size_t>(c.micro_batches()));
  for (int mb = 0; mb < c.micro_batches(); ++mb) microbatch_gradients(c, params, 0, 21, mb, g[mb]);
  auto fold = [&](bool reversed) {
    TensorSet acc = g[reversed ? g.size() - 1 : 0];
    for (size_t i = 1; i < g.size(); ++i) {
      const TensorSet& next = g[reversed ? g.size() - 1 - i : i];
      for (size_t tn = 0; tn < acc.tensors.size(); ++tn)
        for (size_t e = 0; e < acc.tensors[tn].data.size(); ++e)
          acc.tensors[tn].data[e] = acc.tensors[tn].data[e] + next.tensors[tn].data[e];
    }
    return acc;
  };
  const TensorSet forward = fold(false), reversed = fold(true);
  Optimizer o;
  OptState st[2] = {init_opt_state(c), init_opt_state(c)};
  TensorSet p[2] = {params, params};
  for (int run = 0; run < 2; ++run) train_step(c, p[run], st[run], 0, 21, o);
  CHECK(same_bits(st[0].grads, forward));  // train_step's accumulation is the left fold from micro-batch 0
  CHECK(same_bits(st[0].grads, st[1].grads));
  CHECK(same_bits(p[0], p[1]));
  int64_t differing = 0;
  for (size_t tn = 0; tn < forward.tensors.size(); ++tn)
    for (size_t e = 0; e < forward.tensors[tn].data.size(); ++e)
      differing += float_bits(forward.tensors[tn].data[e]) != float_bits(reversed.tensors[tn].data[e]);
  INFO("elements whose bits depend on the order: " << differing);
  CHECK(differing > 0);
}

TEST_CASE("train_step_f32: tiny training lowers the loss with AdamW and LAMB, reproducibly", "[replay]") {
  const Config c = tiny_config();
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb}) {
    Optimizer o;
    o.kind = kind;
    o.lr = 1e-2f;
    TensorSet p1, p2;
    const std::vector<float> l1 = train(c, 20, 77, o, nullptr, {}, &p1);
    const std::vector<float> l2 = train(c, 20, 77, o, nullptr, {}, &p2);
    REQUIRE(l1.size() == 20);
    CHECK(same_bits(l1, l2));
    CHECK(same_bits(p1, p2));
    float first = 0, last = 0;
    for (int i = 0; i < 5; ++i) first += l1[i], last += l1[15 + i];
    INFO((kind == OptimizerKind::adamw ? "adamw" : "lamb")
         << ": first five " << first / 5 << ", last five " << last / 5);
    CHECK(last / 5 < first / 5 - (kind == OptimizerKind::adamw ? 1.0f : 0.3f));
    CHECK(l1[19] < l1[0]);
  }
}

TEST_CASE("train_step_f32: submodules are unique, reported in execution order, and observable", "[replay]") {
  const Config c = tiny_config();
  const std::vector<Submodule> subs = submodules(c);
  std::set<std::string> names;
  for (size_t i = 0; i < subs.size(); ++i) {
    CHECK(subs[i].index == static_cast<int>(i));
    CHECK(names.insert(subs[i].name).second);
  }
  CHECK(names.count("layer1.attn.wo.forward"));
  CHECK(names.count("layer0.mlp.down.backward"));
  CHECK(names.count("lm_head.backward"));
  CHECK(names.count("loss.forward"));
  Optimizer o;
  TensorSet params = init_params(c, 3);
  OptState st = init_opt_state(c);
  Recorder clean;
  train_step(c, params, st, 0, 3, o, &clean);
  const TensorSet clean_grads = st.grads, clean_params = params;

  SECTION("every submodule reports every output, in execution order") {
    // Calls go micro-batch by micro-batch; within one, submodule indices rise and a submodule's outputs
    // come in their order. Every (submodule, output) appears: forward and backward in every micro-batch,
    // accumulation from micro-batch 1 on, loss and optimizer once.
    // Order key: (micro-batch, with the step-level passes last; submodule index; output index).
    std::tuple<int64_t, int, int> prev{-1, 0, 0};
    std::set<std::tuple<int, int, int>> seen;
    for (const auto& call : clean.calls) {
      const auto [idx, mb, out] = call;
      const std::tuple<int64_t, int, int> key{mb < 0 ? c.micro_batches() : mb, idx, out};
      CHECK(key > prev);
      const Submodule& s = subs[static_cast<size_t>(idx)];
      CHECK((mb < 0) == (s.pass == Pass::loss || s.pass == Pass::optimizer));
      CHECK(out < static_cast<int>(s.outputs.size()));
      seen.insert(call);
      prev = key;
    }
    size_t expected = 0;
    for (const Submodule& s : subs) {
      const size_t runs = s.pass == Pass::forward || s.pass == Pass::backward ? c.micro_batches()
                          : s.pass == Pass::accumulate                        ? c.micro_batches() - 1
                                                                              : 1;
      expected += runs * s.outputs.size();
    }
    CHECK(seen.size() == expected);
    CHECK(std::get<0>(clean.calls.back()) == static_cast<int>(subs.size()) - 1);
  }

  SECTION("substituting an output changes what follows; substituting the golden one restores everything") {
    struct Zero final : Observer {
      void output(const Submodule& s, const Site& at, std::span<float> out) override {
        if (s.name == "layer1.attn.wo.forward" && at.microbatch == 1) std::fill(out.begin(), out.end(), 0.0f);
      }
    } zero;
    TensorSet p2 = init_params(c, 3);
    OptState s2 = init_opt_state(c);
    train_step(c, p2, s2, 0, 3, o, &zero);
    CHECK_FALSE(same_bits(s2.grads["layer1.mlp.down"].data, clean_grads["layer1.mlp.down"].data));
    CHECK(same_bits(s2.grads["lm_head"].data, clean_grads["lm_head"].data) == false);

    // A bit flip in the middle of the backward, caught and replaced by computation sync: the step ends
    // exactly as the clean one and exactly one output was found wrong.
    Sync sync(clean);
    BitFlipInjector inject({"layer0.attn.core.backward", 1, 0, 2, 17, 1u << 20}, &sync);
    TensorSet p3 = init_params(c, 3);
    OptState s3 = init_opt_state(c);
    train_step(c, p3, s3, 0, 3, o, &inject);
    CHECK(inject.fired());
    REQUIRE(sync.mismatches.size() == 1);
    CHECK(sync.mismatches[0] == "layer0.attn.core.backward#1");
    CHECK(same_bits(s3.grads, clean_grads));
    CHECK(same_bits(p3, clean_params));
  }

  SECTION("a bit flip in layer0.mlp.down.backward reaches layer 0 and the embedding, not what came before") {
    // Token 5, not 0: position 0 attends only to itself, so its query and key get no gradient at all.
    BitFlipInjector inject({"layer0.mlp.down.backward", 0, 0, 0, 5 * c.ffn + 7, 1u << 22});
    TensorSet p2 = init_params(c, 3);
    OptState s2 = init_opt_state(c);
    train_step(c, p2, s2, 0, 3, o, &inject);
    REQUIRE(inject.fired());
    for (const Tensor& g : s2.grads.tensors) {
      const bool before = g.name == "lm_head" || g.name == "final_norm" || g.name.rfind("layer1.", 0) == 0 ||
                          g.name == "layer0.mlp.down";  // its dw does not depend on its dx
      INFO(g.name);
      CHECK(same_bits(g.data, clean_grads[g.name].data) == before);
    }
  }
}

TEST_CASE("train_step_f32: a flip at a rate hits every K-th execution of its output, over micro-batches and steps",
          "[replay]") {
  const Config c = tiny_config();  // 4 micro-batches a step
  REQUIRE(c.micro_batches() == 4);
  const Optimizer o;
  using Where = std::tuple<int64_t, std::string, int, int>;  // step, submodule, micro-batch, output
  struct Golden final : Observer {
    std::map<Where, Vec> outputs;
    void output(const Submodule& s, const Site& at, std::span<float> out) override {
      outputs[{at.step, s.name, at.microbatch, at.output}] = Vec(out.begin(), out.end());
    }
  } golden;
  train(c, 2, 3, o, &golden);
  // Computation sync over both steps: every output that differs from the healthy run's is listed and replaced by
  // it, so the run stays the healthy one and the list holds exactly the outputs the flip hit.
  struct StepSync final : Observer {
    const Golden& golden;
    std::vector<std::pair<int64_t, int>> hit;  // (step, micro-batch)
    explicit StepSync(const Golden& g) : golden(g) {}
    void output(const Submodule& s, const Site& at, std::span<float> out) override {
      const Vec& want = golden.outputs.at({at.step, s.name, at.microbatch, at.output});
      if (std::memcmp(want.data(), out.data(), want.size() * sizeof(float)) == 0) return;
      hit.emplace_back(at.step, at.microbatch);
      std::copy(want.begin(), want.end(), out.begin());
    }
  };
  auto hits = [&](const std::string& sub, int output, int64_t rate, int64_t step = 0, int mb = 0) {
    StepSync sync(golden);
    BitFlipInjector inject({sub, output, step, mb, 17, 1u << 20, 1, 1, rate}, &sync);
    train(c, 2, 3, o, &inject);
    CHECK(inject.flips() == static_cast<int64_t>(sync.hit.size()));
    CHECK(inject.fired() == !sync.hit.empty());
    return sync.hit;
  };
  using Hits = std::vector<std::pair<int64_t, int>>;
  // Without a rate: the one execution named.
  CHECK(hits("layer1.attn.wo.forward", 0, 0, 1, 2) == Hits{{1, 2}});
  // rate=2: executions 0, 2, 4, 6 of the output's 8 (4 micro-batches of 2 steps); 3: 0, 3, 6; 1: every one.
  CHECK(hits("layer1.attn.wo.forward", 0, 2) == Hits{{0, 0}, {0, 2}, {1, 0}, {1, 2}});
  CHECK(hits("layer1.attn.wo.forward", 0, 3) == Hits{{0, 0}, {0, 3}, {1, 2}});
  CHECK(hits("layer1.attn.wo.forward", 0, 1) == Hits{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}, {1, 2}, {1, 3}});
  CHECK(hits("layer1.attn.wo.forward", 0, 8) == Hits{{0, 0}});
  // Only the named output counts: lm_head.backward's dw (output 1), not its dx.
  CHECK(hits("lm_head.backward", 1, 2) == Hits{{0, 0}, {0, 2}, {1, 0}, {1, 2}});
  // Accumulation runs from micro-batch 1 on (3 a step); the optimizer once a step.
  CHECK(hits("layer0.mlp.down.accumulate", 0, 2) == Hits{{0, 1}, {0, 3}, {1, 2}});
  CHECK(hits("embed.optimizer", 2, 1) == Hits{{0, -1}, {1, -1}});
}

TEST_CASE("train_step_f32: own sine and cosine are within a few ulps over the rotary angles", "[replay]") {
  uint64_t worst_sin = 0, worst_cos = 0;
  double worst_abs = 0;
  auto check = [&](float a) {
    const float s = sdc_sinf(a), co = sdc_cosf(a);
    const double ds = std::sin(static_cast<double>(a)), dc = std::cos(static_cast<double>(a));
    worst_sin = std::max(worst_sin, ulps(s, static_cast<float>(ds)));
    worst_cos = std::max(worst_cos, ulps(co, static_cast<float>(dc)));
    worst_abs = std::max({worst_abs, std::fabs(s - ds), std::fabs(co - dc)});
  };
  // Every angle the presets can use (positions below 8192, head dims 32..128), then a dense sweep.
  const float log_theta = sdc_logf(ROPE_THETA);
  for (int64_t hd : {16, 32, 64, 128})
    for (int64_t i = 0; i < hd / 2; ++i) {
      const float f = rope_inv_freq(i, hd, log_theta);
      for (int64_t p = 0; p < 8192; ++p) check(rope_angle(p, f));
    }
  for (float a = -8192.0f; a <= 8192.0f; a += 0.0137f) check(a);
  for (float a = 1e-30f; a < 1.0f; a *= 1.37f) check(a), check(-a);
  INFO("max ulps: sin " << worst_sin << ", cos " << worst_cos << "; max absolute error " << worst_abs);
  CHECK(worst_sin <= 3);  // measured: 2
  CHECK(worst_cos <= 3);  // measured: 2
  CHECK(worst_abs < 1.2e-7);
  CHECK(float_bits(sdc_sinf(0.0f)) == float_bits(0.0f));
  CHECK(sdc_cosf(0.0f) == 1.0f);
}
