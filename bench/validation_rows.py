"""The measurements bench/validation.py predicts: one ``Row`` per public measurement, with what the
measured implementation does (``built``), its as-built file and its role under the fidelity rule.

Roles: a *component* row measures one kernel or one op on the array (a registry GEMM or GEMV, one
core's matmul, one line of a per-kernel profile); a *workload* row measures a whole workload (a
model's tokens/s or time to first token, a whole CNN, a GEMM design's best TOPS). A component row may
be a *train* row: ``sets`` then names the parameters it set (docs/kernel_model.md, docs/calibration.md),
and its error is reported apart from the held-out rows'. A workload row is never a train row.
"""
from __future__ import annotations

from dataclasses import dataclass

ROLES = ("component", "workload")
AB = "examples/as_built/"
ONE_CORE_BUILT = ("one compute tile (1 column, 1 row), compiled by IREE's AIE backend; not describable: its "
                  "tiles, dataflow and kernel (searched), the per-run host work inside the measured time")
ONE_CORE_SUSPECT = ("a compiler-generated kernel below the hand-tuned one-tile efficiency, and per-run host "
                    "work. Micro-benchmark: the same compiled kernel traced on one core (cycles per call)")

# sources (public; file:line as of the cited snapshot)
REG_GEMM = "mlir-air kernel_registry/details/GEMM_bf16_in_bf16_out.md:{}"
REG_GEMV = "mlir-air kernel_registry/details/GEMV_bf16.md:{}"
REG_GEMM_F32 = "mlir-air kernel_registry/details/GEMM_bf16_in_fp32_out.md:{}"
REG_GEMM_JSON = "mlir-air kernel_registry/details/GEMM_bf16_in_bf16_out.json ({})"
FLM_LLAMA = "FastFlowLM v0.9.30 docs/benchmarks/llama3_results.md"
AIR_LLM = "mlir-air programming_examples/llms/{}"
STRIX = "Strix (npu2)"
KRACKAN = "Ryzen AI 7 350 Krackan (npu2)"
AIR_NPU2 = "NPU2, part not stated (npu2)"


@dataclass(frozen=True)
class Row:
    kind: str  # gemm, gemv, decode, prefill, ttft, cnn
    source: str
    part: str
    workload: str
    measured: float
    unit: str  # "us", "tokens/s", "s"
    args: tuple  # fastsim arguments after ``run`` (the workload), without --overlay
    as_built: str  # file under examples/as_built/, or "" when the format cannot describe the design
    built: str  # what the measured implementation does (from its source); what the file cannot say
    suspect: str = ""  # mechanism suspected when the as-built error is large, and the micro-benchmark
    scope: str = "with dispatch"  # "kernel": the measurement excludes the dispatch (run gemm kernel_seconds)
    why_not: str = ""  # as_built == "": why the design cannot be described
    role: str = ""  # "component" or "workload" (module docstring); "" = by kind (gemm/gemv component)
    sets: str = ""  # a train row: the parameters this measurement set; "" = held out
    # a front end without an as-built file format (run onnx): the whole ``fastsim run`` arguments of the
    # as-built prediction, its facts given as options (the part's overlay columns, fused epilogues)
    as_built_args: tuple = ()
    # options the as-built run adds to its file: a per-shape choice the file leaves to the run (the
    # registry GEMMs' K panel, ``--k-panel``)
    as_built_extra: tuple = ()
    # the measured prompt's tokens, where the implementation computes more rows than it counts
    # (padded): the simulated prompt (``args``) is the padded rows, and tokens/s counts these
    counted_tokens: int = 0

    @property
    def describable(self) -> bool:
        return bool(self.as_built or self.as_built_args)

    @property
    def as_built_label(self) -> str:
        if not self.as_built:
            return " ".join(self.as_built_args)
        return " ".join((self.as_built.removeprefix(AB), *self.as_built_extra))

    @property
    def kind_role(self) -> str:
        return self.role or ("component" if self.kind in ("gemm", "gemv") else "workload")

    @property
    def train(self) -> bool:
        return bool(self.sets)


def _gemm(m, k, n, dtype="bf16", arch="npu2"):
    return ("--arch", arch, "gemm", "--m", str(m), "--k", str(k), "--n", str(n), "--dtype", dtype, "--yes")


def _decode(model, context):
    return ("llm", "--model", model, "--context", str(context))


def _prefill(model, prompt):
    return ("llm", "--model", model, "--regime", "prefill", "--prompt", str(prompt))


def _onnx(model, arch, *options):
    return ("--arch", arch, "onnx", f"zoo:{model}", "--yes", *options)


def _us(gflops, m, k, n):
    """Time of a GEMM measured as GFLOP/s, in microseconds."""
    return 2 * m * k * n / (gflops * 1e9) * 1e6


AIR_GEMM_BUILT = ("8x4 herd (M on its 8 columns, N on its 4 core rows: split 2dt), bf16 emulated on the bfp16 "
                  "MMA, C stationary over K, L1 tile {}, K panel tile_k_l2 {} (each C block reads its panels of A "
                  "and B again: l2 ''){}")
AIR_HOW = {"drain": "; not describable: the f32 accumulator kept in L1 across K and cast once by a drain herd "
                    "(fastsim's C tile is bf16)",
           "fused-cast": ", C written as an f32 scratch from one single-buffered L1 accumulator (c_buffers 1), then "
                         "the f32->bf16 cast launch (cast_launch); not describable: the ELF path it is timed on "
                         "(run.py:1156-1160)"}
AIR_GEMM_SUSPECT = ("not the core alone: the {} call is 2,724 cycles in the kernel model (its C moves in series) "
                    "against 3,059-3,648 cycles per call per core measured for the GEMM launch alone "
                    "(GEMM_bf16_in_fp32_out.md:113-119), which fastsim reproduces within -7/+10 % once the herd, "
                    "K panel and f32 C are pinned. What the file leaves out: the ELF path the fused-cast and LLM rows are timed "
                    "on (1.26-1.42x the xclbin time of the same module, smolvla profile.md:269-280; its per-launch "
                    "reconfiguration, aircc --expand-load-pdis, is charged to LLM layouts, not to run gemm), and "
                    "the DDR cost per run fitted on one sweep (4.0 ns, runs of 32-480 B) applied to 128 B runs "
                    "(tile_k_l2 64). Micro-benchmark: one shim channel reading 16 MiB in 128, 256 and 1024 B "
                    "runs vs contiguous, GB/s; the same module from an xclbin and an ELF")
