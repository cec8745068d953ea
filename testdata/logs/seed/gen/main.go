//go:build ignore

// Command gen writes the seed scenario logs under testdata/logs/seed/
// (failed/, fixed/, both/, script-injection/). Output is deterministic:
//
//	go run testdata/logs/seed/gen/main.go            # from the repository root
//	go run testdata/logs/seed/gen/main.go -out DIR   # somewhere else
//
// The story and what each file shows are in testdata/logs/seed/README.md.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ---------------------------------------------------------------------------
// Docker json-file writer (moby daemon/logger/copier.go + jsonfilelog)

const dockerBufSize = 16 * 1024 // copier.go bufSize: longer lines become partial messages

type rec struct {
	t      time.Time
	stream string
	text   string // one physical line, without the trailing "\n"
}

type jsonLine struct {
	Log    string `json:"log"`
	Stream string `json:"stream"`
	Time   string `json:"time"`
}

// encodeDocker renders records as moby's json-file driver writes them.
// encoding/json already escapes like moby (`<>&` as \u003c.., invalid UTF-8 as
// \ufffd, \n, \r); moby's writer spells TAB, BS and FF as \u0009, \u0008,
// \u000c, so those escapes are rewritten.
func encodeDocker(recs []rec) []byte {
	var out bytes.Buffer
	for _, r := range recs {
		msg := r.text + "\n"
		t := r.t
		for len(msg) > 0 {
			n := len(msg)
			if n > dockerBufSize {
				n = dockerBufSize // partial: no trailing newline in "log"
			}
			b, err := json.Marshal(jsonLine{Log: msg[:n], Stream: r.stream, Time: t.UTC().Format(time.RFC3339Nano)})
			if err != nil {
				log.Fatal(err)
			}
			out.Write(mobyEscapes(b))
			out.WriteByte('\n')
			msg = msg[n:]
			t = t.Add(37 * time.Microsecond)
		}
	}
	return out.Bytes()
}

func mobyEscapes(b []byte) []byte {
	if !bytes.ContainsRune(b, '\\') {
		return b
	}
	var o bytes.Buffer
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			o.WriteByte(b[i])
			continue
		}
		switch b[i+1] {
		case 't':
			o.WriteString(`\u0009`)
		case 'b':
			o.WriteString(`\u0008`)
		case 'f':
			o.WriteString(`\u000c`)
		default:
			o.WriteByte(b[i])
			o.WriteByte(b[i+1])
		}
		i++
	}
	return o.Bytes()
}

// ---------------------------------------------------------------------------
// builders

// clog collects the physical lines of one container's stdout/stderr.
type clog struct {
	recs []rec
	t    time.Time
	last time.Time // last Docker receive time: kept monotonic
	rng  *rand.Rand
}

func newClog(seed int64) *clog { return &clog{rng: rand.New(rand.NewSource(seed))} }

func (c *clog) at(t time.Time)      { c.t = t }
func (c *clog) adv(d time.Duration) { c.t = c.t.Add(d) }
func (c *clog) ms(n int) {
	c.adv(time.Duration(n)*time.Millisecond + time.Duration(c.rng.Intn(900000)))
}
func (c *clog) add(stream, s string) {
	for _, l := range strings.Split(s, "\n") {
		// Docker's receive time lags the line's own timestamp a little.
		rt := c.t.Add(time.Duration(150000 + c.rng.Intn(800000)))
		if !rt.After(c.last) {
			rt = c.last.Add(time.Duration(3000 + c.rng.Intn(40000)))
		}
		c.last = rt
		c.recs = append(c.recs, rec{t: rt, stream: stream, text: l})
		c.t = c.t.Add(time.Duration(20000 + c.rng.Intn(300000)))
	}
}
func (c *clog) out(s string) { c.add("stdout", s) }
func (c *clog) err(s string) { c.add("stderr", s) }

// plain collects lines of a plain text log (Ray session files).
type plain struct{ b strings.Builder }

func (p *plain) l(s string) { p.b.WriteString(s); p.b.WriteByte('\n') }

// time formats
func vts(t time.Time) string { return t.Format("01-02 15:04:05") }
func pyts(t time.Time) string {
	return t.Format("2006-01-02 15:04:05") + fmt.Sprintf(",%03d", t.Nanosecond()/1e6)
}

// vllm renders one vLLM logger line (v0.8+ bracketed format).
func vllm(t time.Time, level, file string, line int, msg string) string {
	return fmt.Sprintf("%s %s [%s:%d] %s", level, vts(t), file, line, msg)
}

// vllmMulti renders a logger.exception-style message: every embedded newline
// becomes "\r\n" + the full header (NewLineFormatter).
func vllmMulti(prefix string, t time.Time, level, file string, line int, msg string) string {
	hdr := fmt.Sprintf("%s%s %s [%s:%d] ", prefix, level, vts(t), file, line)
	parts := strings.Split(msg, "\n")
	for i := range parts {
		parts[i] = hdr + parts[i]
		if i < len(parts)-1 {
			parts[i] += "\r"
		}
	}
	return strings.Join(parts, "\n")
}

func ray(t time.Time, level, file string, line int, msg string) string {
	return fmt.Sprintf("%s\t%s %s:%d -- %s", pyts(t), level, file, line, msg)
}

func cpp(t time.Time, lvl string, pid, tid int, comp, file string, line int, msg string) string {
	return fmt.Sprintf("[%s %s %d %d] (%s) %s:%d: %s", pyts(t), lvl, pid, tid, comp, file, line, msg)
}

func hexID(rng *rand.Rand, n int) string {
	const h = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = h[rng.Intn(16)]
	}
	return string(b)
}

// Ray forwarded-output prefixes (colorama DIM+CYAN / YELLOW, as print_worker_logs writes them).
func rw(pid int, ip string) string {
	if ip == "" {
		return fmt.Sprintf("\x1b[2m\x1b[36m(RayWorkerWrapper pid=%d)\x1b[0m ", pid)
	}
	return fmt.Sprintf("\x1b[2m\x1b[36m(RayWorkerWrapper pid=%d, ip=%s)\x1b[0m ", pid, ip)
}
func autoscaler(elapsed string, bright bool) string {
	if bright {
		return "\x1b[2m\x1b[1m\x1b[33m(autoscaler +" + elapsed + ")\x1b[0m "
	}
	return "\x1b[2m\x1b[33m(autoscaler +" + elapsed + ")\x1b[0m "
}

func d(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.000", s)
	if err != nil {
		log.Fatal(err)
	}
	return t
}

// ---------------------------------------------------------------------------
// scenario constants

const (
	mgmt1, mgmt2 = "10.1.230.180", "10.1.230.181"
	roce1, roce2 = "192.168.200.12", "192.168.200.13"
	model        = "Qwen/Qwen3.5-122B-A10B-FP8"
	site         = "/opt/vllm-env/lib/python3.12/site-packages"
	rayFutureW   = site + "/ray/_private/worker.py:2046: FutureWarning: Tip: In future versions of Ray, Ray will no longer override accelerator visible devices env var if num_gpus=0 or num_gpus=None (default). To enable this behavior and turn off this error message, set RAY_ACCEL_ENV_VAR_OVERWRITE_ON_ZERO=0"
	apiPID       = 312
	corePID      = 498
)

type launch struct {
	name              string
	headFlagIP        string // ray start --node-ip-address on the head
	workerFlagIP      string
	headRayIP         string // what Ray registered (Local node IP)
	workerRayIP       string
	vllmHostIP        string // VLLM_HOST_IP on the head (node:<ip> in bundle 0)
	rayAddress        string // address the worker joins / the driver connects to
	ncclIfname        string
	start             time.Time // head container start
	sessionStamp      string
	headNode, wrkNode string
	failed            bool
	headWorkerPID     int // RayWorkerWrapper on spark-1
	remoteWorkerPID   int // RayWorkerWrapper on spark-2
}

func apiP() string  { return fmt.Sprintf("(APIServer pid=%d) ", apiPID) }
func coreP() string { return fmt.Sprintf("(EngineCore pid=%d) ", corePID) }

// ---------------------------------------------------------------------------
// head container (spark-1)

