// Package loggen generates realistic, deterministic log traffic of a
// multi-node vLLM-over-Ray deployment for benchmarks and load tests: vLLM
// logger lines, Ray Python and C++ lines, NCCL INFO lines, torch c10
// warnings, uvicorn access lines and engine statistics, some of them behind
// Ray/vLLM process prefixes such as "(RayWorkerWrapper pid=N, ip=A)", plus
// about 1% multi-line Python tracebacks. Lines average about 180 bytes.
//
// By default no line is meant to trigger a diagnosis; Options.DiagnosticShare
// mixes in lines that do (placement-group waits naming an unknown node IP,
// autoscaler "No available node types", NCCL WARN connect failures, CUDA OOM,
// Ray OOM-killer reports).
//
// The same seed and options always give the same bytes.
//
// Usage:
//
//	g := loggen.New(42, loggen.Options{})
//	// one million lines as Docker json-file records
//	if _, err := g.WriteLines(f, loggen.DockerJSON, 1_000_000); err != nil { ... }
//	// or one physical line at a time, reusing a buffer
//	buf := g.Line(buf[:0])
package loggen

import (
	"bufio"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// Format is the file format WriteLines produces.
type Format int

const (
	// Plain writes one physical line per "\n"-terminated line.
	Plain Format = iota
	// DockerJSON writes Docker json-file records
	// ({"log":"...\n","stream":"stdout","time":"<RFC3339Nano>"}), escaped as moby does.
	DockerJSON
)

// Options tunes a Generator. The zero value is a sensible default.
type Options struct {
	// DiagnosticShare is the fraction of records (0..1) that should trigger a
	// diagnosis. Default 0.
	DiagnosticShare float64
	// TracebackShare is the fraction of records that are multi-line Python
	// tracebacks. 0 means the default 0.01; negative disables them.
	TracebackShare float64
	// NodeIPs are the cluster's node addresses (default 10.1.230.180-187).
	NodeIPs []string
	// Start is the time of the first line (default 2026-04-08T22:00:00Z).
	Start time.Time
	// MeanGap is the mean time between lines (default 2ms).
	MeanGap time.Duration
}

// Generator produces log lines. It is not safe for concurrent use.
type Generator struct {
	s        uint64 // splitmix64 state
	opts     Options
	diagP    uint64 // thresholds on a 2^32 scale
	tbP      uint64
	gapMax   int64
	now      int64  // unix nanos
	sec      int64  // second cached below
	vts      []byte // "04-08 22:00:00"
	pyts     []byte // "2026-04-08 22:00:00"
	rfc      []byte // "2026-04-08T22:00:00."
	pending  [][]byte
	pendErr  bool
	pendPref []byte
	stderr   bool // stream of the last line
	ips      []string
	hosts    []string
	scratch  []byte
	tb       []byte // backing store of pending
	tmp      []byte
}

// New returns a Generator for seed and opts.
func New(seed int64, opts Options) *Generator {
	if opts.TracebackShare == 0 {
		opts.TracebackShare = 0.01
	}
	if opts.TracebackShare < 0 {
		opts.TracebackShare = 0
	}
	if len(opts.NodeIPs) == 0 {
		for i := 180; i < 188; i++ {
			opts.NodeIPs = append(opts.NodeIPs, "10.1.230."+strconv.Itoa(i))
		}
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 4, 8, 22, 0, 0, 0, time.UTC)
	}
	if opts.MeanGap <= 0 {
		opts.MeanGap = 2 * time.Millisecond
	}
	g := &Generator{
		s:      uint64(seed)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019,
		opts:   opts,
		diagP:  uint64(clamp01(opts.DiagnosticShare) * (1 << 32)),
		tbP:    uint64(clamp01(opts.TracebackShare) * (1 << 32)),
		gapMax: int64(opts.MeanGap) * 2,
		now:    opts.Start.UnixNano(),
		sec:    -1,
		ips:    opts.NodeIPs,
	}
	for i := range g.ips {
		g.hosts = append(g.hosts, "spark-"+strconv.Itoa(i+1))
	}
	return g
}