AIR_DIRECT_SUSPECT = ("the DDR side as for the fused-cast rows with shorter runs (tile_n 64: B read in 128 B runs; "
                      "the compiler-generated kernel is priced, its cost fitted on two registry rows); the ELF rows add "
                      "the ELF path (1.26-1.42x, smolvla profile.md:269-280). Micro-benchmark: the registry harness at "
                      "this shape with --codegen external at the same tiles (the kernel alone changes), and one shim "
                      "channel reading 16 MiB in 128 B runs")
AIR_F32_BUILT = ("the GEMM launch of fused-cast alone: f32 C out of a single-buffered f32 L1 accumulator "
                 "(c_buffers 1), external mm.o, xclbin, no cast launch; 8x4 herd (split 2dt), bfp16 MMA, L1 tile "
                 "{}, K panel tile_k_l2 {} (l2 '')")
AIR_DIRECT_BUILT = ("{} by the direct (low-precision) method: the compiler-generated matmul (codegen direct), tile {} "
                    "(m/kl2/kl1/n), 8x4 herd (split 2dt, l2 ''), bf16 C truncated per L2 tile, {}{}")
AIR_DIRECT_REG_SUSPECT = ("the direct kernel away from the shapes its cost was fitted at (2048 rows, 32 output blocks a "
                          "call): here two C-block rows and three K panels a core; the drain method's xclbin row at the "
                          "same shape lands at +1 %. Micro-benchmark: the registry harness at this shape with --codegen "
                          "external and direct at the same tiles")
# the direct kernel's train rows (fastsim/kernel_model/matmul.py DIRECT_CALL_EXTRA_CYCLES, docs/kernel_model.md)
DIRECT_SETS_VALUE = "the direct kernel's extra cycles per call (kernel_model.matmul.DIRECT_CALL_EXTRA_CYCLES, aie2p)"
DIRECT_SETS_FORM = "the direct kernel's cost form: per call, not per output block (docs/kernel_model.md)"
AIR_F32_DIRECT_BUILT = ("the same GEMM launch by the direct method (codegen direct: the compiler-generated matmul, no mm.o) "
                        "at the external method's tiles: f32 C out of a single-buffered f32 L1 accumulator (c_buffers "
                        "1), xclbin, no cast launch; 8x4 herd (split 2dt), bfp16 MMA, L1 tile {}, K panel tile_k_l2 {} "
                        "(l2 '')")
AIR_SMALL_SUSPECT = ("fixed cost of a launch (herd start, BD setup, pipeline fill and drain) against a few "
                     "tiles per core. Micro-benchmark: the registry harness (kernel-only) on the same design "
                     "at 256^3 and 512^3 and with an empty kernel, to split the fixed from the per-tile cost")
GEMV_SUSPECT = ("its buffers: matvec.py passes omit_pingpong, so nothing is double-buffered at L1 or L2 and each "
                "column's DMA legs and its kernel take turns, which the [gemm] table cannot say (fastsim double-"
                "buffers what fits); the one-core row (mlir-air PR #1360) shows the same per-column rate, 4.1 GB/s "
                "against 7.2 simulated. Micro-benchmark: the same one-column design with and without omit_pingpong, "
                "bytes/s of A")
FLM_DECODE_BUILT = ("AWQ uint4 g32 repacked as Q4NX with a bf16 scale and min per 32 (0.625 B/weight), LM head on the "
                    "NPU in the same format, bf16 KV, one fused dispatch per token (one resident program: each op re-runs on "
                    "its operands); kernels closed: tiles, "
                    "columns and datapath searched; part clock and power mode (FLM 'Performance') not modelled")
FLM_DECODE_SUSPECT = ("weight stream rate under the dequantizing GEMV (FLM feeds each column on two MM2S "
                      "channels) and DDR efficiency. Micro-benchmark: stream one layer's Q4NX weights through "
                      "8 columns with the dequant+GEMV kernel and with a DMA-only copy, bytes/s each")
LONG_CTX = ("; at long context the attention kernel over the bf16 KV. Micro-benchmark: one decode attention "
            "step (FLM mha_engine or mlir-air decode attention) at L = 8k and 32k, time per layer")
AIR_Q4NX_BUILT = ("Q4NX uint4 + bf16 scale and min per 32 (4 B per group), {}, bf16 KV on the device, all "
                  "layers and LM head in one dispatch (one resident program: each op re-runs on its operands), embedding "
                  "on the host; context not stated "
                  "(ATTN_MAXL 2048 build): simulated at 1024; tiles, columns and datapath searched")
AIR_Q4NX_SUSPECT = ("weight stream rate of the fused decode (dual MM2S channels per projection column) and "
                    "DDR efficiency. Micro-benchmark: the fused_decode ELF with compute removed (DMA only) "
                    "vs the full ELF, ms per token")
FLM_PREFILL_BUILT = ("prefill kernels closed: only the weight format (Q4NX, 0.625 B/weight) is fixed; fusion, cuts, "
                     "tiles searched; prompt tokens / prefill() wall")
FLM_DENSE_PREFILL_BUILT = ("its prefill programs (mm, dequant, attn; ROCm/FastFlowLM src/xclbins/*/): each layer's "
                           "Q4NX projections dequantized to bf16 in DDR by launches of their own (dequant_launch), "
                           "GEMMs on bf16 weights, only attention fused; not describable: RMSNorm, RoPE, residuals "
                           "and the KV fill on the CPU (about 15 buffer syncs a layer), the instruction streams and "
                           "ELF rebuilt per call, tiles and cuts (searched); one prefill() call timed, its 'Nk' "
                           "prompt a 968-token text N times in the chat template (benchmarking.hpp:317-321)")
FLM_LLAMA_TOKENS = {1024: 1005, 8192: 7786}  # the bench's "1k" and "8k" prompts in Llama 3's template
FLM_LLAMA_ROWS = "; simulated as {1} rows (padded to 256), tokens/s counting the prompt's {0}"
FLM_PREFILL_SUSPECT = ("a fixed cost per prefill call that a pass does not hold (FLM's rate rises from 1k to 4k "
                       "prompts: a line through its 1k and 2k times gives about 0.26 s plus 0.34 ms per token for "
                       "1B, 0.74 s plus 1.74 for 8B): the per-layer dequantization is simulated (dequant_launch), "
                       "what is left is host work inside the timed call (the published library rebuilds 8 "
                       "instruction streams, an ELF and the decode program per call, and runs norms, RoPE and the "
                       "KV fill on the CPU between about 8 dispatches a layer). Micro-benchmark: FLM prefill of "
                       "128, 256 and 512 tokens (the intercept) and the same with the host steps timed apart")
PREFILL_SUSPECT = ("GEMM and attention kernel efficiency at prompt length (fastsim's searched prefill runs "
                   "near the MAC array's peak). Micro-benchmark: one layer's projections as a registry GEMM "
                   "(M = prompt) on dequantized weights and the registry FlashAttention at the same length")
