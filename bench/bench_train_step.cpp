// Benchmark: one training step of the replay (kernels/train_step_f32: forward, backward, gradient
// accumulation over the micro-batches, the optimizer) as the screen computes it, exact, on one thread,
// against the same step with its matmuls (every projection, the LM head, and both backward matmuls of each)
// done by single-threaded OpenBLAS cblas_sgemm, in one process. The other operations (norms, rotary
// embedding, attention, SwiGLU, cross-entropy, the optimizer) are the replay's own in both, so the ratio is
// what exactness costs where a training step spends its time.
//
// Usage: bench_train_step [--reps N] [--presets tiny,small] [--keep-coretype] [--perturb-dw]
// (--perturb-dw: the self-check of the agreement test, the dW stand-in 1% off, which must exit 2)
// The two steps must agree on the loss and on the accumulated gradients (relative differences below 1e-3: the
// loss alone would not see a wrong backward matmul), or the benchmark exits 2: a wrong stand-in cannot produce
// a flattering ratio. Rows: tiny and small with AdamW, small with LAMB (its trust ratio's norms are the
// optimizer's own reductions). Timings alternate between the two; medians are reported.
#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/openblas_util.h"
#include "kernels/train_step_f32/train_step_f32_model.h"

namespace {

namespace ts = sdc::train_step_f32;

long sgemm_calls = 0;    // shown per step: the stand-in is what ran
float dw_factor = 1.0f;  // --perturb-dw: the self-check of the agreement test

// Y (T x N) = X (T x K) W (K x N)
void blas_y(const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y) {
  ++sgemm_calls;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(t), static_cast<int>(n), static_cast<int>(k),
              1.0f, x, static_cast<int>(k), w, static_cast<int>(n), 0.0f, y, static_cast<int>(n));
}
// dX (T x K) = dY (T x N) W^T
void blas_dx(const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx) {
  ++sgemm_calls;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(t), static_cast<int>(k), static_cast<int>(n),
              1.0f, dy, static_cast<int>(n), w, static_cast<int>(n), 0.0f, dx, static_cast<int>(k));
}
// dW (K x N) = X^T dY
void blas_dw(const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw) {
  ++sgemm_calls;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(k), static_cast<int>(n), static_cast<int>(t),
              dw_factor, x, static_cast<int>(k), dy, static_cast<int>(n), 0.0f, dw, static_cast<int>(n));
}
constexpr ts::MatmulHooks BLAS{blas_y, blas_dx, blas_dw};