func clamp01(f float64) float64 {
	if f < 0 {
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

func (g *Generator) next() uint64 {
	g.s += 0x9E3779B97F4A7C15
	z := g.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (g *Generator) intn(n int) int { return int((g.next() >> 32) * uint64(n) >> 32) }

// chance reports true with probability p/2^32.
func (g *Generator) chance(p uint64) bool { return g.next()>>32 < p }

func (g *Generator) pick(list []string) string { return list[g.intn(len(list))] }

// tick advances the clock and refreshes the cached timestamp strings.
func (g *Generator) tick() {
	g.now += int64(g.intn(int(g.gapMax) + 1))
	if s := g.now / 1e9; s != g.sec {
		g.sec = s
		t := time.Unix(s, 0).UTC()
		g.vts = t.AppendFormat(g.vts[:0], "01-02 15:04:05")
		g.pyts = t.AppendFormat(g.pyts[:0], "2006-01-02 15:04:05")
		g.rfc = t.AppendFormat(g.rfc[:0], "2006-01-02T15:04:05.")
	}
}

func (g *Generator) ms() int { return int(g.now/1e6) % 1000 }

func app3(b []byte, n int) []byte { // zero-padded 3 digits
	return append(b, byte('0'+n/100), byte('0'+n/10%10), byte('0'+n%10))
}

func appInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// Line appends one physical line (without the trailing newline) to buf and
// returns the extended buffer.
func (g *Generator) Line(buf []byte) []byte {
	buf, _ = g.line(buf)
	return buf
}

// line returns the line and whether it belongs on stderr.
func (g *Generator) line(buf []byte) ([]byte, bool) {
	g.tick()
	if len(g.pending) > 0 {
		l := g.pending[0]
		g.pending = g.pending[1:]
		buf = append(buf, g.pendPref...)
		return append(buf, l...), g.pendErr
	}
	if g.diagP > 0 && g.chance(g.diagP) {
		return g.diagnostic(buf)
	}
	if g.tbP > 0 && g.chance(g.tbP) {
		return g.traceback(buf)
	}
	return g.benign(buf)
}

// prefix appends a random process prefix (or none).
func (g *Generator) prefix(buf []byte) []byte {
	switch r := g.intn(20); {
	case r < 7:
		return buf
	case r < 10:
		buf = append(buf, "(APIServer pid="...)
		buf = appInt(buf, 300+g.intn(40))
		return append(buf, ") "...)
	case r < 13:
		buf = append(buf, "(EngineCore pid="...)
		buf = appInt(buf, 480+g.intn(40))
		return append(buf, ") "...)
	default:
		buf = append(buf, "(EngineCore pid="...)
		buf = appInt(buf, 480+g.intn(40))
		buf = append(buf, ") (RayWorkerWrapper pid="...)
		buf = appInt(buf, 200+g.intn(900))
		if r > 14 {
			buf = append(buf, ", ip="...)
			buf = append(buf, g.pick(g.ips)...)
		}
		return append(buf, ") "...)
	}
}

func (g *Generator) vllmHdr(buf []byte, level, file string, line int) []byte {
	buf = append(buf, level...)
	buf = append(buf, ' ')
	buf = append(buf, g.vts...)
	buf = append(buf, " ["...)
	buf = append(buf, file...)
	buf = append(buf, ':')
	buf = appInt(buf, line)
	return append(buf, "] "...)
}

func (g *Generator) rayHdr(buf []byte, level, file string, line int) []byte {
	buf = append(buf, g.pyts...)
	buf = append(buf, ',')
	buf = app3(buf, g.ms())
	buf = append(buf, '\t')
	buf = append(buf, level...)
	buf = append(buf, ' ')
	buf = append(buf, file...)
	buf = append(buf, ':')
	buf = appInt(buf, line)
	return append(buf, " -- "...)
}

func (g *Generator) cppHdr(buf []byte, lvl byte, comp, file string, line int) []byte {
	pid := 50 + g.intn(300)
	buf = append(buf, '[')
	buf = append(buf, g.pyts...)
	buf = append(buf, ',')
	buf = app3(buf, g.ms())
	buf = append(buf, ' ', lvl, ' ')
	buf = appInt(buf, pid)
	buf = append(buf, ' ')
	buf = appInt(buf, pid+g.intn(40))
	buf = append(buf, "] ("...)
	buf = append(buf, comp...)
	buf = append(buf, ") "...)
	buf = append(buf, file...)
	buf = append(buf, ':')
	buf = appInt(buf, line)
	return append(buf, ": "...)
}

func (g *Generator) ncclHdr(buf []byte) []byte {
	i := g.intn(len(g.ips))
	pid := 200 + g.intn(900)
	buf = append(buf, g.hosts[i]...)
	buf = append(buf, ':')
	buf = appInt(buf, pid)
	buf = append(buf, ':')
	if g.intn(3) == 0 {
		buf = appInt(buf, pid+g.intn(90))
	} else {
		buf = appInt(buf, pid)
	}
	buf = append(buf, " ["...)
	buf = appInt(buf, g.intn(8))
	return append(buf, "] NCCL INFO "...)
}

func (g *Generator) hex(buf []byte, n int) []byte {
	const h = "0123456789abcdef"
	for n > 0 {
		v := g.next()
		for k := 0; k < 16 && n > 0; k++ {
			buf = append(buf, h[v&15])
			v >>= 4
			n--
		}
	}
	return buf
}

func (g *Generator) float(buf []byte, max int, dec int) []byte {
	buf = appInt(buf, g.intn(max))
	buf = append(buf, '.')
	for i := 0; i < dec; i++ {
		buf = append(buf, byte('0'+g.intn(10)))
	}
	return buf
}

var (
	models   = []string{"Qwen/Qwen3.5-122B-A10B-FP8", "meta-llama/Llama-3.1-70B-Instruct", "deepseek-ai/DeepSeek-V3", "mistralai/Mixtral-8x22B-Instruct-v0.1", "Qwen/Qwen3-235B-A22B"}
	routes   = []string{"POST /v1/chat/completions", "POST /v1/completions", "GET /v1/models", "GET /health", "GET /metrics", "POST /v1/responses"}
	ifaces   = []string{"enP7s7", "enp1s0f1np1", "bond0", "ens3f0"}
	hcas     = []string{"rocep1s0f1", "mlx5_0", "mlx5_1", "roceP2p1s0f1"}
	rayFiles = []string{"worker.py", "node.py", "services.py", "log_monitor.py", "state.py", "dashboard_agent.py"}
)

// benign appends one ordinary line. Every template is kept free of the
// phrases the rule pack keys on.
func (g *Generator) benign(buf []byte) ([]byte, bool) {
	switch g.intn(24) {
	case 0, 1, 2: // engine stats
		buf = append(buf, "(APIServer pid="...)
		buf = appInt(buf, 300+g.intn(40))
		buf = append(buf, ") "...)
		buf = g.vllmHdr(buf, "INFO", "loggers.py", 236)
		buf = append(buf, "Engine 000: Avg prompt throughput: "...)
		buf = g.float(buf, 4000, 1)
		buf = append(buf, " tokens/s, Avg generation throughput: "...)
		buf = g.float(buf, 900, 1)
		buf = append(buf, " tokens/s, Running: "...)
		buf = appInt(buf, g.intn(64))
		buf = append(buf, " reqs, Waiting: "...)
		buf = appInt(buf, g.intn(8))
		buf = append(buf, " reqs, GPU KV cache usage: "...)
		buf = g.float(buf, 100, 1)
		buf = append(buf, "%, Prefix cache hit rate: "...)
		buf = g.float(buf, 100, 1)
		return append(buf, '%'), false
	case 3, 4, 5: // uvicorn access
		buf = append(buf, "(APIServer pid="...)
		buf = appInt(buf, 300+g.intn(40))
		buf = append(buf, ") INFO:     10.1."...)
		buf = appInt(buf, g.intn(256))
		buf = append(buf, '.')
		buf = appInt(buf, g.intn(256))
		buf = append(buf, ':')
		buf = appInt(buf, 32768+g.intn(28000))
		buf = append(buf, " - \""...)
		buf = append(buf, g.pick(routes)...)
		buf = append(buf, " HTTP/1.1\" 200 OK"...)
		return buf, false
	case 6, 7, 8, 9: // NCCL INFO
		buf = g.prefix(buf)
		buf = g.ncclHdr(buf)
		switch g.intn(7) {
		case 0:
			buf = append(buf, "Channel "...)
			c := g.intn(32)
			buf = append(buf, byte('0'+c/10), byte('0'+c%10))
			buf = append(buf, "/0 : "...)
			a := g.intn(16)
			buf = appInt(buf, a)
			buf = append(buf, "[0] -> "...)
			buf = appInt(buf, (a+1)%16)
			buf = append(buf, "[0] [send] via NET/IB/"...)
			buf = appInt(buf, g.intn(4))
			buf = append(buf, "/GDRDMA comm 0x"...)
			buf = g.hex(buf, 8)
			buf = append(buf, " nRanks 16"...)
		case 1:
			buf = append(buf, "NET/IB : Using [0]"...)
			buf = append(buf, g.pick(hcas)...)
			buf = append(buf, ":1/RoCE [RO]; OOB "...)
			buf = append(buf, g.pick(ifaces)...)
			buf = append(buf, ':')
			buf = append(buf, g.pick(g.ips)...)
			buf = append(buf, "<0>"...)
		case 2:
			buf = append(buf, "ncclCommInitRankConfig comm 0x"...)
			buf = g.hex(buf, 8)
			buf = append(buf, " rank "...)
			buf = appInt(buf, g.intn(16))
			buf = append(buf, " nranks 16 cudaDev "...)
			buf = appInt(buf, g.intn(8))
			buf = append(buf, " nvmlDev 0 busId "...)
			buf = g.hex(buf, 5)
			buf = append(buf, " commId 0x"...)
			buf = g.hex(buf, 16)
			buf = append(buf, " - Init COMPLETE"...)
		case 3:
			buf = append(buf, "Init timings - ncclCommInitRankConfig: rank "...)
			buf = appInt(buf, g.intn(16))
			buf = append(buf, " nranks 16 total "...)
			buf = g.float(buf, 3, 2)
			buf = append(buf, " (kernels 0.21, alloc 0.03, bootstrap "...)
			buf = g.float(buf, 1, 2)
			buf = append(buf, ", allgathers 0.01, topo 0.09, graphs 0.00, connections 0.06, rest 0.03)"...)
		case 4:
			buf = append(buf, "NET/Plugin: Could not find: libnccl-net.so"...)
		case 5:
			buf = append(buf, "Bootstrap: Using "...)
			buf = append(buf, g.pick(ifaces)...)
			buf = append(buf, ':')
			buf = append(buf, g.pick(g.ips)...)
			buf = append(buf, "<0>"...)
		default:
			buf = append(buf, "Trees [0] "...)
			for k := 0; k < 6; k++ {
				buf = appInt(buf, g.intn(16))
				buf = append(buf, "/-1/-1->"...)
				buf = appInt(buf, g.intn(16))
				buf = append(buf, "->-1 ["...)
				buf = appInt(buf, k+1)
				buf = append(buf, "] "...)
			}
			buf = append(buf, "-1/-1/-1->0->1"...)
		}
		return buf, false
	case 10, 11, 12, 13: // vLLM INFO/WARNING
		buf = g.prefix(buf)
		switch g.intn(8) {
		case 0:
			buf = g.vllmHdr(buf, "INFO", "gpu_model_runner.py", 3153)
			buf = append(buf, "Model loading took "...)
			buf = g.float(buf, 80, 4)
			buf = append(buf, " GiB memory and "...)
			buf = g.float(buf, 600, 6)
			buf = append(buf, " seconds"...)
		case 1:
			buf = g.vllmHdr(buf, "INFO", "parallel_state.py", 1423)
			buf = append(buf, "rank "...)
			buf = appInt(buf, g.intn(16))
			buf = append(buf, " in world size 16 is assigned as DP rank 0, PP rank "...)
			buf = appInt(buf, g.intn(2))
			buf = append(buf, ", PCP rank 0, TP rank "...)
			buf = appInt(buf, g.intn(8))
			buf = append(buf, ", EP rank "...)
			buf = appInt(buf, g.intn(16))
		case 2:
			buf = g.vllmHdr(buf, "INFO", "gpu_worker.py", 298)
			buf = append(buf, "Available KV cache memory: "...)
			buf = g.float(buf, 60, 2)
			buf = append(buf, " GiB (gpu_memory_utilization=0.85, model weights "...)
			buf = g.float(buf, 70, 2)
			buf = append(buf, " GiB)"...)
		case 3:
			buf = g.vllmHdr(buf, "INFO", "kv_cache_utils.py", 1087)
			buf = append(buf, "GPU KV cache size: "...)
			buf = appInt(buf, 100000+g.intn(1900000))
			buf = append(buf, " tokens, Maximum concurrency for 32,768 tokens per request: "...)
			buf = g.float(buf, 60, 2)
			buf = append(buf, 'x')
		case 4:
			buf = g.vllmHdr(buf, "INFO", "default_loader.py", 314)
			buf = append(buf, "Loading weights took "...)
			buf = g.float(buf, 700, 2)
			buf = append(buf, " seconds for "...)
			buf = append(buf, g.pick(models)...)
		case 5:
			buf = g.vllmHdr(buf, "WARNING", "ray_utils.py", 271)
			buf = append(buf, "tensor_parallel_size=2 is bigger than a reserved number of GPUs (1 GPUs) in a node "...)
			buf = g.hex(buf, 56)
			buf = append(buf, '.')
		case 6:
			buf = g.vllmHdr(buf, "INFO", "core.py", 218)
			buf = append(buf, "init engine (profile, create kv cache, warmup model) took "...)
			buf = g.float(buf, 300, 2)
			buf = append(buf, " seconds; compile cache /root/.cache/vllm/torch_compile_cache/"...)
			buf = g.hex(buf, 10)
		default:
			buf = g.vllmHdr(buf, "INFO", "parallel_state.py", 1208)
			buf = append(buf, "world_size=16 rank="...)
			buf = appInt(buf, g.intn(16))
			buf = append(buf, " local_rank="...)
			buf = appInt(buf, g.intn(8))
			buf = append(buf, " distributed_init_method=tcp://"...)
			buf = append(buf, g.ips[0]...)
			buf = append(buf, ':')
			buf = appInt(buf, 40000+g.intn(20000))
			buf = append(buf, " backend=nccl"...)
		}
		return buf, false
	case 14, 15, 16: // Ray Python (stderr)
		buf = g.prefix(buf)
		switch g.intn(4) {
		case 0:
			buf = g.rayHdr(buf, "INFO", "worker.py", 2007)
			buf = append(buf, "Connected to Ray cluster. View the dashboard at http://"...)
			buf = append(buf, g.pick(g.ips)...)
			buf = append(buf, ":8265 (session "...)
			buf = g.hex(buf, 12)
			buf = append(buf, ')')
		case 1:
			buf = g.rayHdr(buf, "INFO", g.pick(rayFiles), 100+g.intn(2000))
			buf = append(buf, "Task "...)
			buf = g.hex(buf, 48)
			buf = append(buf, " finished on node "...)
			buf = append(buf, g.pick(g.ips)...)
			buf = append(buf, " in "...)
			buf = g.float(buf, 90, 3)
			buf = append(buf, " s"...)
		case 2:
			buf = g.rayHdr(buf, "INFO", "log_monitor.py", 300+g.intn(200))
			buf = append(buf, "Beginning to track file worker-"...)
			buf = g.hex(buf, 56)
			buf = append(buf, "-01000000-"...)
			buf = appInt(buf, 200+g.intn(900))
			buf = append(buf, ".out"...)
		default:
			buf = g.rayHdr(buf, "WARNING", "worker.py", 2046)
			buf = append(buf, "Tip: In future versions of Ray, Ray will no longer override accelerator visible devices env var if num_gpus=0 or num_gpus=None (default)."...)
		}
		return buf, true
	case 17, 18, 19: // Ray C++
		if g.intn(2) == 0 {
			buf = append(buf, "(raylet, ip="...)
			buf = append(buf, g.pick(g.ips)...)
			buf = append(buf, ") "...)
		}
		switch g.intn(4) {
		case 0:
			buf = g.cppHdr(buf, 'I', "raylet", "worker_pool.cc", 533)
			buf = append(buf, "Started worker process with pid "...)
			buf = appInt(buf, 200+g.intn(30000))
			buf = append(buf, ", the token is "...)
			buf = appInt(buf, g.intn(64))
			buf = append(buf, " worker_id="...)
			buf = g.hex(buf, 56)
		case 1:
			buf = g.cppHdr(buf, 'I', "gcs_server", "gcs_actor_manager.cc", 1725)
			buf = append(buf, "Actor created successfully job_id=01000000 actor_id="...)
			buf = g.hex(buf, 32)
		case 2:
			buf = g.cppHdr(buf, 'I', "raylet", "node_manager.cc", 535)
			buf = append(buf, "[state-dump] Event stats: PeriodicalRunner.RunFnPeriodically - "...)
			buf = appInt(buf, g.intn(9000))
			buf = append(buf, " total (0 active), Execution time: mean = "...)
			buf = g.float(buf, 90, 3)
			buf = append(buf, " us, total = "...)
			buf = g.float(buf, 900, 3)
			buf = append(buf, " ms"...)
		default:
			buf = g.cppHdr(buf, 'W', "raylet", "metric_exporter.cc", 105)
			buf = append(buf, "[1] Export metrics to agent failed: RpcError: RPC Error message: Connection reset; Error code: 14. This won't affect Ray, but you can lose metrics from the cluster."...)
		}
		return buf, true
	case 20, 21: // torch c10
		buf = g.prefix(buf)
		buf = append(buf, "[W"...)
		buf = append(buf, g.vts[0], g.vts[1], g.vts[3], g.vts[4], ' ')
		buf = append(buf, g.vts[6:]...)
		buf = append(buf, '.')
		buf = appInt(buf, 100000000+g.intn(899999999))
		buf = append(buf, " ProcessGroupNCCL.cpp:"...)
		buf = appInt(buf, 1000+g.intn(4000))
		buf = append(buf, "] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is thus deprecated. (function operator())"...)
		return buf, true
	default: // tqdm / misc stdout
		buf = g.prefix(buf)
		buf = append(buf, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): "...)
		p := g.intn(101)
		buf = appInt(buf, p)
		buf = append(buf, "%|"...)
		for k := 0; k < 10; k++ {
			if k*10 < p {
				buf = append(buf, "\u2588"...)
			} else {
				buf = append(buf, ' ')
			}
		}
		buf = append(buf, "| "...)
		buf = appInt(buf, p*67/100)
		buf = append(buf, "/67 [00:"...)
		s := g.intn(60)
		buf = append(buf, byte('0'+s/10), byte('0'+s%10))
		buf = append(buf, "<00:12, "...)
		buf = g.float(buf, 9, 2)
		buf = append(buf, "it/s]"...)
		return buf, true
	}
}

var tbFrames = [][2]string{
	{"/opt/vllm-env/lib/python3.12/site-packages/uvicorn/protocols/http/httptools_impl.py\", line 409, in run_asgi", "result = await app(  # type: ignore[func-returns-value]"},
	{"/opt/vllm-env/lib/python3.12/site-packages/uvicorn/middleware/proxy_headers.py\", line 60, in __call__", "return await self.app(scope, receive, send)"},
	{"/opt/vllm-env/lib/python3.12/site-packages/starlette/applications.py\", line 113, in __call__", "await self.middleware_stack(scope, receive, send)"},
	{"/opt/vllm-env/lib/python3.12/site-packages/starlette/middleware/errors.py\", line 186, in __call__", "raise exc"},
	{"/opt/vllm-env/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py\", line 612, in create_chat_completion", "generator = await handler.create_chat_completion(request, raw_request)"},
	{"/opt/vllm-env/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_chat.py\", line 1101, in chat_completion_stream_generator", "async for res in result_generator:"},
	{"/usr/lib/python3.12/asyncio/streams.py\", line 544, in readexactly", "raise self._exception"},
}

var tbEnds = []string{
	"asyncio.exceptions.CancelledError",
	"ConnectionResetError: [Errno 104] Connection reset by peer",
	"BrokenPipeError: [Errno 32] Broken pipe",
	"starlette.requests.ClientDisconnect",
}

// traceback emits the first line of a benign multi-line traceback and queues
// the rest, all behind the same process prefix.
func (g *Generator) traceback(buf []byte) ([]byte, bool) {
	g.pendPref = g.prefix(g.pendPref[:0])
	g.pendErr = true
	g.pending = g.pending[:0]
	n := 3 + g.intn(len(tbFrames)-2)
	start := g.intn(len(tbFrames) - n + 1)
	g.tb = g.tb[:0]
	type span struct{ a, b int }
	var spans [32]span
	k := 0
	for _, f := range tbFrames[start : start+n] {
		a := len(g.tb)
		g.tb = append(g.tb, "  File \""...)
		g.tb = append(g.tb, f[0]...)
		spans[k] = span{a, len(g.tb)}
		k++
		a = len(g.tb)
		g.tb = append(g.tb, "    "...)
		g.tb = append(g.tb, f[1]...)
		spans[k] = span{a, len(g.tb)}
		k++
	}
	a := len(g.tb)
	g.tb = append(g.tb, g.pick(tbEnds)...)
	spans[k] = span{a, len(g.tb)}
	k++
	for i := 0; i < k; i++ {
		g.pending = append(g.pending, g.tb[spans[i].a:spans[i].b])
	}
	buf = append(buf, g.pendPref...)
	return append(buf, "Traceback (most recent call last):"...), true
}

// diagnostic appends one line that a rule should turn into a finding.
func (g *Generator) diagnostic(buf []byte) ([]byte, bool) {
	bad := "192.168.200." + strconv.Itoa(10+g.intn(20))
	switch g.intn(5) {
	case 0:
		buf = append(buf, "(EngineCore pid="...)
		buf = appInt(buf, 480+g.intn(40))
		buf = append(buf, ") "...)
		buf = g.vllmHdr(buf, "INFO", "ray_utils.py", 325)
		buf = append(buf, "Waiting for creating a placement group of specs for 10 seconds. specs=[{'node:"...)
		buf = append(buf, bad...)
		buf = append(buf, "': 0.001, 'GPU': 1.0}, {'GPU': 1.0}]. Check `ray status` and `ray list nodes` to see if you have enough resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node."...)
		return buf, false
	case 1:
		buf = append(buf, "(EngineCore pid="...)
		buf = appInt(buf, 480+g.intn(40))
		buf = append(buf, ") (autoscaler +"...)
		buf = appInt(buf, 5+g.intn(300))
		buf = append(buf, "s) Error: No available node types can fulfill resource request {'node:"...)
		buf = append(buf, bad...)
		buf = append(buf, "': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue."...)
		return buf, true
	case 2:
		buf = g.prefix(buf)
		buf = append(buf, '[')
		buf = append(buf, g.pyts...)
		buf = append(buf, "] "...)
		i := g.intn(len(g.hosts))
		buf = append(buf, g.hosts[i]...)
		buf = append(buf, ":412:530 [0] misc/socket.cc:"...)
		buf = appInt(buf, 600+g.intn(300))
		buf = append(buf, " NCCL WARN socketStartConnect: connect to "...)
		buf = append(buf, g.pick(g.ips)...)
		buf = append(buf, "<"...)
		buf = appInt(buf, 30000+g.intn(30000))
		buf = append(buf, "> failed : Connection refused"...)
		return buf, false
	case 3:
		buf = g.prefix(buf)
		buf = append(buf, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "...)
		buf = g.float(buf, 8, 2)
		buf = append(buf, " GiB. GPU 0 has a total capacity of 119.70 GiB of which 76.12 MiB is free."...)
		return buf, true
	default:
		buf = append(buf, "(raylet, ip="...)
		buf = append(buf, g.pick(g.ips)...)
		buf = append(buf, ") "...)
		buf = g.cppHdr(buf, 'E', "raylet", "node_manager.cc", 3084)
		buf = append(buf, "1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "...)
		buf = g.hex(buf, 56)
		buf = append(buf, ")."...)
		return buf, true
	}
}

// WriteLines writes lines physical lines to w in format and returns the number
// of bytes written. (It is not named WriteTo so as not to clash with
// io.WriterTo's signature.)
func (g *Generator) WriteLines(w io.Writer, format Format, lines int) (int64, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	var n int64
	for i := 0; i < lines; i++ {
		var isErr bool
		g.tmp, isErr = g.line(g.tmp[:0])
		if format == DockerJSON {
			g.scratch = g.appendDocker(g.scratch[:0], g.tmp, isErr)
			m, err := bw.Write(g.scratch)
			n += int64(m)
			if err != nil {
				return n, err
			}
			continue
		}
		g.tmp = append(g.tmp, '\n')
		m, err := bw.Write(g.tmp)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes that moby's json-file writer copies as is.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return
}()

// appendDocker renders one complete line as a json-file record the way moby
// writes it: key order log, stream, time; `"` and `\` escaped, \n and \r
// spelled out, other control bytes and <, >, & as \u00XX, invalid UTF-8 as
// \ufffd, U+2028/2029 escaped.
func (g *Generator) appendDocker(dst, line []byte, isErr bool) []byte {
	dst = append(dst, `{"log":"`...)
	start := 0
	for i := 0; i < len(line); {
		c := line[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, line[start:i]...)
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(line[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			dst = append(dst, line[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&15])
			}
			start = i + size
		}
		i += size
	}
	dst = append(dst, line[start:]...)
	dst = append(dst, `\n","stream":"`...)
	if isErr {
		dst = append(dst, "stderr"...)
	} else {
		dst = append(dst, "stdout"...)
	}
	dst = append(dst, `","time":"`...)
	// RFC3339Nano: fractional seconds with trailing zeros removed.
	ns := int(g.now % 1e9)
	if ns == 0 {
		dst = append(dst, g.rfc[:len(g.rfc)-1]...)
	} else {
		dst = append(dst, g.rfc...)
		var frac [9]byte
		for k := 8; k >= 0; k-- {
			frac[k] = byte('0' + ns%10)
			ns /= 10
		}
		e := 9
		for e > 0 && frac[e-1] == '0' {
			e--
		}
		dst = append(dst, frac[:e]...)
	}
	return append(dst, "Z\"}\n"...)
}