AIR_PREFILL_BUILT = ("ELFs per layer (e.g. rms_gemms_rope, flash_attn, o_ffn), bf16 GEMMs (bfp16 MMA) on {} "
                     "weights, each by the kernel registry's method and tiles for its shape, intermediates through DDR, prompt padded to 2048, tensors row-major in DDR, flash "
                     "attention computing the masked tiles (causal_skip False); not describable: the three "
                     "dispatches inside a layer (cuts searched), the flash harness's 256-row launches (about "
                     "31 us each, bench/flash_attention.py), host embedding; wall time incl. host")
AIR_PREFILL_SUSPECT = ("flash attention first: 21.6 ms per layer measured for 1B (profile.md, one launch; "
                       "20.1 ms of it the NPU run, PROFILE.html:332, against the registry harness's 15.4-16.1 ms for "
                       "the same design read heads-first: the pipeline's seq-first Q/K/V/O move in 128 B runs, K and "
                       "V read 32 times; docs/vector_kernels.md) against about 11 ms simulated; then the host: about 125 ms of Python scheduling and 37 ms "
                       "of host ops inside the 1.27 s (profile.md, Prefill Breakdown), not in the model. Each model's "
                       "file describes its GEMMs as its prefill code builds them (the registry's method and tiles "
                       "per shape: herd, K panels, fused-cast's f32 scratch and cast launches). Then the flash "
                       "harness's launches (128 per layer at 2048, about 4 ms by "
                       "bench/flash_attention.py's fit; the tile step itself is calibrated to the registry). The "
                       "ELF path's per-launch reconfiguration (aircc --expand-load-pdis) is charged at 361 us a "
                       "launch: one per op, fusion group and cast launch (launches_reconfigure). Micro-benchmark: the registry GEMM at each "
                       "projection's shape and the registry FlashAttention at 2048 (15.4 ms measured for 32q/8kv "
                       "heads): kernel time vs the simulated op time")


# issue 51 rows (added): other decode and prefill families, whole-array int8/bf16 GEMMs on both parts,
# and component rows (one kernel on the array) from mlir-air's per-kernel profiles
FLM_DOCS = "ROCm/FastFlowLM docs/docs/benchmarks/{}"  # FastFlowLM's repository (moved from FastFlowLM/FastFlowLM)
FLM_BUILT = ("Q4NX (uint4 g32, bf16 scale and min: 0.625 B/weight) as FLM's Llama models, head on the NPU "
             "in the same format, bf16 KV, one fused dispatch per token (one resident program); kernels closed: tiles, "
             "columns and "
             "datapath searched; FLM 'Performance' power mode not modelled")
FLM_OTHER_SUSPECT = ("the kernels a family adds (Gemma: GELU-tanh GLU, 4 norms per layer, 256-wide heads, sliding "
                     "window; gpt-oss: routed experts from a separate expert.xclbin, so possibly more than one "
                     "dispatch per token) on top of the weight stream rate. Micro-benchmark: FLM decode of the "
                     "same family at 1k and 32k (the slope is attention, the intercept weights and fixed costs) "
                     "against a Llama of the same weight bytes")
MOE_PREFILL_SUSPECT = ("routed experts at prefill: 1k tokens over 4 of 32 experts leave about 128 rows per expert "
                       "GEMM, and FLM ships its experts and their dequantization as separate xclbins (expert.xclbin, "
                       "dequant.xclbin), so a layer may switch designs. Micro-benchmark: FLM prefill of gpt-oss-20b "
                       "at 1k and 8k against a dense model of the same active weight bytes, and one layer's "
                       "expert GEMMs at 128 rows as a registry GEMM")
GEMMA_GEMM_BUILT = ("one ELF per op, fused-cast (f32 C scratch, then a cast launch) on host-dequantized bf16 weights, "
                    "tiles the registry's (gemm_spec -> GEMM_bf16_in_bf16_out.json: 64/{}/32/128, m/kl2/kl1/n); "
                    "per-op on-device time of `make profile-prefill` summed over 34 layers (incl. the op's share of "
                    "BO traffic); not describable: the ELF path")
QWEN7B_GEMM_BUILT = ("one ELF per op on Q4NX quantize-dequantized bf16 weights, by the direct (low-precision) "
                     "method at 64/32/32/64 (m/kl2/kl1/n: qwen25_3b_prefill.py:394,427 request the registry's low "
                     "tier, GEMM_bf16_in_bf16_out.json); NPU execution only, summed over 28 layers (excludes "
                     "host-DDR writes and the XRT call overhead); the compiler-generated kernel (codegen direct); not "
                     "describable: the ELF path")
SB = "arXiv:2512.13282 (Striking the Balance, Taka et al. 2025) {}"
SB_BUILT = ("IRON, {herd} cores, output stationary, no K split, {dt}, B column-major, L1 tile {tile} beside a "
            "single-buffered C (c_buffers 1, Eq. 5), k_mt = {kmt} (the K panel a mem tile stages: --k-panel, "
            "the largest divisor of a core's K tiles at most k_mt / k); not describable: B column-major "
            "transposed in the core, the 15-BD shim queue refilled while transfers run; wall clock incl. "
            "dispatch, mean of 100 runs, turbo mode")
SB_SUSPECT = ("the kernel model: the paper's one-core rate for its {tile} kernel is {mac} MACs/cycle; "
              "python bench/kernel_traces.py lists the model beside it and the paper's 23 other traced kernels. "
              "Micro-benchmark: the Table {t} kernel traced on one core against the modelled call")
# whole CNNs through ONNX Runtime's Vitis AI EP (closed compiler): only the overlay's size and the
# epilogue fusion every NPU deployment does are known; the rest is searched
RAI_BENCH = "amd/RyzenAI-SW@05f7e74 onnx-benchmark/doc/{} (README, Ryzen AI Software 1.6.0)"
HPT_LAB = ("AbhiramJayasankar/ryzenai-npu-lab@8ec97bb experiments/003_model_compatibility.md:{} (Ryzen AI "
           "Software 1.7.0)")
VAI_BUILT = ("ONNX Runtime Vitis AI EP, batch 1, the whole model in one NPU subgraph on the {overlay} overlay "
             "({cols} columns x 4 rows), ReLU fused into the conv before it (`--fold-epilogues`); {timing}; not "
             "describable: the closed compiler's tiles, layer fusion and dispatches (searched)")
RAI_TIMING = "mean per-call session.run wall time after 40 warm-ups (performance_benchmark.py)"
HPT_TIMING = ("median of 8 session.run after 2 warm-ups (session creation and preprocessing excluded); hobbyist "
              "lab notes")