func headContainer(c *clog, L *launch) {
	c.at(L.start)
	c.err(fmt.Sprintf("+ ray start --head --node-ip-address=%s --port=6379 --num-gpus=1 --include-dashboard=false --disable-usage-stats --block", L.headFlagIP))
	c.ms(1800)
	c.out(rayStartHead(c, L))
	c.ms(9000)
	c.err("+ sleep 15")
	c.ms(6000)
	c.err("+ ray status")
	c.ms(1400)
	rayStatus(c, L, false)
	c.ms(300)
	c.err(`+ python3 -c 'from vllm import ModelRegistry; print(ModelRegistry.models)'`)
	c.ms(4100)
	c.out(vllm(c.t, "INFO", "__init__.py", 225, "Automatically detected platform cuda."))
	c.ms(900)
	c.out(registryDump()) // > 16 KiB: split into partial json-file records
	c.ms(200)
	c.err(fmt.Sprintf("+ vllm serve %s --served-model-name qwen3.5-122b --host 0.0.0.0 --port 8000 --tensor-parallel-size 2 --distributed-executor-backend ray --max-model-len 32768 --gpu-memory-utilization 0.85 --enable-prefix-caching --reasoning-parser qwen3", model))
	c.ms(5200)
	a, e := apiP(), coreP()
	c.out(a + vllm(c.t, "INFO", "__init__.py", 225, "Automatically detected platform cuda."))
	c.ms(2600)
	c.out(a + vllm(c.t, "INFO", "api_server.py", 1896, "vLLM API server version 0.17.1rc1"))
	c.ms(3)
	c.out(a + vllm(c.t, "INFO", "utils.py", 253, fmt.Sprintf("non-default args: {'model_tag': '%s', 'host': '0.0.0.0', 'model': '%s', 'max_model_len': 32768, 'served_model_name': ['qwen3.5-122b'], 'reasoning_parser': 'qwen3', 'distributed_executor_backend': 'ray', 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.85, 'enable_prefix_caching': True}", model, model)))
	c.ms(2100)
	c.out(a + vllm(c.t, "INFO", "model.py", 631, "Resolved architecture: Qwen3_5MoeForConditionalGeneration"))
	c.ms(2)
	c.out(a + vllm(c.t, "INFO", "model.py", 1788, "Using max model len 32768"))
	c.ms(40)
	c.out(a + vllm(c.t, "INFO", "scheduler.py", 234, "Chunked prefill is enabled with max_num_batched_tokens=8192."))
	c.ms(8)
	c.out(a + vllm(c.t, "INFO", "config.py", 447, "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size."))
	c.out(a + vllm(c.t, "INFO", "config.py", 468, "Padding mamba page size by 0.74% to ensure that mamba page size and attention page size are exactly equal."))
	c.ms(5400)
	c.out(e + vllm(c.t, "INFO", "core.py", 93, fmt.Sprintf("Initializing a V1 LLM engine (v0.17.1rc1) with config: model='%s', speculative_config=None, tokenizer='%s', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='qwen3', enable_in_reasoning=False), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, served_model_name=qwen3.5-122b, enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, compilation_config={'level': 3, 'debug_dump_path': None, 'cache_dir': '', 'backend': 'inductor', 'custom_ops': ['none'], 'splitting_ops': ['vllm::unified_attention', 'vllm::unified_attention_with_output', 'vllm::mamba_mixer2', 'vllm::mamba_mixer', 'vllm::short_conv', 'vllm::linear_attention', 'vllm::plamo2_mamba_mixer', 'vllm::gdn_attention', 'vllm::sparse_attn_indexer'], 'use_inductor': True, 'compile_sizes': [], 'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'use_cudagraph': True, 'cudagraph_num_of_warmups': 1, 'cudagraph_capture_sizes': [512, 496, 480, 464, 448, 432, 416, 400, 384, 368, 352, 336, 320, 304, 288, 272, 256, 240, 224, 208, 192, 176, 160, 144, 128, 112, 96, 80, 64, 48, 32, 24, 16, 8, 4, 2, 1], 'cudagraph_copy_inputs': False, 'full_cuda_graph': False, 'pass_config': {}, 'max_capture_size': 512, 'local_cache_dir': None}", model, model)))
	c.ms(30)
	c.out(e + vllm(c.t, "WARNING", "ray_utils.py", 393, "Tensor parallel size (2) exceeds available GPUs (1). This may result in Ray placement group allocation failures. Consider reducing tensor_parallel_size to 1 or less, or ensure your Ray cluster has 2 GPUs available."))
	c.ms(20)
	c.err(e + ray(c.t, "INFO", "worker.py", 1832, fmt.Sprintf("Connecting to existing Ray cluster at address: %s...", L.rayAddress)))
	c.ms(24)
	c.err(e + ray(c.t, "INFO", "worker.py", 2007, "Connected to Ray cluster."))
	c.ms(2)
	c.err(e + rayFutureW)
	c.err(e + "  warnings.warn(")
	c.ms(11)
	c.out(e + vllm(c.t, "INFO", "ray_utils.py", 428, "No current placement group found. Creating a new placement group."))
	specs := fmt.Sprintf("[{'node:%s': 0.001, 'GPU': 1.0}, {'GPU': 1.0}]", L.vllmHostIP)
	bundle := fmt.Sprintf("{'node:%s': 0.001, 'GPU': 1.0}", L.vllmHostIP)
	if L.failed {
		pg0 := c.t
		// _wait_until_pg_ready: ray.wait timeouts 10, 20, 40 ... s, logs int(elapsed).
		type ev struct {
			at   int
			kind string
		}
		evs := []ev{{10, "wait"}, {12, "tip"}, {12, "err"}, {30, "wait"}, {44, "err"}, {70, "wait"}, {76, "rep"}, {124, "status"}, {150, "wait"}, {191, "rep"}, {310, "wait"}, {630, "wait"}, {1270, "wait"}, {2550, "wait"}}
		for _, x := range evs {
			c.at(pg0.Add(time.Duration(x.at)*time.Second + time.Duration(c.rng.Intn(90))*time.Millisecond))
			switch x.kind {
			case "wait":
				c.out(e + vllm(c.t, "INFO", "ray_utils.py", 325, fmt.Sprintf("Waiting for creating a placement group of specs for %d seconds. specs=%s. Check `ray status` and `ray list nodes` to see if you have enough resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node.", x.at, specs)))
			case "tip":
				c.err(e + autoscaler("12s", false) + "Tip: use `ray status` to view detailed cluster status. To disable these messages, set RAY_SCHEDULER_EVENTS=0.")
			case "err":
				c.err(e + autoscaler(fmt.Sprintf("%ds", x.at), true) + fmt.Sprintf("Error: No available node types can fulfill resource request %s. Add suitable node types to this cluster to resolve this issue.", bundle))
			case "rep":
				n := 1
				if x.at > 100 {
					n = 3
				}
				suffix := fmt.Sprintf(" \x1b[32m[repeated %dx across cluster]\x1b[0m", n)
				if x.at < 100 {
					suffix += " (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)"
				}
				c.err(e + autoscaler(fmt.Sprintf("%ds", x.at-2), true) + fmt.Sprintf("Error: No available node types can fulfill resource request %s. Add suitable node types to this cluster to resolve this issue.", bundle) + suffix)
			case "status":
				// the launch script's watchdog prints `ray status` two minutes in
				c.err("+ ray status")
				c.ms(1300)
				rayStatus(c, L, true)
			}
		}
		c.ms(4)
		tb := failedEngineTraceback(specs)
		c.err(vllmMulti(e, c.t, "ERROR", "core.py", 866, "EngineCore failed to start.\n"+tb))
		c.ms(3)
		// multiprocessing's own report (raw stderr), then the API server's traceback,
		// interleaved line by line as both processes write concurrently.
		mp := strings.Split("Process EngineCore:\n"+strings.Replace(tb, "Traceback (most recent call last):\n", "Traceback (most recent call last):\n  File \"/usr/lib/python3.12/multiprocessing/process.py\", line 314, in _bootstrap\n    self.run()\n  File \"/usr/lib/python3.12/multiprocessing/process.py\", line 108, in run\n    self._target(*self._args, **self._kwargs)\n", 1), "\n")
		api := strings.Split(apiTraceback(), "\n")
		i, j := 0, 0
		for i < len(mp) || j < len(api) {
			if i < len(mp) {
				c.err(e + mp[i])
				i++
			}
			if i > 6 && j < len(api) && (c.rng.Intn(3) == 0 || i >= len(mp)) {
				c.err(a + api[j])
				j++
			}
		}
		c.ms(900)
		c.err("+ wait")
		return
	}
	// fixed: the placement group forms at once.
	c.ms(410)
	nodeHead, nodeWrk := L.headNode, L.wrkNode
	for _, n := range []string{nodeHead, nodeWrk} {
		c.out(e + vllm(c.t, "WARNING", "ray_utils.py", 271, fmt.Sprintf("tensor_parallel_size=2 is bigger than a reserved number of GPUs (1 GPUs) in a node %s. Tensor parallel workers can be spread out to 2+ nodes which can degrade the performance unless you have fast interconnect across nodes, like Infiniband. To resolve this issue, make sure you have more than 2 GPUs available at each node.", n)))
		c.ms(1)
	}
	c.out(e + vllm(c.t, "INFO", "ray_executor.py", 183, "RAY_CGRAPH_get_timeout is set to 300"))
	c.ms(3400)
	h, w := rw(L.headWorkerPID, ""), rw(L.remoteWorkerPID, L.workerRayIP)
	hp, wp := L.headWorkerPID, L.remoteWorkerPID
	// torch capability warning from both actors, interleaved (two processes, one stream)
	capw := []string{
		site + "/torch/cuda/__init__.py:283: UserWarning: ",
		"    Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.",
		"    Minimum and Maximum cuda capability supported by this version of PyTorch is",
		"    (8.0) - (12.0)",
		"    ",
		"  warnings.warn(",
	}
	for k, l := range capw {
		c.err(e + h + l)
		if k >= 1 {
			c.err(e + w + capw[k-1])
		}
	}
	c.err(e + w + capw[len(capw)-1])
	c.ms(600)
	c.ms(1800)
	port := 47113
	c.out(e + h + vllm(c.t, "INFO", "parallel_state.py", 1208, fmt.Sprintf("world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://%s:%d backend=nccl", L.headRayIP, port)))
	c.ms(40)
	c.out(e + w + vllm(c.t, "INFO", "parallel_state.py", 1208, fmt.Sprintf("world_size=2 rank=1 local_rank=0 distributed_init_method=tcp://%s:%d backend=nccl", L.headRayIP, port)))
	c.ms(700)
	// NCCL init, both ranks interleaved
	ncclH := ncclInit("spark-1", hp, 0, L.headRayIP, L.ncclIfname, "0x2a41f6c0", "rocep1s0f1")
	ncclW := ncclInit("spark-2", wp, 1, L.workerRayIP, L.ncclIfname, "0x3f0b9a20", "rocep1s0f1")
	for k := 0; k < len(ncclH) || k < len(ncclW); k++ {
		if k < len(ncclH) {
			c.out(e + h + ncclH[k])
		}
		c.adv(time.Duration(200+c.rng.Intn(3000)) * time.Microsecond)
		if k < len(ncclW) {
			l := ncclW[k]
			if strings.Contains(l, "NET/Plugin: Could not find") || strings.Contains(l, "ENV/Plugin") {
				l += " \x1b[32m[repeated 1x across cluster]\x1b[0m"
				if k < 2 {
					l += " (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)"
				}
			}
			c.out(e + w + l)
		}
		c.adv(time.Duration(100+c.rng.Intn(2000)) * time.Microsecond)
	}
	c.ms(300)
	c.out(e + h + vllm(c.t, "INFO", "pynccl.py", 103, "vLLM is using nccl==2.28.9"))
	c.out(e + w + vllm(c.t, "INFO", "pynccl.py", 103, "vLLM is using nccl==2.28.9"))
	c.ms(900)
	c.out(e + h + vllm(c.t, "INFO", "parallel_state.py", 1423, "rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, EP rank 0"))
	c.out(e + w + vllm(c.t, "INFO", "parallel_state.py", 1423, "rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 1, EP rank 1"))
	c.ms(500)
	c.out(e + h + vllm(c.t, "INFO", "gpu_model_runner.py", 3071, fmt.Sprintf("Starting to load model %s...", model)))
	c.out(e + w + vllm(c.t, "INFO", "gpu_model_runner.py", 3071, fmt.Sprintf("Starting to load model %s...", model)))
	c.ms(1200)
	c.out(e + h + vllm(c.t, "INFO", "cuda.py", 411, "Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN']"))
	c.out(e + w + vllm(c.t, "INFO", "cuda.py", 411, "Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN']"))
	c.ms(2200)
	// tqdm progress bar of the head actor: one "\n"-terminated line full of "\r" updates
	var pb strings.Builder
	start := c.t
	for s := 0; s <= 39; s++ {
		el := time.Duration(s) * 12870 * time.Millisecond
		if s == 0 {
			pb.WriteString("Loading safetensors checkpoint shards:   0% Completed | 0/39 [00:00<?, ?it/s]\r")
			continue
		}
		rem := time.Duration(39-s) * 12870 * time.Millisecond
		pb.WriteString(fmt.Sprintf("Loading safetensors checkpoint shards: %3d%% Completed | %d/39 [%s<%s, 12.87s/it]\r", s*100/39, s, mmss(el), mmss(rem)))
	}
	c.at(start.Add(39 * 12870 * time.Millisecond))
	c.err(e + h + strings.TrimSuffix(pb.String(), "\r"))
	c.err(e + h)
	c.ms(3)
	c.out(e + h + vllm(c.t, "INFO", "default_loader.py", 314, "Loading weights took 502.14 seconds"))
	c.ms(2900)
	c.out(e + w + vllm(c.t, "INFO", "default_loader.py", 314, "Loading weights took 505.61 seconds"))
	c.ms(1400)
	c.out(e + h + vllm(c.t, "INFO", "gpu_model_runner.py", 3153, "Model loading took 58.7312 GiB memory and 509.882106 seconds"))
	c.out(e + w + vllm(c.t, "INFO", "gpu_model_runner.py", 3153, "Model loading took 58.7312 GiB memory and 511.029331 seconds"))
	c.ms(19000)
	c.out(e + h + vllm(c.t, "INFO", "backends.py", 548, "Using cache directory: /root/.cache/vllm/torch_compile_cache/4f1c2a9b7e/rank_0_0/backbone for vLLM's torch.compile"))
	c.out(e + h + vllm(c.t, "INFO", "backends.py", 559, "Dynamo bytecode transform time: 17.42 s"))
	c.ms(31000)
	c.out(e + h + vllm(c.t, "INFO", "monitor.py", 34, "torch.compile takes 48.91 s in total"))
	c.out(e + w + vllm(c.t, "INFO", "monitor.py", 34, "torch.compile takes 49.37 s in total \x1b[32m[repeated 1x across cluster]\x1b[0m"))
	c.ms(4000)
	c.out(e + h + vllm(c.t, "INFO", "gpu_worker.py", 298, "Available KV cache memory: 31.84 GiB"))
	c.out(e + w + vllm(c.t, "INFO", "gpu_worker.py", 298, "Available KV cache memory: 31.84 GiB"))
	c.ms(40)
	c.out(e + vllm(c.t, "INFO", "kv_cache_utils.py", 1087, "GPU KV cache size: 1,337,696 tokens, Maximum concurrency for 32,768 tokens per request: 40.82x"))
	c.ms(38000)
	c.out(e + h + vllm(c.t, "INFO", "gpu_model_runner.py", 3989, "Graph capturing finished in 37 secs, took 1.12 GiB"))
	c.out(e + w + vllm(c.t, "INFO", "gpu_model_runner.py", 3989, "Graph capturing finished in 38 secs, took 1.12 GiB"))
	c.ms(200)
	c.out(e + vllm(c.t, "INFO", "core.py", 218, "init engine (profile, create kv cache, warmup model) took 98.61 seconds"))
	c.ms(1300)
	c.out(a + vllm(c.t, "INFO", "loggers.py", 177, "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 2459"))
	c.out(a + vllm(c.t, "INFO", "api_server.py", 1634, "Supported_tasks: ['generate']"))
	c.ms(80)
	c.out(a + vllm(c.t, "WARNING", "serving_responses.py", 151, "Default sampling parameters have been overridden by the model's Hugging Face generation config recommended from the model creator. If this is not intended, please relaunch vLLM instance with `--generation-config vllm`."))
	c.ms(60)
	c.out(a + vllm(c.t, "INFO", "api_server.py", 1966, "Starting vLLM API server 0 on http://0.0.0.0:8000"))
	c.out(a + vllm(c.t, "INFO", "launcher.py", 34, "Available routes are:"))
	for _, r := range []string{"/openapi.json, Methods: GET, HEAD", "/docs, Methods: GET, HEAD", "/health, Methods: GET", "/load, Methods: GET", "/ping, Methods: POST", "/ping, Methods: GET", "/tokenize, Methods: POST", "/detokenize, Methods: POST", "/v1/models, Methods: GET", "/version, Methods: GET", "/v1/responses, Methods: POST", "/v1/chat/completions, Methods: POST", "/v1/completions, Methods: POST", "/metrics, Methods: GET"} {
		c.out(a + vllm(c.t, "INFO", "launcher.py", 42, "Route: "+r))
	}
	c.out(a + fmt.Sprintf("INFO:     Started server process [%d]", apiPID))
	c.out(a + "INFO:     Waiting for application startup.")
	c.ms(150)
	c.out(a + "INFO:     Application startup complete.")
	c.ms(41000)
	c.out(a + "INFO:     10.1.230.50:51234 - \"GET /v1/models HTTP/1.1\" 200 OK")
	c.ms(3100)
	c.out(a + "INFO:     10.1.230.50:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK")
	c.ms(9800)
	c.out(a + vllm(c.t, "INFO", "loggers.py", 236, "Engine 000: Avg prompt throughput: 3.1 tokens/s, Avg generation throughput: 22.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%"))
	c.ms(6200)
	c.out(a + "INFO:     10.1.230.50:51238 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK")
	c.ms(4000)
	c.out(a + vllm(c.t, "INFO", "loggers.py", 236, "Engine 000: Avg prompt throughput: 21.7 tokens/s, Avg generation throughput: 27.3 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 41.2%"))
	c.ms(10000)
	c.out(a + vllm(c.t, "INFO", "loggers.py", 236, "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 41.2%"))
}