// The matmul multiply-adds of one step: per micro-batch, each linear layer forward, dx and dw.
double matmul_flops(const ts::Config& c) {
  const double t = static_cast<double>(c.tokens()), d = static_cast<double>(c.dim), f = static_cast<double>(c.ffn),
               v = static_cast<double>(c.vocab);
  const double per_layer = 4 * d * d + 3 * d * f;  // wq, wk, wv, wo; gate, up, down
  const double forward = t * (static_cast<double>(c.layers) * per_layer + d * v);
  return 2.0 * 3.0 * forward * static_cast<double>(c.micro_batches());  // fma = 2 flops; forward, dx, dw
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  bool keep_coretype = false;
  std::string presets = "tiny,small";
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--reps" && a + 1 < argc) {
      reps = std::max(3, std::atoi(argv[++a]));
    } else if (arg == "--presets" && a + 1 < argc) {
      presets = argv[++a];
    } else if (arg == "--keep-coretype") {
      keep_coretype = true;
    } else if (arg == "--perturb-dw") {  // the dW stand-in 1% off: the agreement test must fail (exit 2)
      dw_factor = 1.01f;
    } else {
      std::fprintf(stderr, "usage: %s [--reps N>=3] [--presets tiny,small] [--keep-coretype] [--perturb-dw]\n",
                   argv[0]);
      return 64;
    }
  }
  if (!keep_coretype) sdc::bench::ensure_openblas_coretype(argv);
  openblas_set_num_threads(1);
  std::printf("%s, 1 thread; the replay's training step, exact vs its matmuls by sgemm\n",
              sdc::bench::openblas_core_choice().text.c_str());
  std::printf("%-12s %10s %12s %12s %12s %9s  %s\n", "preset", "params", "matmul GF", "exact ms", "sgemm ms", "ratio",
              "loss exact / sgemm");
  constexpr uint64_t SEED = 1234;
  int status = 0;
  struct Row {
    const char* preset;
    ts::OptimizerKind optimizer;
  };
  for (const Row row : {Row{"tiny", ts::OptimizerKind::adamw}, Row{"small", ts::OptimizerKind::adamw},
                        Row{"small", ts::OptimizerKind::lamb}}) {
    const std::string name = row.preset;
    if (presets.find(name) == std::string::npos) continue;
    ts::Optimizer adamw{};  // the row's optimizer
    adamw.kind = row.optimizer;
    const std::string label = name + (row.optimizer == ts::OptimizerKind::lamb ? "/lamb" : "/adamw");
    const ts::Config cfg = name == "tiny" ? ts::tiny_config() : ts::small_config();
    const ts::TensorSet params0 = ts::init_params(cfg, SEED);
    double params = 0;
    for (const auto& t : params0.tensors) params += static_cast<double>(t.size());
    ts::Options with_blas;
    with_blas.matmuls = &BLAS;
    float loss_exact = 0, loss_blas = 0;
    ts::TensorSet p_exact, p_blas, g_exact, g_blas;  // the parameters after each step, its gradients
    auto step = [&](const ts::Options& o, float& loss, ts::TensorSet& after, ts::TensorSet& grads) {
      after = params0;
      ts::OptState opt = ts::init_opt_state(cfg);
      const double s =
          sdc::bench::time_once([&] { loss = ts::train_step(cfg, after, opt, 0, SEED, adamw, nullptr, o); });
      grads = std::move(opt.grads);
      return s;
    };
    step({}, loss_exact, p_exact, g_exact);  // warm-up, and the loss and gradients of each
    sgemm_calls = 0;
    step(with_blas, loss_blas, p_blas, g_blas);
    const long calls = sgemm_calls;
    std::vector<double> t_exact, t_blas;
    for (int r = 0; r < reps; ++r) {
      t_exact.push_back(step({}, loss_exact, p_exact, g_exact));
      t_blas.push_back(step(with_blas, loss_blas, p_blas, g_blas));
    }
    const double me = sdc::bench::median(t_exact), mb = sdc::bench::median(t_blas);
    // How far apart the updated parameters are (sgemm's sums are not the specification's order).
    double diff2 = 0, ref2 = 0, differing = 0;
    for (size_t i = 0; i < p_exact.tensors.size(); ++i)
      for (size_t e = 0; e < p_exact.tensors[i].data.size(); ++e) {
        const double a = p_exact.tensors[i].data[e], b = p_blas.tensors[i].data[e];
        diff2 += (a - b) * (a - b);
        ref2 += a * a;
        differing += a != b;
      }
    // The accumulated gradients: the step's backward matmuls are in them, not in the loss.
    double gdiff2 = 0, gref2 = 0;
    for (size_t i = 0; i < g_exact.tensors.size(); ++i)
      for (size_t e = 0; e < g_exact.tensors[i].data.size(); ++e) {
        const double a = g_exact.tensors[i].data[e], b = g_blas.tensors[i].data[e];
        gdiff2 += (a - b) * (a - b);
        gref2 += a * a;
      }
    const double grad_rel = std::sqrt(gdiff2 / gref2);
    const double rel =
        std::fabs(static_cast<double>(loss_exact) - loss_blas) / std::fabs(static_cast<double>(loss_blas));
    std::printf(
        "%-12s %10.0f %12.3f %12.2f %12.2f %8.2fx  %.9g / %.9g (rel %.1e); gradients: relative distance %.1e; "
        "parameters after: %.0f differ, relative distance %.1e; %ld sgemm calls a step\n",
        label.c_str(), params, matmul_flops(cfg) * 1e-9, me * 1e3, mb * 1e3, me / mb, loss_exact, loss_blas, rel,
        grad_rel, differing, std::sqrt(diff2 / ref2), calls);
    if (!(rel < 1e-3) || !(grad_rel < 1e-3)) {
      std::fprintf(stderr,
                   "%s: the two steps disagree (loss relative %.3g, gradients relative %.3g): the sgemm stand-in is "
                   "wrong\n",
                   label.c_str(), rel, grad_rel);
      status = 2;
    }
  }
  std::printf("ratio: exact step time / the same step with sgemm matmuls (above 1: exactness costs that factor)\n");
  return status;
}