HAWK_POINT = "Ryzen 9 8945HS Hawk Point (npu1)"
VAI_SUSPECT = ("per-layer control the closed runtime adds (instruction streams and BD reprogramming per layer, "
               "input/output quantize on the host inside session.run) and tiles the mapper would not pick. "
               "Micro-benchmark: the same model's per-layer NPU profile (Vitis AI EP's ai_analyzer)")
SMOLVLA = "mlir-air programming_examples/llms/smolvla/docs/profile.md:{}"
SMOLVLA_XCLBIN = ("8x4 herd, drain (f32 C in L1, cast once), bf16 on the bfp16 MMA, L1 tile {tile}, tile_k_l2 {kl2}; "
                  "the standalone GEMM module through the registry's xclbin harness (one synchronous dispatch), "
                  "HX 370 Turbo; not describable: the drain herd (the f32 accumulator kept in L1, cast once)")
SMOLVLA_ELF = ("the same GEMM as one launch inside the deployed multi-launch ELF: per-launch device cost from the "
               "x2/x4 replicate slope (fixed ELF overhead cancels; 25 interleaved rounds, median), HX 370 Turbo; "
               "not describable: the ELF lowering path (1.26-1.42x slower than xclbin for the same module, "
               "profile.md section 5), the drain herd")
SMOLVLA_SUSPECT = ("the per-launch cost of the ELF path (the same module runs 1.35-1.94x faster through an xclbin; "
                   "ELF minus xclbin 185-407 us a launch): the ELF path's per-launch reconfiguration (aircc "
                   "--expand-load-pdis, tools/aircc/aircc.cpp:1388-1389; each load_pdi a firmware reset plus the "
                   "array's configuration written inline), which fastsim charges LLM layouts "
                   "(launches_reconfigure) but not run gemm. "
                   "Micro-benchmark: profile.md section 5's ELF/xclbin A/B of one module, plus an empty launch in "
                   "the x2/x4 replicate ELF")