func mmss(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

func rayStartHead(c *clog, L *launch) string {
	// record-mode cli_logger output (stdout is not a TTY in the container)
	t := c.t
	var b []string
	add := func(lvl string, line int, msg string) { b = append(b, ray(t, lvl, "scripts.py", line, msg)) }
	add("INFO", 926, "Local node IP: "+L.headRayIP)
	t = t.Add(2417 * time.Millisecond)
	add("SUCC", 962, "--------------------")
	add("SUCC", 963, "Ray runtime started.")
	add("SUCC", 964, "--------------------")
	add("INFO", 966, "Next steps")
	add("INFO", 969, "To add another node to this Ray cluster, run")
	add("INFO", 972, fmt.Sprintf("  ray start --address='%s:6379'", L.headRayIP))
	add("INFO", 981, "To connect to this Ray cluster:")
	add("INFO", 983, "  import ray")
	add("INFO", 984, fmt.Sprintf("  ray.init(_node_ip_address='%s')", L.headFlagIP))
	add("INFO", 1016, "To terminate the Ray runtime, run")
	add("INFO", 1017, "  ray stop")
	add("INFO", 1020, "To view the status of the cluster, use")
	add("INFO", 1021, "  ray status")
	add("INFO", 1134, "--block")
	add("INFO", 1135, "This command will now block forever until terminated by a signal.")
	add("INFO", 1138, "Running subprocesses are monitored and a message will be printed if any of them terminate unexpectedly. Subprocesses exit with SIGTERM will be treated as graceful, thus NOT reported.")
	c.at(t)
	return strings.Join(b, "\n")
}

func rayStatus(c *clog, L *launch, pending bool) {
	demand := " (no resource demands)"
	if pending {
		demand = fmt.Sprintf(" {'node:%s': 0.001, 'GPU': 1.0} * 1, {'GPU': 1.0} * 1 (PACK): 1+ pending placement groups", L.vllmHostIP)
	}
	c.out(fmt.Sprintf(`======== Autoscaler status: %s.%06d ========
Node status
---------------------------------------------------------------
Active:
 1 node_%s
 1 node_%s
Idle:
 (no idle nodes)
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/40.0 CPU
 0.0/2.0 GPU
 0B/167.24GiB memory
 0B/71.67GiB object_store_memory

Total Constraints:
 (no request_resources() constraints)
Total Demands:
%s`, c.t.Format("2006-01-02 15:04:05"), c.t.Nanosecond()/1000, L.headNode, L.wrkNode, demand))
}

func failedEngineTraceback(specs string) string {
	return `Traceback (most recent call last):
  File "` + site + `/vllm/v1/engine/core.py", line 857, in run_engine_core
    engine_core = EngineCoreProc(*args, **kwargs)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "` + site + `/vllm/v1/engine/core.py", line 637, in __init__
    super().__init__(
  File "` + site + `/vllm/v1/engine/core.py", line 102, in __init__
    self.model_executor = executor_class(vllm_config)
                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "` + site + `/vllm/v1/executor/abstract.py", line 101, in __init__
    self._init_executor()
  File "` + site + `/vllm/v1/executor/ray_executor.py", line 97, in _init_executor
    initialize_ray_cluster(self.parallel_config)
  File "` + site + `/vllm/v1/executor/ray_utils.py", line 446, in initialize_ray_cluster
    _wait_until_pg_ready(current_placement_group)
  File "` + site + `/vllm/v1/executor/ray_utils.py", line 337, in _wait_until_pg_ready
    raise ValueError(
ValueError: Cannot provide a placement group of placement_group_specs=` + specs + ` within 1800 seconds. See ` + "`ray status` and `ray list nodes`" + ` to make sure the cluster has enough resources.`
}

func apiTraceback() string {
	v := site + "/vllm"
	return `Traceback (most recent call last):
  File "/opt/vllm-env/bin/vllm", line 10, in <module>
    sys.exit(main())
             ^^^^^^
  File "` + v + `/entrypoints/cli/main.py", line 73, in main
    args.dispatch_function(args)
  File "` + v + `/entrypoints/cli/serve.py", line 60, in cmd
    uvloop.run(run_server(args))
  File "` + site + `/uvloop/__init__.py", line 96, in run
    return __asyncio.run(
           ^^^^^^^^^^^^^^
  File "/usr/lib/python3.12/asyncio/runners.py", line 195, in run
    return runner.run(main)
           ^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.12/asyncio/runners.py", line 118, in run
    return self._loop.run_until_complete(task)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "uvloop/loop.pyx", line 1518, in uvloop.loop.Loop.run_until_complete
  File "` + site + `/uvloop/__init__.py", line 48, in wrapper
    return await main
           ^^^^^^^^^^
  File "` + v + `/entrypoints/openai/api_server.py", line 1997, in run_server
    await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)
  File "` + v + `/entrypoints/openai/api_server.py", line 2016, in run_server_worker
    async with build_async_engine_client(
  File "/usr/lib/python3.12/contextlib.py", line 210, in __aenter__
    return await anext(self.gen)
           ^^^^^^^^^^^^^^^^^^^^^
  File "` + v + `/entrypoints/openai/api_server.py", line 182, in build_async_engine_client
    async with build_async_engine_client_from_engine_args(
  File "/usr/lib/python3.12/contextlib.py", line 210, in __aenter__
    return await anext(self.gen)
           ^^^^^^^^^^^^^^^^^^^^^
  File "` + v + `/entrypoints/openai/api_server.py", line 223, in build_async_engine_client_from_engine_args
    async_llm = AsyncLLM.from_vllm_config(
                ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "` + v + `/v1/engine/async_llm.py", line 223, in from_vllm_config
    return cls(
           ^^^^
  File "` + v + `/v1/engine/async_llm.py", line 134, in __init__
    self.engine_core = EngineCoreClient.make_async_mp_client(
                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "` + v + `/v1/engine/core_client.py", line 121, in make_async_mp_client
    return AsyncMPClient(*client_args)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "` + v + `/v1/engine/core_client.py", line 808, in __init__
    super().__init__(
  File "` + v + `/v1/engine/core_client.py", line 469, in __init__
    with launch_core_engines(vllm_config, executor_class, log_stats) as (
  File "/usr/lib/python3.12/contextlib.py", line 144, in __exit__
    next(self.gen)
  File "` + v + `/v1/engine/utils.py", line 907, in launch_core_engines
    wait_for_engine_startup(
  File "` + v + `/v1/engine/utils.py", line 964, in wait_for_engine_startup
    raise RuntimeError(
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}`
}

// ncclInit returns one rank's NCCL INFO lines (NCCL 2.28.9 wording).
func ncclInit(host string, pid, rank int, ip, ifname, comm, hca string) []string {
	p := fmt.Sprintf("%s:%d:%d [0] NCCL INFO ", host, pid, pid)
	px := func(tid int) string { return fmt.Sprintf("%s:%d:%d [0] NCCL INFO ", host, pid, tid) }
	peer := 1 - rank
	l := []string{
		p + "ENV/Plugin: Could not find: libnccl-env.so",
		p + "NCCL_SOCKET_IFNAME set by environment to " + ifname,
		p + "Bootstrap: Using " + ifname + ":" + ip + "<0>",
		p + "cudaDriverVersion 13000",
		p + "NCCL version 2.28.9+cuda13.0",
		p + "Comm config Blocking set to 1",
		p + "NET/Plugin: Could not find: libnccl-net.so",
		p + "NCCL_IB_HCA set to " + hca,
		p + "NET/IB : Using [0]" + hca + ":1/RoCE [RO]; OOB " + ifname + ":" + ip + "<0>",
		p + "Initialized NET plugin IB",
		p + "Assigned NET plugin IB to comm",
		p + "Using network IB",
		p + fmt.Sprintf("ncclCommInitRankConfig comm %s rank %d nranks 2 cudaDev 0 nvmlDev 0 busId f01000 commId 0x9c5e27d4b1a08f36 - Init START", comm, rank),
		p + "RAS client listening socket at 127.0.0.1<28028>",
		p + fmt.Sprintf("Bootstrap timings total 0.%06d (create 0.000051, send 0.000190, recv 0.%06d, ring 0.000412, delay 0.000001)", 38211+rank*901, 36877+rank*13),
		p + "MNNVL busId 0xf01000 fabric UUID 0.0 cliqueId 0x0 state 3 healthMask 0x0",
		p + fmt.Sprintf("comm %s rank %d nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0", comm, rank),
	}
	if rank == 0 {
		l = append(l, p+"Channel 00/02 : 0 1", p+"Channel 01/02 : 0 1",
			p+"Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1")
	} else {
		l = append(l, p+"Trees [0] -1/-1/-1->1->0 [1] 0/-1/-1->1->-1")
	}
	l = append(l,
		p+"P2P Chunksize set to 131072",
		p+"PROFILER/Plugin: Could not find: libnccl-profiler.so",
		px(pid+77)+"[Proxy Service] Device 0 CPU core 11",
		px(pid+78)+"[Proxy Service UDS] Device 0 CPU core 12",
		p+"TUNER/Plugin: Could not find: libnccl-tuner.so",
		p+"threadThresholds 8/8/64 | 16/8/64 | 512 | 512",
		p+"2 coll channels, 2 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer",
		p+"CC Off, workFifoBytes 1048576",
		p+fmt.Sprintf("ncclCommInitRankConfig comm %s rank %d nranks 2 cudaDev 0 nvmlDev 0 busId f01000 commId 0x9c5e27d4b1a08f36 - Init COMPLETE", comm, rank),
		p+fmt.Sprintf("Init timings - ncclCommInitRankConfig: rank %d nranks 2 total 0.47 (kernels 0.21, alloc 0.03, bootstrap 0.04, allgathers 0.01, topo 0.09, graphs 0.00, connections 0.06, rest 0.03)", rank),
		px(pid+81)+fmt.Sprintf("Channel 00/0 : %d[0] -> %d[0] [receive] via NET/IB/0", peer, rank),
		px(pid+81)+fmt.Sprintf("Channel 01/0 : %d[0] -> %d[0] [receive] via NET/IB/0", peer, rank),
		px(pid+81)+fmt.Sprintf("Channel 00/0 : %d[0] -> %d[0] [send] via NET/IB/0", rank, peer),
		px(pid+81)+fmt.Sprintf("Channel 01/0 : %d[0] -> %d[0] [send] via NET/IB/0", rank, peer),
		px(pid+81)+"Connected all rings, use ring PXN 0 GDR 1",
	)
	return l
}

// registryDump is the one-line repr of vLLM's ModelRegistry.models that the
// launch script prints to check that the image knows Qwen3.5 (> 16 KiB).
func registryDump() string {
	var b strings.Builder
	b.WriteString("{")
	for i, e := range registry {
		k, m, _ := strings.Cut(e, "=")
		cls := k
		if j := strings.IndexByte(m, ':'); j >= 0 {
			cls = m[j+1:]
			m = m[:j]
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "'%s': _LazyRegisteredModel(module_name='vllm.model_executor.models.%s', class_name='%s')", k, m, cls)
	}
	b.WriteString("}")
	return b.String()
}

var registry = strings.Fields(`
AfmoeForCausalLM=afmoe ApertusForCausalLM=apertus AquilaModel=llama:LlamaForCausalLM AquilaForCausalLM=llama:LlamaForCausalLM
ArceeForCausalLM=arcee ArcticForCausalLM=arctic BaiChuanForCausalLM=baichuan BaichuanForCausalLM=baichuan
BailingMoeForCausalLM=bailing_moe BailingMoeV2ForCausalLM=bailing_moe BambaForCausalLM=bamba BloomForCausalLM=bloom
ChatGLMModel=chatglm:ChatGLMForCausalLM ChatGLMForConditionalGeneration=chatglm:ChatGLMForCausalLM CohereForCausalLM=commandr
Cohere2ForCausalLM=commandr:CohereForCausalLM CwmForCausalLM=llama:LlamaForCausalLM DbrxForCausalLM=dbrx
DeciLMForCausalLM=nemotron_nas DeepseekForCausalLM=deepseek DeepseekV2ForCausalLM=deepseek_v2 DeepseekV3ForCausalLM=deepseek_v2
DeepseekV32ForCausalLM=deepseek_v2:DeepseekV3ForCausalLM Dots1ForCausalLM=dots1 Ernie4_5ForCausalLM=ernie45
Ernie4_5_MoeForCausalLM=ernie45_moe ExaoneForCausalLM=exaone Exaone4ForCausalLM=exaone4 FalconForCausalLM=falcon
Fairseq2LlamaForCausalLM=fairseq2_llama GemmaForCausalLM=gemma Gemma2ForCausalLM=gemma2 Gemma3ForCausalLM=gemma3
Gemma3nForCausalLM=gemma3n Qwen3NextForCausalLM=qwen3_next GlmForCausalLM=glm Glm4ForCausalLM=glm4
Glm4MoeForCausalLM=glm4_moe GptOssForCausalLM=gpt_oss GPT2LMHeadModel=gpt2 GPTBigCodeForCausalLM=gpt_bigcode
GPTJForCausalLM=gpt_j GPTNeoXForCausalLM=gpt_neox GraniteForCausalLM=granite GraniteMoeForCausalLM=granitemoe
GraniteMoeHybridForCausalLM=granitemoehybrid GraniteMoeSharedForCausalLM=granitemoeshared GritLM=gritlm
Grok1ModelForCausalLM=grok1:Grok1ForCausalLM HunYuanMoEV1ForCausalLM=hunyuan_v1:HunYuanMoEV1ForCausalLM
HunYuanDenseV1ForCausalLM=hunyuan_v1:HunYuanDenseV1ForCausalLM HCXVisionForCausalLM=hyperclovax_vision
InternLMForCausalLM=llama:LlamaForCausalLM InternLM2ForCausalLM=internlm2 InternLM2VEForCausalLM=internlm2_ve
InternLM3ForCausalLM=llama:LlamaForCausalLM JAISLMHeadModel=jais JambaForCausalLM=jamba KimiLinearForCausalLM=kimi_linear
Lfm2ForCausalLM=lfm2 Lfm2MoeForCausalLM=lfm2_moe LlamaForCausalLM=llama Llama4ForCausalLM=llama4
LLaMAForCausalLM=llama:LlamaForCausalLM LongcatFlashForCausalLM=longcat_flash MambaForCausalLM=mamba
FalconMambaForCausalLM=mamba:MambaForCausalLM FalconH1ForCausalLM=falcon_h1 Mamba2ForCausalLM=mamba2
MiniCPMForCausalLM=minicpm MiniCPM3ForCausalLM=minicpm3 MiniMaxForCausalLM=minimax_text_01:MiniMaxText01ForCausalLM
MiniMaxText01ForCausalLM=minimax_text_01 MiniMaxM1ForCausalLM=minimax_text_01:MiniMaxText01ForCausalLM
MiniMaxM2ForCausalLM=minimax_m2 MistralForCausalLM=llama:LlamaForCausalLM MixtralForCausalLM=mixtral
MotifForCausalLM=motif MptForCausalLM=mpt MPTForCausalLM=mpt:MptForCausalLM MiMoForCausalLM=mimo
NemotronForCausalLM=nemotron NemotronHForCausalLM=nemotron_h OlmoForCausalLM=olmo Olmo2ForCausalLM=olmo2
Olmo3ForCausalLM=olmo2:Olmo2ForCausalLM OlmoeForCausalLM=olmoe OPTForCausalLM=opt OrionForCausalLM=orion
OuroForCausalLM=ouro PanguEmbeddedForCausalLM=openpangu PanguUltraMoEForCausalLM=openpangu PersimmonForCausalLM=persimmon
PhiForCausalLM=phi Phi3ForCausalLM=phi3 PhiMoEForCausalLM=phimoe Plamo2ForCausalLM=plamo2 QWenLMHeadModel=qwen
Qwen2ForCausalLM=qwen2 Qwen2MoeForCausalLM=qwen2_moe Qwen3ForCausalLM=qwen3 Qwen3MoeForCausalLM=qwen3_moe
RWForCausalLM=falcon:FalconForCausalLM SeedOssForCausalLM=seed_oss Step3TextForCausalLM=step3_text
StableLMEpochForCausalLM=stablelm:StablelmForCausalLM StableLmForCausalLM=stablelm:StablelmForCausalLM
Starcoder2ForCausalLM=starcoder2 SolarForCausalLM=solar TeleChat2ForCausalLM=telechat2 TeleFLMForCausalLM=teleflm
XverseForCausalLM=llama:LlamaForCausalLM Zamba2ForCausalLM=zamba2 BertModel=bert Gemma2Model=gemma2:Gemma2ForCausalLM
GteModel=bert_with_rope:SnowflakeGteNewModel GteNewModel=bert_with_rope LlamaModel=llama:LlamaForCausalLM
MistralModel=llama:LlamaForCausalLM ModernBertModel=modernbert NomicBertModel=bert_with_rope Qwen2Model=qwen2:Qwen2ForCausalLM
Qwen3Model=qwen3:Qwen3ForCausalLM RobertaModel=roberta RobertaForMaskedLM=roberta XLMRobertaModel=roberta:RobertaEmbeddingModel
LlavaNextForConditionalGeneration=llava_next Phi3VForCausalLM=phi3v Qwen2VLForConditionalGeneration=qwen2_vl
PrithviGeoSpatialMAE=terratorch:Terratorch BertForSequenceClassification=bert
GteNewForSequenceClassification=bert_with_rope JambaForSequenceClassification=jamba
ModernBertForSequenceClassification=modernbert RobertaForSequenceClassification=roberta
XLMRobertaForSequenceClassification=roberta:RobertaForSequenceClassification AriaForConditionalGeneration=aria
AyaVisionForConditionalGeneration=aya_vision BeeForConditionalGeneration=bee Blip2ForConditionalGeneration=blip2
ChameleonForConditionalGeneration=chameleon Cohere2VisionForConditionalGeneration=cohere2_vision
DeepseekVLV2ForCausalLM=deepseek_vl2 DeepseekOCRForCausalLM=deepseek_ocr DotsOCRForCausalLM=dots_ocr
Ernie4_5_VLMoeForConditionalGeneration=ernie45_vl FuyuForCausalLM=fuyu Gemma3ForConditionalGeneration=gemma3_mm
Gemma3nForConditionalGeneration=gemma3n_mm GLM4VForCausalLM=glm4v Glm4vForConditionalGeneration=glm4_1v
Glm4vMoeForConditionalGeneration=glm4_1v GraniteSpeechForConditionalGeneration=granite_speech
H2OVLChatModel=h2ovl HunYuanVLForConditionalGeneration=hunyuan_vision InternVLChatModel=internvl
NemotronH_Nano_VL_V2=nano_nemotron_vl InternS1ForConditionalGeneration=interns1 InternVLForConditionalGeneration=interns1
Idefics3ForConditionalGeneration=idefics3 SmolVLMForConditionalGeneration=smolvlm KeyeForConditionalGeneration=keye
KimiVLForConditionalGeneration=kimi_vl LightOnOCRForConditionalGeneration=lightonocr
Llama_Nemotron_Nano_VL=nemotron_vl:LlamaNemotronVLChatModel Llama4ForConditionalGeneration=mllama4
LlavaForConditionalGeneration=llava LlavaNextVideoForConditionalGeneration=llava_next_video
LlavaOnevisionForConditionalGeneration=llava_onevision MantisForConditionalGeneration=llava
MiDashengLMModel=midashenglm MiniMaxVL01ForConditionalGeneration=minimax_vl_01 MiniCPMO=minicpmo MiniCPMV=minicpmv
Mistral3ForConditionalGeneration=mistral3 MolmoForCausalLM=molmo NVLM_D=nvlm_d Ovis=ovis Ovis2_5=ovis2_5
PaddleOCRVLForConditionalGeneration=paddleocr_vl PaliGemmaForConditionalGeneration=paligemma
Phi4MMForCausalLM=phi4mm Phi4MultimodalForCausalLM=phi4_multimodal PixtralForConditionalGeneration=pixtral
QwenVLForConditionalGeneration=qwen_vl Qwen2_5_VLForConditionalGeneration=qwen2_5_vl
Qwen2AudioForConditionalGeneration=qwen2_audio Qwen2_5OmniModel=qwen2_5_omni_thinker:Qwen2_5OmniThinkerForConditionalGeneration
Qwen2_5OmniForConditionalGeneration=qwen2_5_omni_thinker:Qwen2_5OmniThinkerForConditionalGeneration
Qwen3OmniMoeForConditionalGeneration=qwen3_omni_moe_thinker:Qwen3OmniMoeThinkerForConditionalGeneration
Qwen3VLForConditionalGeneration=qwen3_vl Qwen3VLMoeForConditionalGeneration=qwen3_vl_moe
Qwen3_5ForConditionalGeneration=qwen3_5 Qwen3_5MoeForConditionalGeneration=qwen3_5_moe
SkyworkR1VChatModel=skyworkr1v Step3VLForConditionalGeneration=step3_vl TarsierForConditionalGeneration=tarsier
Tarsier2ForConditionalGeneration=qwen2_vl:Tarsier2ForConditionalGeneration UltravoxModel=ultravox
VoxtralForConditionalGeneration=voxtral WhisperForConditionalGeneration=whisper MiMoMTPModel=mimo_mtp:MiMoMTP
EagleLlamaForCausalLM=llama_eagle EagleLlama4ForCausalLM=llama4_eagle EagleMiniCPMForCausalLM=minicpm_eagle
Eagle3LlamaForCausalLM=llama_eagle3 LlamaForCausalLMEagle3=llama_eagle3:Eagle3LlamaForCausalLM
EagleDeepSeekMTPModel=deepseek_eagle:EagleDeepseekV3ForCausalLM DeepSeekMTPModel=deepseek_mtp:DeepSeekMTP
ErnieMTPModel=ernie_mtp:ErnieMTP LongCatFlashMTPModel=longcat_flash_mtp:LongCatFlashMTP Glm4MoeMTPModel=glm4_moe_mtp:Glm4MoeMTP
MedusaModel=medusa:Medusa Qwen3NextMTP=qwen3_next_mtp Qwen3_5MoeMTP=qwen3_5_mtp MLPSpeculatorPreTrainedModel=mlp_speculator:MLPSpeculator
SmolLM3ForCausalLM=transformers:TransformersForCausalLM TransformersForCausalLM=transformers
TransformersForMultimodalLM=transformers:TransformersMultiModalForCausalLM TransformersMoEForCausalLM=transformers_moe
TransformersMoEForMultimodalLM=transformers_moe:TransformersMoEForMultimodalLM TransformersEmbeddingModel=transformers_pooling
TransformersForSequenceClassification=transformers_pooling TransformersMoEEmbeddingModel=transformers_pooling
`)

// ---------------------------------------------------------------------------
// worker container (spark-2)

func workerContainer(c *clog, L *launch) {
	c.at(L.start.Add(11*time.Second + 273*time.Millisecond))
	c.err(fmt.Sprintf("+ ray start --address=%s --node-ip-address=%s --num-gpus=1 --disable-usage-stats --block", L.rayAddress, L.workerFlagIP))
	c.ms(1700)
	t := c.t
	var b []string
	add := func(lvl string, line int, msg string) { b = append(b, ray(t, lvl, "scripts.py", line, msg)) }
	add("INFO", 1107, "Local node IP: "+L.workerRayIP)
	t = t.Add(1388 * time.Millisecond)
	add("SUCC", 1123, "--------------------")
	add("SUCC", 1124, "Ray runtime started.")
	add("SUCC", 1125, "--------------------")
	add("INFO", 1127, "To terminate the Ray runtime, run")
	add("INFO", 1128, "  ray stop")
	add("INFO", 1134, "--block")
	add("INFO", 1135, "This command will now block forever until terminated by a signal.")
	add("INFO", 1138, "Running subprocesses are monitored and a message will be printed if any of them terminate unexpectedly. Subprocesses exit with SIGTERM will be treated as graceful, thus NOT reported.")
	c.at(t)
	c.out(strings.Join(b, "\n"))
}

// ---------------------------------------------------------------------------
// Ray session files

func headRay(L *launch, rng *rand.Rand) map[string]string {
	gcs, rl, mon, monOut := &plain{}, &plain{}, &plain{}, &plain{}
	t0 := L.start.Add(1900 * time.Millisecond)
	gpid, rpid := 58, 121
	gcs.l(cpp(t0, "I", gpid, gpid, "gcs_server", "io_service_pool.cc", 35, "IOServicePool is running with 1 io_service."))
	gcs.l(cpp(t0.Add(2*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_server.cc", 77, "GCS storage type is StorageType::IN_MEMORY"))
	gcs.l(cpp(t0.Add(3*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_init_data.cc", 44, "Loading job table data."))
	gcs.l(cpp(t0.Add(3*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_init_data.cc", 56, "Loading node table data."))
	gcs.l(cpp(t0.Add(4*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_init_data.cc", 81, "Loading actor table data."))
	gcs.l(cpp(t0.Add(4*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_init_data.cc", 107, "Loading placement group table data."))
	gcs.l(cpp(t0.Add(5*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_init_data.cc", 60, "Finished loading node table data, size = 0"))
	gcs.l(cpp(t0.Add(9*time.Millisecond), "I", gpid, gpid, "gcs_server", "grpc_server.cc", 143, "GcsServer server started, listening on port 6379."))
	gcs.l(cpp(t0.Add(11*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_server.cc", 282, "Gcs Debug state:"))
	gcs.l(cpp(t0.Add(12*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_server.cc", 879, "Main service Event stats:"))
	tr := t0.Add(640 * time.Millisecond)
	gcs.l(cpp(tr, "I", gpid, gpid, "gcs_server", "gcs_node_manager.cc", 85, fmt.Sprintf("Registering node info, node id = %s, address = %s, node name = %s", L.headNode, L.headRayIP, L.headRayIP)))
	gcs.l(cpp(tr.Add(1*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_node_manager.cc", 101, fmt.Sprintf("Finished registering node info, node id = %s, address = %s, node name = %s", L.headNode, L.headRayIP, L.headRayIP)))
	tw := L.start.Add(14*time.Second + 402*time.Millisecond)
	gcs.l(cpp(tw, "I", gpid, gpid, "gcs_server", "gcs_node_manager.cc", 85, fmt.Sprintf("Registering node info, node id = %s, address = %s, node name = %s", L.wrkNode, L.workerRayIP, L.workerRayIP)))
	gcs.l(cpp(tw.Add(1*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_node_manager.cc", 101, fmt.Sprintf("Finished registering node info, node id = %s, address = %s, node name = %s", L.wrkNode, L.workerRayIP, L.workerRayIP)))
	tj := L.start.Add(41*time.Second + 612*time.Millisecond)
	gcs.l(cpp(tj, "I", gpid, gpid, "gcs_server", "gcs_job_manager.cc", 140, "Finished marking job state, job id = 01000000"))
	pgID := hexID(rng, 36)
	gcs.l(cpp(tj.Add(61*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_placement_group_manager.cc", 76, fmt.Sprintf("Registering placement group, placement group id = %s, name = , strategy = 0", pgID)))
	gcs.l(cpp(tj.Add(62*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_placement_group_manager.cc", 286, fmt.Sprintf("Finished registering placement group, placement group id = %s, name = , strategy = 0", pgID)))
	if L.failed {
		for k, s := range []int{0, 1, 3, 7, 15} {
			gcs.l(cpp(tj.Add(time.Duration(s)*time.Second+time.Duration(63+k)*time.Millisecond), "I", gpid, gpid+11, "gcs_server", "gcs_placement_group_manager.cc", 312, fmt.Sprintf("Failed to schedule placement group %s, because current resources can't satisfy the required resource. IsRetry: %d", pgID, min(k, 1))))
		}
		gcs.l(cpp(tj.Add(2550*time.Second+512*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_job_manager.cc", 140, "Finished marking job state, job id = 01000000"))
	} else {
		gcs.l(cpp(tj.Add(70*time.Millisecond), "I", gpid, gpid+11, "gcs_server", "gcs_placement_group_scheduler.cc", 164, fmt.Sprintf("Preparing resource from node %s for bundles: {placement group id=%s, bundle index=0}, ", L.headNode, pgID)))
		gcs.l(cpp(tj.Add(70*time.Millisecond), "I", gpid, gpid+11, "gcs_server", "gcs_placement_group_scheduler.cc", 164, fmt.Sprintf("Preparing resource from node %s for bundles: {placement group id=%s, bundle index=1}, ", L.wrkNode, pgID)))
		gcs.l(cpp(tj.Add(75*time.Millisecond), "I", gpid, gpid+11, "gcs_server", "gcs_placement_group_scheduler.cc", 185, fmt.Sprintf("Committing resource to a node %s for bundles: {placement group id=%s, bundle index=0}, ", L.headNode, pgID)))
		gcs.l(cpp(tj.Add(75*time.Millisecond), "I", gpid, gpid+11, "gcs_server", "gcs_placement_group_scheduler.cc", 185, fmt.Sprintf("Committing resource to a node %s for bundles: {placement group id=%s, bundle index=1}, ", L.wrkNode, pgID)))
		gcs.l(cpp(tj.Add(79*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_placement_group_manager.cc", 321, fmt.Sprintf("Successfully created placement group %s, id: %s", "_", pgID)))
		gcs.l(cpp(tj.Add(301*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_actor_manager.cc", 1725, fmt.Sprintf("Actor created successfully job_id=01000000 actor_id=%s", hexID(rng, 32))))
		gcs.l(cpp(tj.Add(335*time.Millisecond), "I", gpid, gpid, "gcs_server", "gcs_actor_manager.cc", 1725, fmt.Sprintf("Actor created successfully job_id=01000000 actor_id=%s", hexID(rng, 32))))
	}

	// raylet.out (head)
	tr0 := L.start.Add(2300 * time.Millisecond)
	raylet(rl, tr0, rpid, L.headNode, L.headRayIP, "spark-1", 36981, 44123, L.failed, L.headWorkerPID)

	// monitor.log / monitor.out (autoscaler v1 monitor on the head)
	tm := L.start.Add(2800 * time.Millisecond)
	mon.l(ray(tm, "INFO", "monitor.py", 689, "Starting monitor using ray installation: "+site+"/ray/__init__.py"))
	mon.l(ray(tm, "INFO", "monitor.py", 690, "Ray version: 2.53.0"))
	mon.l(ray(tm, "INFO", "monitor.py", 691, "Ray commit: 0de211850589aaa23f6b2d6c9d4a1d7e9ae3d2c1"))
	mon.l(ray(tm, "INFO", "monitor.py", 692, fmt.Sprintf("Monitor started with command: ['%s/ray/autoscaler/_private/monitor.py', '--logs-dir=/tmp/ray/%s/logs', '--logging-rotate-bytes=536870912', '--logging-rotate-backup-count=5', '--gcs-address=%s:6379', '--monitor-ip=%s']", site, L.sessionStamp, L.headRayIP, L.headRayIP)))
	mon.l(ray(tm.Add(9*time.Millisecond), "INFO", "monitor.py", 167, "session_name: "+L.sessionStamp))
	mon.l(ray(tm.Add(11*time.Millisecond), "INFO", "monitor.py", 199, "Starting autoscaler metrics server on port 44217"))
	mon.l(ray(tm.Add(13*time.Millisecond), "INFO", "monitor.py", 224, "Monitor: Started"))
	mon.l(ray(tm.Add(15*time.Millisecond), "INFO", "autoscaler.py", 280, "disable_node_updaters:False"))
	mon.l(ray(tm.Add(15*time.Millisecond), "INFO", "autoscaler.py", 288, "disable_launch_config_check:False"))
	mon.l(ray(tm.Add(15*time.Millisecond), "INFO", "autoscaler.py", 300, "foreground_node_launch:False"))
	mon.l(ray(tm.Add(16*time.Millisecond), "INFO", "autoscaler.py", 310, "worker_liveness_check:True"))
	mon.l(ray(tm.Add(16*time.Millisecond), "INFO", "autoscaler.py", 318, "worker_rpc_drain:True"))
	mon.l(ray(tm.Add(17*time.Millisecond), "INFO", "autoscaler.py", 368, "StandardAutoscaler: {'cluster_name': 'default', 'max_workers': 0, 'upscaling_speed': 1.0, 'docker': {}, 'idle_timeout_minutes': 0, 'provider': {'type': 'readonly', 'use_node_id_as_ip': True, 'disable_launch_config_check': True}, 'auth': {}, 'available_node_types': {'ray.head.default': {'resources': {}, 'node_config': {}, 'max_workers': 0}}, 'head_node_type': 'ray.head.default', 'file_mounts': {}, 'cluster_synced_files': [], 'file_mounts_sync_continuously': False, 'rsync_exclude': [], 'rsync_filter': [], 'initialization_commands': [], 'setup_commands': [], 'head_setup_commands': [], 'worker_setup_commands': [], 'head_start_ray_commands': [], 'worker_start_ray_commands': [], 'head_node': {}, 'worker_nodes': {}}"))
	mon.l(ray(tm.Add(19*time.Millisecond), "INFO", "monitor.py", 486, ":event_summary:Resized to 20 CPUs, 1 GPUs."))
	mon.l(ray(L.start.Add(15*time.Second), "INFO", "monitor.py", 486, ":event_summary:Resized to 40 CPUs, 2 GPUs."))
	statusBlock := func(t time.Time, pending bool) {
		dem := " (no resource demands)"
		used := "0.0/2.0 GPU"
		if pending {
			dem = fmt.Sprintf(" {'node:%s': 0.001, 'GPU': 1.0} * 1, {'GPU': 1.0} * 1 (PACK): 1+ pending placement groups", L.vllmHostIP)
		}
		if !L.failed && t.After(tj) {
			used = "2.0/2.0 GPU (2.0 used of 2.0 reserved in placement groups)"
		}
		monOut.l(fmt.Sprintf("======== Autoscaler status: %s.%06d ========", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/1000))
		monOut.l("Node status\n---------------------------------------------------------------\nActive:")
		monOut.l(" 1 node_" + L.headNode + "\n 1 node_" + L.wrkNode)
		monOut.l("Pending:\n (no pending nodes)\nRecent failures:\n (no failures)\n\nResources\n---------------------------------------------------------------\nUsage:")
		monOut.l(" 0.0/40.0 CPU\n " + used + "\n 0B/167.24GiB memory\n 0B/71.67GiB object_store_memory\n\nDemands:\n" + dem)
	}
	statusBlock(L.start.Add(20*time.Second), false)
	if L.failed {
		specsList := fmt.Sprintf("[{'node:%s': 0.001, 'GPU': 1.0}]", L.vllmHostIP)
		bundle := fmt.Sprintf("{'node:%s': 0.001, 'GPU': 1.0}", L.vllmHostIP)
		for k, s := range []int{1, 31, 61, 91, 121, 301, 901, 1501, 2101, 2521} {
			ts := tj.Add(time.Duration(s)*time.Second + time.Duration(100+k*7)*time.Millisecond)
			mon.l(ray(ts, "WARNING", "resource_demand_scheduler.py", 782, fmt.Sprintf("The autoscaler could not find a node type to satisfy the request: %s. Please specify a node type with the necessary resources.", specsList)))
			if k == 0 {
				mon.l(ray(ts.Add(time.Millisecond), "INFO", "autoscaler.py", 1487, ":event_summary:Tip: use `ray status` to view detailed cluster status. To disable these messages, set RAY_SCHEDULER_EVENTS=0."))
			}
			mon.l(ray(ts.Add(2*time.Millisecond), "INFO", "autoscaler.py", 1506, ":event_summary:Error: No available node types can fulfill resource request "+bundle+". Add suitable node types to this cluster to resolve this issue."))
			if k == 2 || k == 7 {
				statusBlock(ts.Add(5*time.Millisecond), true)
			}
		}
	} else {
		statusBlock(tj.Add(5*time.Second), false)
	}
	return map[string]string{"gcs_server.out": gcs.b.String(), "raylet.out": rl.b.String(), "monitor.log": mon.b.String(), "monitor.out": monOut.b.String()}
}

func raylet(rl *plain, t time.Time, pid int, node, ip, host string, nmPort, omPort int, failed bool, workerPID int) {
	ms := func(n int) time.Time { return t.Add(time.Duration(n) * time.Millisecond) }
	rl.l(cpp(ms(0), "I", pid, pid, "raylet", "main.cc", 244, "Setting cluster ID to: 3e0c3f77a9a5c30f1d3fa3ee40eaa7c5d2f92a29efc9a8b8f1a4e34e"))
	rl.l(cpp(ms(1), "I", pid, pid, "raylet", "main.cc", 371, "Raylet is not set to kill unknown children."))
	rl.l(cpp(ms(1), "I", pid, pid, "raylet", "io_service_pool.cc", 35, "IOServicePool is running with 1 io_service."))
	rl.l(cpp(ms(2), "I", pid, pid, "raylet", "main.cc", 520, "Setting node ID node_id="+node))
	rl.l(cpp(ms(3), "I", pid, pid, "raylet", "store_runner.cc", 32, "Allowing the Plasma store to use up to 76.9581GB of memory."))
	rl.l(cpp(ms(3), "I", pid, pid, "raylet", "store_runner.cc", 48, "Starting object store with directory /dev/shm, fallback /tmp/ray, and huge page support disabled"))
	rl.l(cpp(ms(4), "I", pid, pid+9, "raylet", "dlmalloc.cc", 154, "create_and_mmap_buffer(76958171144, /dev/shm/plasma_XXXXXX)"))
	rl.l(cpp(ms(5), "I", pid, pid+9, "raylet", "store.cc", 564, "Plasma store debug dump: "))
	rl.l(cpp(ms(6), "I", pid, pid, "raylet", "grpc_server.cc", 143, fmt.Sprintf("ObjectManager server started, listening on port %d.", omPort)))
	rl.l(cpp(ms(8), "I", pid, pid, "raylet", "worker_killing_policy_group_by_owner.cc", 47, "Running GroupByOwner policy."))
	rl.l(cpp(ms(8), "I", pid, pid, "raylet", "memory_monitor.cc", 47, "MemoryMonitor initialized with usage threshold at 116893728768 bytes (0.95 system memory), total system memory bytes: 123046031360"))
	rl.l(cpp(ms(9), "I", pid, pid, "raylet", "node_manager.cc", 256, fmt.Sprintf("Initializing NodeManager node_id=%s", node)))
	rl.l(cpp(ms(12), "I", pid, pid, "raylet", "grpc_server.cc", 143, fmt.Sprintf("NodeManager server started, listening on port %d.", nmPort)))
	rl.l(cpp(ms(14), "I", pid, pid, "raylet", "agent_manager.cc", 77, "Monitor agent process with name dashboard_agent"))
	rl.l(cpp(ms(14), "I", pid, pid, "raylet", "agent_manager.cc", 77, "Monitor agent process with name runtime_env_agent"))
	rl.l(cpp(ms(15), "I", pid, pid, "raylet", "event.cc", 493, "Ray Event initialized for RAYLET"))
	rl.l(cpp(ms(17), "I", pid, pid, "raylet", "raylet.cc", 143, fmt.Sprintf("Raylet of id, %s started. Raylet consists of node_manager and object_manager. node_manager address: %s:%d object_manager address: %s:%d hostname: %s", node, ip, nmPort, ip, omPort, host)))
	rl.l(cpp(ms(18), "I", pid, pid, "raylet", "node_manager.cc", 535, "[state-dump] NodeManager:"))
	rl.l(cpp(ms(18), "I", pid, pid, "raylet", "node_manager.cc", 535, fmt.Sprintf("[state-dump] Node ID: %s", node)))
	rl.l(cpp(ms(18), "I", pid, pid, "raylet", "node_manager.cc", 535, fmt.Sprintf("[state-dump] Node name: %s", ip)))
	rl.l(cpp(ms(18), "I", pid, pid, "raylet", "node_manager.cc", 535, "[state-dump] InitialConfigResources: {CPU: 200000, GPU: 10000, accelerator_type:GB10: 10000, memory: 897890918400000, node:"+ip+": 10000, object_store_memory: 384790855680000}"))
	rl.l(cpp(ms(21), "I", pid, pid, "raylet", "accessor.cc", 769, "Received address and liveness notification for node, IsAlive = 1 node_id="+node))
	rl.l(cpp(ms(60), "I", pid, pid, "raylet", "worker_pool.cc", 533, fmt.Sprintf("Started worker process with pid %d, the token is 0", workerPID-211)))
	rl.l(cpp(ms(61), "I", pid, pid, "raylet", "worker_pool.cc", 533, fmt.Sprintf("Started worker process with pid %d, the token is 1", workerPID-209)))
	if failed {
		rl.l(cpp(ms(55000), "I", pid, pid+17, "raylet", "metrics_agent_client.cc", 42, "Exporter initialized."))
		return
	}
	rl.l(cpp(ms(39500), "I", pid, pid, "raylet", "placement_group_resource_manager.cc", 104, "Bundle committed for placement group, bundle index=0"))
	rl.l(cpp(ms(39800), "I", pid, pid, "raylet", "worker_pool.cc", 533, fmt.Sprintf("Started worker process with pid %d, the token is 2", workerPID)))
	rl.l(cpp(ms(41100), "I", pid, pid, "raylet", "local_lease_manager.cc", 711, "Worker "+fmt.Sprint(workerPID)+" is assigned to actor RayWorkerWrapper"))
}

func workerRay(L *launch) string {
	rl := &plain{}
	raylet(rl, L.start.Add(13*time.Second+900*time.Millisecond), 97, L.wrkNode, L.workerRayIP, "spark-2", 40611, 39287, L.failed, L.remoteWorkerPID)
	return rl.b.String()
}

// ---------------------------------------------------------------------------

func main() {
	out := flag.String("out", "testdata/logs/seed", "output directory")
	flag.Parse()
	rng := rand.New(rand.NewSource(20260408))

	failed := &launch{
		name: "failed", headFlagIP: roce1, workerFlagIP: roce2, headRayIP: mgmt1, workerRayIP: mgmt2,
		vllmHostIP: roce1, rayAddress: roce1 + ":6379", ncclIfname: "enp1s0f1np1",
		start: d("2026-04-08 22:41:05.218"), sessionStamp: "session_2026-04-08_22-41-07_102938_7",
		headNode: hexID(rng, 56), wrkNode: hexID(rng, 56), failed: true, headWorkerPID: 702, remoteWorkerPID: 389,
	}
	fixed := &launch{
		name: "fixed", headFlagIP: mgmt1, workerFlagIP: mgmt2, headRayIP: mgmt1, workerRayIP: mgmt2,
		vllmHostIP: mgmt1, rayAddress: mgmt1 + ":6379", ncclIfname: "enP7s7",
		start: d("2026-04-08 23:37:12.604"), sessionStamp: "session_2026-04-08_23-37-14_480113_7",
		headNode: hexID(rng, 56), wrkNode: hexID(rng, 56), headWorkerPID: 702, remoteWorkerPID: 389,
	}

	type node struct{ head, worker *clog }
	build := func(L *launch, seed int64) (*clog, *clog) {
		h, w := newClog(seed), newClog(seed+1)
		headContainer(h, L)
		workerContainer(w, L)
		return h, w
	}
	fh, fw := build(failed, 1)
	xh, xw := build(fixed, 3)
	fRay := headRay(failed, rand.New(rand.NewSource(5)))
	xRay := headRay(fixed, rand.New(rand.NewSource(6)))
	fW, xW := workerRay(failed), workerRay(fixed)

	const cname = "vllm-qwen35-json.log"
	files := map[string][]byte{
		"failed/spark-1/" + cname:                                 encodeDocker(fh.recs),
		"failed/spark-2/" + cname:                                 encodeDocker(fw.recs),
		"fixed/spark-1/" + cname:                                  encodeDocker(xh.recs),
		"fixed/spark-2/" + cname:                                  encodeDocker(xw.recs),
		"both/spark-1/" + cname:                                   encodeDocker(append(append([]rec{}, fh.recs...), xh.recs...)),
		"both/spark-2/" + cname:                                   encodeDocker(append(append([]rec{}, fw.recs...), xw.recs...)),
		"failed/spark-2/ray/raylet.out":                           []byte(fW),
		"fixed/spark-2/ray/raylet.out":                            []byte(xW),
		"both/spark-2/ray/" + failed.sessionStamp + "/raylet.out": []byte(fW),
		"both/spark-2/ray/" + fixed.sessionStamp + "/raylet.out":  []byte(xW),
		"script-injection/ui-escaping.log":                        []byte(scriptInjection),
	}
	for name, body := range fRay {
		files["failed/spark-1/ray/"+name] = []byte(body)
		files["both/spark-1/ray/"+failed.sessionStamp+"/"+name] = []byte(body)
	}
	for name, body := range xRay {
		files["fixed/spark-1/ray/"+name] = []byte(body)
		files["both/spark-1/ray/"+fixed.sessionStamp+"/"+name] = []byte(body)
	}
	for name, body := range files {
		p := filepath.Join(*out, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

const scriptInjection = `INFO 04-08 23:41:02 [api_server.py:1966] Starting vLLM API server 0 on http://0.0.0.0:8000
WARNING 04-08 23:41:07 [serving_chat.py:212] Invalid request from 10.1.230.50: model name <script>alert(1)</script> does not exist
ERROR 04-08 23:41:09 [serving_chat.py:498] Error in preprocessing prompt inputs: unknown template variable <img src=x onerror=alert(2)> & "quoted" 'single'
2026-04-08 23:41:10,113	ERROR worker.py:412 -- Node label "<b>bold</b>" rejected: javascript:alert(3)
`