ROWS = [
    # whole CNNs, int8 and bf16 (workload rows: never fitted): searched on the whole part, as built on
    # the overlay's columns with ReLU fused
    *[Row("cnn", source, part, workload, ms, "ms", _onnx(model, arch), "",
          VAI_BUILT.format(overlay=overlay, cols=4, timing=timing), VAI_SUSPECT,
          as_built_args=_onnx(model, built_arch, "--fold-epilogues"))
      for source, part, workload, ms, model, arch, built_arch, overlay, timing in (
          (RAI_BENCH.format("xint8_opset20.png"), STRIX, "ResNet-50 int8 (XINT8), 224x224, batch 1", 2.81,
           "resnet50_int8", "strix", "strix:cols=4", "STX 4x4", RAI_TIMING + ", input quantize on the host included"),
          (RAI_BENCH.format("vaiml.png"), STRIX, "ResNet-50 bf16 (VAIML, BFP16), 224x224, batch 1", 5.75,
           "resnet50", "strix", "strix:cols=4", "default (4x4)", RAI_TIMING + "; fp32 model compiled by VAIML to "
           "BFP16 on the bfp16 MMA, all 122 nodes on the NPU"),
          (HPT_LAB.format(16), HAWK_POINT, "ResNet-50 int8, 224x224, batch 1", 6.008,
           "resnet50_int8", "hawk_point", "hawk_point", "X1 4x4.xclbin", HPT_TIMING),
          (HPT_LAB.format(15), HAWK_POINT, "MobileNetV2 int8, 224x224, batch 1", 3.324,
           "mobilenet_v2_int8", "hawk_point", "hawk_point", "X1 4x4.xclbin", HPT_TIMING))],
    # GEMM: mlir-air kernel registry, bf16 on npu2, the method its default ("auto") builds: drain below
    # M*K*N = 4e9, fused-cast (a second launch casts the f32 C) above. Its "kernel-only" time is the
    # host wall time of one synchronous dispatch (python/air/backend/xrt.py:868-885: kernel call +
    # wait, buffer syncs excluded), so the dispatch is in it
    *[Row("gemm", REG_GEMM.format(line), STRIX, f"GEMM {m}x{k}x{n} bf16, 8x4 herd, {how}", _us(g, m, k, n), "us",
          _gemm(m, k, n), AB + f"air_gemm_bf16_{how.replace('-', '_')}.toml",
          AIR_GEMM_BUILT.format(tile, kl2, AIR_HOW[how]),
          AIR_SMALL_SUSPECT if m * k * n < 2 ** 31 else AIR_GEMM_SUSPECT.format(tile),
          as_built_extra=("--k-panel", str(kl2 // 32)) if how == "fused-cast" else ())
      for m, k, n, g, line, how, tile, kl2 in (
          (512, 512, 512, 1703, 183, "drain", "32x32x128", 256),
          (1024, 1024, 1024, 4637, 184, "drain", "32x32x128", 256),
          (2048, 2048, 2048, 6215, 126, "fused-cast", "64x32x128", 512),
          (4096, 4096, 4096, 8423, 132, "fused-cast", "64x32x128", 512),
          (2048, 8192, 2048, 8898, 129, "fused-cast", "64x32x128", 256))],
    Row("gemm", "amd/IRON issue #55", "Strix Halo (npu2)", "GEMM 2048x2048x2048 (IRON operator)", 24679.3, "us",
        _gemm(2048, 2048, 2048), AB + "iron_gemm_2048.toml",
        "8 columns, 64x64x64 tiles (its test id); datapath, dataflow, L2 not stated (searched); host-measured "
        "harness latency, Default power mode",
        "host harness (buffer sync and runtime sequence per iteration, iteration count not stated) and the "
        "power mode: the same box runs mlir-air's design 9x faster. Micro-benchmark: the same xclbin timed "
        "kernel-only (XRT run.wait after warm-up) in Default and turbo mode"),
    # GEMV: mlir-air kernel registry (host-timed per run incl. dispatch, turbo)
    *[Row("gemv", REG_GEMV.format(line), STRIX, f"GEMV {mm}x{kk} bf16 (y = A x), 8x1 herd", us, "us",
          _gemm(1, kk, mm), AB + f, built, GEMV_SUSPECT)
      for mm, kk, us, line, f, built in (
          (512, 2048, 136, 93, "air_gemv_bf16.toml", "8 columns x 1 row, fp32 vector MAC, tile_m 8, whole K per "
           "call, x re-read from DDR per call; not describable: the vector-MAC datapath, single buffers"),
          (2048, 2048, 330, 92, "air_gemv_bf16.toml", "as above"),
          (8192, 2048, 1067, 94, "air_gemv_bf16.toml", "as above"),
          (16384, 2048, 2193, 96, "air_gemv_bf16.toml", "as above"),
          (2048, 8192, 1082, 95, "air_gemv_bf16_k8192.toml", "as above, tile_m 2; not describable: its "
           "[1, 8192, 2] call (above the format's 4096 tile limit: tile searched)"))],
    Row("gemv", "Xilinx/mlir-air PR #1360 (first version of the same GEMV)", STRIX,
        "GEMV 2048x8192 bf16 (y = A x), one core (1x1 herd)", 8095.5, "us", _gemm(1, 8192, 2048),
        AB + "air_gemv_bf16_one_core.toml",
        "one compute tile, fp32 vector MAC; host-timed by its test.cpp (10 warm-ups, 20 runs), power mode not "
        "stated, an older revision of the registry design; not describable: its tile (searched), single buffers",
        GEMV_SUSPECT),
    # decode: FastFlowLM v0.9.30 on Krackan
    *[Row("decode", FLM_LLAMA, KRACKAN, f"{model} decode at {ctx // 1024}k context", tps, "tokens/s",
          _decode(model, ctx), AB + f, FLM_DECODE_BUILT,
          FLM_DECODE_SUSPECT + (LONG_CTX if ctx > 4096 else ""))
      for model, ctx, tps, f in (
          ("llama-3.2-1b", 1024, 64.5, "flm_llama32_1b.toml"), ("llama-3.2-1b", 8192, 53.9, "flm_llama32_1b.toml"),
          ("llama-3.2-1b", 32768, 35.0, "flm_llama32_1b.toml"), ("llama-3.2-3b", 1024, 26.3, "flm_llama32_1b.toml"),
          ("llama-3.2-3b", 32768, 13.6, "flm_llama32_1b.toml"), ("llama-3.1-8b", 1024, 12.8, "flm_llama31_8b.toml"),
          ("llama-3.1-8b", 8192, 11.5, "flm_llama31_8b.toml"), ("llama-3.1-8b", 32768, 8.5, "flm_llama31_8b.toml"))],
    # decode: mlir-air Q4NX fused decode (open reimplementations of FLM's mapping)
    *[Row("decode", AIR_LLM.format(src), part, f"{model} Q4NX decode", tps, "tokens/s", _decode(model, 1024),
          AB + f, AIR_Q4NX_BUILT.format(head), AIR_Q4NX_SUSPECT)
      for model, tps, src, part, f, head in (
          ("llama-3.2-1b", 52.3, "fused_decode/README.md (dual channel)", STRIX, "air_llama32_1b_q4nx.toml",
           "bf16 tied embedding as LM head"),
          ("llama-3.2-3b", 22.5, "llama32_3b_q4nx/README.md:36-41 (dual channel)", STRIX,
           "air_llama32_1b_q4nx.toml", "bf16 tied embedding as LM head"),
          ("llama-3.1-8b", 10.7, "llama31_8b_q4nx/README.md:61-66", STRIX, "air_q4nx_untied.toml",
           "Q4NX LM head"),
          ("qwen3-8b", 10.22, "qwen3_8b_q4nx/README.md:37-44", STRIX, "air_q4nx_untied.toml", "Q4NX LM head"),
          ("qwen2.5-7b", 11.46, "qwen25_7b_q4nx/README.md:67-74", "Ryzen AI 9 HX 370 Strix Point (npu2)",
           "air_q4nx_untied.toml", "Q4NX LM head"),
          ("gemma-3-4b", 17.1, "gemma3_4b_q4nx/README.md (dual channel)", STRIX, "air_llama32_1b_q4nx.toml",
           "bf16 tied embedding as LM head"))],
    # prefill: FastFlowLM v0.9.30 on Krackan (prompt tokens / prefill() wall). Its bench's "Nk" prompt is a
    # 968-token text N times in Llama 3's chat template: 1,005 tokens at 1k, 7,786 at 8k (ROCm/FastFlowLM
    # docs/docs/instructions/cli.md:558-563, TTFT x rate; PR #602), and its Llama prefill pads the rows to
    # a multiple of 256 (the published library's _prefill_with_mm): 1,024 and 7,936 rows computed
    *[Row("prefill", FLM_LLAMA, KRACKAN, f"{model} prefill of {p // 1024}k tokens", tps, "tokens/s",
          _prefill(model, rows), AB + f, FLM_DENSE_PREFILL_BUILT + FLM_LLAMA_ROWS.format(counted, rows),
          FLM_PREFILL_SUSPECT, counted_tokens=counted)
      for model, p, tps, f in (
          ("llama-3.2-1b", 1024, 1686, "flm_llama32_1b.toml"), ("llama-3.2-1b", 8192, 2212, "flm_llama32_1b.toml"),
          ("llama-3.2-3b", 1024, 766, "flm_llama32_1b.toml"), ("llama-3.2-3b", 8192, 933, "flm_llama32_1b.toml"),
          ("llama-3.1-8b", 1024, 403, "flm_llama31_8b.toml"))
      for counted in (FLM_LLAMA_TOKENS[p],) for rows in (-(-counted // 256) * 256,)],
    # time to first token: mlir-air prefill ELFs (prompt 2048, warm wall)
    *[Row("ttft", AIR_LLM.format(src), STRIX, f"{model} {what} time to first token, 2048 tokens", s, "s",
          _prefill(model, 2048), AB + f, AIR_PREFILL_BUILT.format(w), AIR_PREFILL_SUSPECT)
      for model, what, s, src, w, f in (
          ("llama-3.2-1b", "bf16", 1.27, "llama32_1b/docs/profile.md:9", "bf16", "air_prefill_llama32_1b.toml"),
          ("llama-3.2-1b", "Q4NX", 0.93, "llama32_1b_q4nx/README.md:51-55", "dequantized bf16",
           "air_prefill_llama32_1b.toml"),
          ("llama-3.1-8b", "Q4NX", 6.22, "llama31_8b_q4nx/README.md:61-66", "dequantized bf16",
           "air_prefill_llama31_8b.toml"),
          ("qwen3-8b", "Q4NX", 7.72, "qwen3_8b_q4nx/README.md:37-44", "dequantized bf16", "air_prefill_qwen3_8b.toml"))],
    # one-core designs (iree-amd-aie)
    Row("gemm", "nod-ai/iree-amd-aie issue #1198 (76-97 ms per 100 runs)", STRIX, "matmul 512x512x512 int8, one core",
        0.865, "ms", _gemm(512, 512, 512, "int8"), AB + "iree_matmul_one_core.toml", ONE_CORE_BUILT, ONE_CORE_SUSPECT),
    Row("gemm", "nod-ai/iree-amd-aie issue #1198 (152-227 ms per 100 runs)", "Phoenix (npu1)",
        "matmul 512x512x512 bf16, one core", 1.895, "ms", _gemm(512, 512, 512, "bf16", "npu1"),
        AB + "iree_matmul_one_core.toml", ONE_CORE_BUILT, ONE_CORE_SUSPECT),
    Row("decode", AIR_LLM.format("llama32_1b/docs/profile.md:10"), STRIX, "llama-3.2-1b bf16 decode", 10.86,
        "tokens/s", _decode("llama-3.2-1b", 2048), AB + "air_llama32_1b_bf16_decode.toml",
        "bf16 weights, a dispatch per layer, intermediates through DDR, attention over the host KV cache on "
        "the CPU (its 5 ms per token given, shared by the host ops), GEMVs as [8,1] herds of mv.cc's fp32 "
        "vector MAC, o_gemv_ffn's GEMVs single-buffered (omit_pingpong 'all'); not describable: the "
        "repository's o_gemv_ffn builder at the profile's commits (3 launches, a 4-row cascade) differs from "
        "the profile's text (8 launches of [8,1] herds), the M = 1 glue the CPU also runs",
        "the GEMV stream rate, as the GEMV rows (single-buffered legs taking turns). Micro-benchmark: the "
        "registry GEMV at 2048x2048 and 8192x2048 read rate against the simulated op"),
    # decode and prefill of more families: FastFlowLM on Krackan (the releases nearest v0.9.30 that
    # published these models: v0.9.31 for Gemma 3 and Qwen 3, v0.9.32 for gpt-oss)
    *[Row("decode", FLM_DOCS.format(src), KRACKAN, f"{model} decode at {ctx // 1024}k context", tps, "tokens/s",
          _decode(model, ctx), AB + f, FLM_BUILT, FLM_OTHER_SUSPECT + (LONG_CTX if ctx > 4096 else ""))
      for model, ctx, tps, src, f in (
          ("gemma-3-4b", 1024, 18.2, "gemma3_results.md@c082f08:36 (v0.9.31)", "flm_q4nx_tied.toml"),
          ("gemma-3-4b", 8192, 17.3, "gemma3_results.md@c082f08:36 (v0.9.31)", "flm_q4nx_tied.toml"),
          ("gemma-3-4b", 32768, 14.8, "gemma3_results.md@c082f08:36 (v0.9.31)", "flm_q4nx_tied.toml"),
          ("qwen3-8b", 1024, 11.9, "qwen3_results.md@c082f08:38 (v0.9.31)", "flm_q4nx_untied.toml"),
          ("qwen3-8b", 8192, 10.4, "qwen3_results.md@c082f08:38 (v0.9.31)", "flm_q4nx_untied.toml"),
          ("qwen3-8b", 32768, 7.2, "qwen3_results.md@c082f08:38 (v0.9.31)", "flm_q4nx_untied.toml"),
          ("gpt-oss-20b", 1024, 18.2, "gpt-oss_results.md@c3b40a2:35 (v0.9.32)", "flm_gpt_oss_20b.toml"),
          ("gpt-oss-20b", 8192, 16.3, "gpt-oss_results.md@c3b40a2:35 (v0.9.32)", "flm_gpt_oss_20b.toml"))],
    *[Row("prefill", FLM_DOCS.format(src), KRACKAN, f"{model} prefill of {p // 1024}k tokens", tps, "tokens/s",
          _prefill(model, p), AB + f, FLM_PREFILL_BUILT if model == "gpt-oss-20b" else FLM_DENSE_PREFILL_BUILT,
          MOE_PREFILL_SUSPECT if model == "gpt-oss-20b" else FLM_PREFILL_SUSPECT)
      for model, p, tps, src, f in (
          ("gemma-3-4b", 1024, 528, "gemma3_results.md@c082f08:48 (v0.9.31)", "flm_q4nx_tied.toml"),
          ("gemma-3-4b", 8192, 881, "gemma3_results.md@c082f08:48 (v0.9.31)", "flm_q4nx_tied.toml"),
          ("qwen3-8b", 1024, 357, "qwen3_results.md@c082f08:49 (v0.9.31)", "flm_q4nx_untied.toml"),
          ("qwen3-8b", 8192, 442, "qwen3_results.md@c082f08:49 (v0.9.31)", "flm_q4nx_untied.toml"),
          ("gpt-oss-20b", 1024, 221, "gpt-oss_results.md@c3b40a2:43 (v0.9.32)", "flm_gpt_oss_20b.toml"))],
    # FastFlowLM's Gemma-3-4B prefill timed by mlir-air on its own Strix (FLM version not stated)
    Row("ttft", AIR_LLM.format("gemma3_4b_q4nx/README.md:66-67 (FastFlowLM's own prefill)"), STRIX,
        "gemma-3-4b FastFlowLM time to first token, 2048 tokens", 3.21, "s", _prefill("gemma-3-4b", 2048),
        AB + "flm_q4nx_tied.toml", FLM_DENSE_PREFILL_BUILT + "; FLM version and power mode not stated",
        FLM_PREFILL_SUSPECT),
    # time to first token: mlir-air prefill ELFs on Strix (prompt 2048, warm wall) for three more families
    *[Row("ttft", AIR_LLM.format(src), part, f"{model} {what} time to first token, 2048 tokens", sec, "s",
          _prefill(model, 2048), AB + f"air_prefill_{f}.toml", AIR_PREFILL_BUILT.format(w), AIR_PREFILL_SUSPECT)
      for model, what, sec, src, w, part, f in (
          ("gemma-3-4b", "Q4NX", 4.5, "gemma3_4b_q4nx/README.md:46", "host-dequantized bf16", STRIX, "gemma3_4b"),
          ("qwen2.5-7b", "Q4NX", 9.59, "qwen25_7b_q4nx/README.md:73", "Q4NX quantize-dequantized bf16",
           "Ryzen AI 9 HX 370 Strix Point (npu2)", "qwen25_7b"),
          ("qwen2.5-0.5b", "bf16", 0.99, "qwen25_0_5b/README.md:13,17", "bf16", AIR_NPU2, "qwen25_0_5b"),
          ("qwen3-0.6b", "bf16", 1.52, "qwen3_0_6b/README.md:13,17 (wall incl. a host seq-head transpose for "
           "its flash attention)", "bf16", AIR_NPU2, "qwen3_0_6b"))],
    # whole-array GEMMs: "Striking the Balance" (IRON), the published best designs, int8 and bf16 on
    # both parts (B column-major; the sweep bests, 6.76 and 38.05 TOPS, come without their shapes)
    *[Row("gemm", SB.format(tab), part, f"GEMM {m}x{k}x{n} {dt}, {herd} cores ({tile} kernel)",
          2 * m * k * n / (tops * 1e12) * 1e6, "us",
          _gemm(m, k, n, "int8" if "int8" in dt else "bf16", arch) + (("--out-dtype", "int8") if "int8 out" in dt else ()),
          AB + f, SB_BUILT.format(herd=herd, dt=dt, kmt=kmt, tile=tile),
          SB_SUSPECT.format(mac=mac, tile=tile, t=tab[6]), role="workload",
          as_built_extra=("--tile", tile.replace("x", ","), "--k-panel", str(kmt // int(tile.split("x")[1]))))
      for m, k, n, tops, dt, tile, mac, kmt, herd, arch, part, tab, f in (
          (4032, 4032, 4032, 6.52, "int8 in, int8 out", "112x112x112", 212.5, 448, "4x4", "npu1",
           "Ryzen 9 7940HS Phoenix (npu1)", "Table 2", "sb_gemm_int8_npu1.toml"),
          (4032, 4160, 4096, 6.48, "int8 in, int8 out", "112x104x128", 207.4, 448, "4x4", "npu1",
           "Ryzen 9 7940HS Phoenix (npu1)", "Table 2", "sb_gemm_int8_npu1.toml"),
          (4224, 4032, 4224, 3.12, "bf16 in, bf16 out", "96x56x96", 99.8, 224, "4x4", "npu1",
           "Ryzen 9 7940HS Phoenix (npu1)", "Table 2", "sb_gemm_bf16_npu1.toml"),
          (4032, 4320, 4608, 37.35, "int8 in, int8 out", "144x72x144", 343.0, 432, "4x8", "npu2",
           KRACKAN, "Table 3", "sb_gemm_int8_npu2.toml"),
          (4480, 4224, 4608, 36.13, "int8 in, int8 out", "160x64x144", 322.6, 432, "4x8", "npu2",
           KRACKAN, "Table 3", "sb_gemm_int8_npu2.toml"),
          (4032, 4224, 4608, 14.52, "bf16 in, bf16 out (bfp16 MMA)", "112x48x96", 137.2, 384, "4x8", "npu2",
           KRACKAN, "Table 3", "sb_gemm_bf16_npu2.toml"),
          (4480, 4160, 4480, 13.67, "bf16 in, bf16 out (bfp16 MMA)", "160x40x80", 124.1, 384, "4x8", "npu2",
           KRACKAN, "Table 3", "sb_gemm_bf16_npu2.toml"))],
    # components: smolvla's SigLIP GEMMs (seq 1024, hidden 768), HX 370 Turbo, held out
    *[Row("gemm", SMOLVLA.format(line), STRIX, f"GEMM {m}x{k}x{n} bf16, drain, {how}", us, "us", _gemm(m, k, n),
          AB + f, (SMOLVLA_XCLBIN.format(tile=tile, kl2=kl2) if how == "xclbin harness" else SMOLVLA_ELF),
          SMOLVLA_SUSPECT if how != "xclbin harness" else AIR_SMALL_SUSPECT,
          scope="kernel" if how != "xclbin harness" else "with dispatch", role="component")
      for m, k, n, us, line, how, tile, kl2, f in (
          (1024, 768, 768, 297.5, 259, "xclbin harness", "32x64x96", 384, "air_gemm_bf16_drain_tn96.toml"),
          (1024, 768, 3072, 1085.1, 260, "xclbin harness", "32x32x128", 256, "air_gemm_bf16_drain.toml"),
          (1024, 3072, 768, 848.3, 261, "xclbin harness", "32x64x96", 384, "air_gemm_bf16_drain_tn96.toml"),
          (1024, 768, 768, 578.5, 133, "per launch in the ELF", "32x64x96", 384, "air_gemm_bf16_drain_tn96.toml"),
          (1024, 768, 3072, 1461.2, 134, "per launch in the ELF", "32x32x128", 256, "air_gemm_bf16_drain.toml"),
          (1024, 3072, 768, 1142.6, 135, "per launch in the ELF", "32x64x96", 384,
           "air_gemm_bf16_drain_tn96.toml"))],
    # components: the registry's swept Gemma3-4B gate/up shape
    *[Row("gemm", REG_GEMM.format("149 (Gemma3-4B gate/up, swept)"), part, f"GEMM {m}x{k}x{n} bf16, {what}", us,
          "us", _gemm(m, k, n), AB + "air_gemm_bf16_fused_cast.toml", built, AIR_GEMM_SUSPECT.format("64x32x128"),
          role="component", as_built_extra=("--k-panel", "4"))
      for m, k, n, us, src, what, built, part in (
          (2048, 2560, 10240, _us(4849, 2048, 2560, 10240), None,
           "8x4 herd, fused-cast", "fused-cast, tile 64/128/32/128 (m/kl2/kl1/n: --k-panel 4), GFLOP/s incl. the "
           "cast launch; not describable: the ELF path it is timed on", STRIX),)],
    # components: the registry's fused-cast rows for Qwen2.5-7B's FFN shapes (its JSON, measured 2026-06;
    # fused-cast GFLOP/s include the cast launch)
    *[Row("gemm", REG_GEMM_JSON.format(used_by), STRIX, f"GEMM {m}x{k}x{n} bf16, 8x4 herd, fused-cast", _us(g, m, k, n),
          "us", _gemm(m, k, n), AB + "air_gemm_bf16_fused_cast.toml",
          AIR_GEMM_BUILT.format("64x32x128", kl2, AIR_HOW["fused-cast"]), AIR_GEMM_SUSPECT.format("64x32x128"),
          role="component", as_built_extra=("--k-panel", str(kl2 // 32)))
      for m, k, n, g, kl2, used_by in ((2048, 3584, 18944, 5711, 64, "Qwen2.5-7B Gate/Up proj"),
                                       (2048, 18944, 3584, 9740, 256, "Qwen2.5-7B Down proj"))],
    # components: Qwen2.5-3B's Gate/Up (2048x2048x11008) by the direct method, one ELF per layer (`make bench`,
    # averaged over 36 layers), and the registry's low-precision (direct) table on the same method (xclbin); its
    # 2048x2048x11008 row is a train row of the direct kernel's cost form
    *[Row("gemm", src, part, f"GEMM {m}x{k}x{n} bf16, {what}", us, "us", _gemm(m, k, n),
          AB + "air_gemm_bf16_direct.toml",
          AIR_DIRECT_BUILT.format(used, f"{tm}/{kl2}/32/{tn}", how, extra),
          AIR_DIRECT_SUSPECT if tn == 64 else AIR_DIRECT_REG_SUSPECT,
          role="component", as_built_extra=("--tile", f"{tm},32,{tn}", "--k-panel", str(kl2 // 32)), sets=sets)
      for m, k, n, tm, kl2, tn, us, src, what, used, how, extra, part, sets in (
          (2048, 2048, 11008, 64, 128, 64, 24100.0, AIR_LLM.format("qwen25_3b_q4/README.md:133 (gate ELF)"),
           "Qwen2.5-3B gate ELF", "Gate/Up", "one ELF per layer on Q4_0 weights dequantized on the host at load, "
           "averaged over 36 layers incl. the ELF's dispatch (qwen25_3b/qwen25_3b_prefill.py:30-33)",
           "; not describable: the ELF lowering path", AIR_NPU2, ""),
          (2048, 2048, 11008, 64, 128, 64, 23920.0, AIR_LLM.format("qwen25_3b_q4/README.md:132 (up ELF)"),
           "Qwen2.5-3B up ELF", "Gate/Up", "as gate", "; not describable: the ELF lowering path", AIR_NPU2, ""),
          *((m, k, n, tm, kl2, tn, _us(g, m, k, n), REG_GEMM.format(line), "8x4 herd, direct (registry harness)",
             "the GEMM", "the registry harness (one synchronous dispatch, xclbin)", "", STRIX,
             DIRECT_SETS_FORM if line == 287 else "")
            for m, k, n, tm, kl2, tn, g, line in (
                (2048, 2048, 2048, 64, 512, 128, 5230, 277), (2048, 2048, 512, 64, 256, 128, 4765, 278),
                (2048, 2048, 8192, 64, 256, 128, 5287, 279), (2048, 8192, 2048, 64, 256, 128, 5592, 280),
                (512, 512, 512, 64, 256, 128, 1750, 281), (1024, 1024, 1024, 64, 256, 128, 4456, 282),
                (4096, 4096, 4096, 64, 512, 128, 5509, 283), (2048, 1024, 3072, 64, 256, 128, 5006, 284),
                (2048, 896, 4864, 64, 128, 64, 4320, 285), (2048, 1536, 8960, 64, 128, 64, 4165, 286),
                (2048, 2048, 11008, 64, 128, 64, 4276, 287), (2048, 2560, 9728, 64, 128, 64, 4397, 288),
                (1024, 768, 3072, 64, 256, 128, 3650, 289))))],
    # components: the f32-out GEMM launch (fused-cast's GEMM alone, xclbin) by both methods at the same tiles:
    # external (mm.o, md:113-119) and direct (compiler-generated, md:125-131); direct 2048^3 is a train row
    *[Row("gemm", REG_GEMM_F32.format(line), STRIX, f"GEMM {m}x{k}x{n} bf16 in, f32 out, 8x4 herd, {method}",
          _us(g, m, k, n), "us", _gemm(m, k, n), AB + f"air_gemm_bf16_f32_{'out' if method == 'external' else 'direct'}.toml",
          (AIR_F32_BUILT if method == "external" else AIR_F32_DIRECT_BUILT).format(f"{tm}x32x128", kl2),
          AIR_GEMM_SUSPECT.format(f"{tm}x32x128"), role="component",
          as_built_extra=("--tile", f"{tm},32,128", "--k-panel", str(kl2 // 32)),
          sets=DIRECT_SETS_VALUE if (method, line) == ("direct", 125) else "")
      for method, offset, col in (("external", 113, 0), ("direct", 125, 1))
      for (m, k, n, tm, kl2, *gflops), i in zip((
          (2048, 2048, 2048, 64, 512, 8508, 5516), (2048, 2048, 512, 64, 256, 7342, 4896),
          (2048, 2048, 8192, 64, 256, 8278, 5582), (2048, 8192, 2048, 64, 256, 9797, 6010),
          (512, 512, 512, 32, 256, 1791, 1536), (1024, 1024, 1024, 64, 256, 6256, 4413),
          (4096, 4096, 4096, 64, 512, 9329, 5791)), range(7))
      for g, line in ((gflops[col], offset + i),)],
    # components: prefill GEMMs inside the LLM ELFs, per layer from per-op totals at CTX = 2048
    # (Gemma-3-4B: 34 layers, "on-device" incl. its BO traffic; Qwen2.5-7B: 28 layers, NPU execution only)
    *[Row("gemm", AIR_LLM.format(src), part, f"GEMM {m}x{k}x{n} bf16, {what} (per layer)", total_ms / layers * 1e3,
          "us", _gemm(m, k, n), AB + f, built,
          AIR_DIRECT_SUSPECT if "direct" in f else AIR_GEMM_SUSPECT.format("64x32x128"),
          scope=scope, role="component",
          as_built_extra=(*(("--tile", "64,32,64") if "direct" in f else ()), "--k-panel", str(k_panel)))
      for m, k, n, total_ms, layers, src, what, built, part, scope, k_panel, f in (
          (2048, 2560, 10240, 659, 34, "gemma3_4b_q4nx/README.md:60 (gate, 659 ms over 34 layers)", "Gemma-3-4B gate",
           GEMMA_GEMM_BUILT.format(128), STRIX, "with dispatch", 4, "air_gemm_bf16_fused_cast.toml"),
          (2048, 2560, 10240, 656, 34, "gemma3_4b_q4nx/README.md:60 (up, 656 ms over 34 layers)", "Gemma-3-4B up",
           GEMMA_GEMM_BUILT.format(128), STRIX, "with dispatch", 4, "air_gemm_bf16_fused_cast.toml"),
          (2048, 10240, 2560, 645, 34, "gemma3_4b_q4nx/README.md:60 (down, 645 ms over 34 layers)",
           "Gemma-3-4B down", GEMMA_GEMM_BUILT.format(256), STRIX, "with dispatch", 8, "air_gemm_bf16_fused_cast.toml"),
          (2048, 3584, 18944, 2368, 28, "qwen25_7b_q4nx/README.md:85 (up, 2368 ms over 28 layers)", "Qwen2.5-7B up",
           QWEN7B_GEMM_BUILT, "Ryzen AI 9 HX 370 Strix Point (npu2)", "kernel", 1, "air_gemm_bf16_direct.toml"),
          (2048, 3584, 18944, 2358, 28, "qwen25_7b_q4nx/README.md:85 (gate, 2358 ms over 28 layers)",
           "Qwen2.5-7B gate", QWEN7B_GEMM_BUILT, "Ryzen AI 9 HX 370 Strix Point (npu2)", "kernel", 1,
           "air_gemm_bf16_direct.toml"))],
]


def check_roles(rows: list[Row]) -> None:
    """The fidelity rule on the table itself: only component rows may set parameters."""
    bad = [f"{r.source}: {r.workload}" for r in rows if r.train and r.kind_role != "component"]
    wrong = [f"{r.source}: role {r.role!r}" for r in rows if r.role and r.role not in ROLES]
    if bad or wrong:
        raise ValueError("whole-workload rows never set parameters: " + "; ".join(bad + wrong))
