package parsers

import "testing"

// benchLines is a realistic mix for a vLLM-over-Ray launch: mostly NCCL INFO
// and vLLM lines, many forwarded with Ray prefixes, some Ray, c10 and plain
// lines, and a traceback.
var benchLines = []string{
	"vm:600:600 [0] NCCL INFO Channel 00/24 : 0 1",
	"(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL INFO P2P Chunksize set to 131072",
	"bruce-AI-Server:106022:106733 [1] NCCL INFO ncclCommInitRank comm 0x26a187b0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 51000 commId 0x80266707970df6f7 - Init START",
	"vm:600:600 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>",
	"vm:601:601 [1] NCCL INFO Trees [0] -1/-1/-1->1->0 [1] -1/-1/-1->1->0 [2] -1/-1/-1->1->0 [3] -1/-1/-1->1->0",
	"INFO 08-23 10:16:22 ray_utils.py:174] Waiting for creating a placement group of specs for 10 seconds. specs=[{'node:10.0.0.1': 0.001, 'GPU': 1.0}, {'GPU': 1.0}]",
	"(EngineCore_DP0 pid=479) (RayWorkerWrapper pid=223, ip=192.168.141.7) INFO 10-23 03:54:46 [parallel_state.py:1325] rank 1 in world size 2 is assigned as DP rank 0, PP rank 1, TP rank 0, EP rank 0",
	"(APIServer pid=1) INFO 10-23 03:54:40 [api_server.py:1043] vLLM API server version 0.11.0",
	"INFO 07-28 23:02:27 [kv_cache_utils.py:833] GPU KV cache size: 176,240 tokens",
	"(VllmWorkerProcess pid=106022) INFO 02-02 18:01:24 model_runner.py:1116] Loading model weights took 30.7098 GB",
	"2026-04-08 23:35:09,880\tINFO worker.py:2007 -- Connected to Ray cluster.",
	"[2025-07-23 10:05:49,679 W 51000 51000] gcs_rpc_client.h:151: Failed to connect to GCS at address :6379 within 5 seconds.",
	"(raylet, ip=10.0.6.140) [2023-08-11 10:13:54,613 E 30 30] (raylet) node_manager.cc:3084: 1 Workers (tasks / actors) killed due to memory pressure (OOM)",
	"(autoscaler +7s) Error: No available node types can fulfill resource request {'node:10.0.0.1': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue.",
	"Local node IP: 10.225.4.51",
	"[rank1]:[W623 15:37:01.823833318 socket.cpp:460] [c10d] waitForInput: poll for socket SocketImpl(fd=100) returned 0, likely a timeout",
	"[2026-11-29 20:00:53] vm:691:691 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found",
	"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.20s/it]",
	"Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB",
	"Traceback (most recent call last):\n  File \"/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py\", line 1624, in add_cli_args\n    parser = EngineArgs.add_cli_args(parser)\nValueError: bad",
}

// BenchmarkParse reports events/s over benchLines; the pipeline needs
// 200k lines/s in all, so Parse should stay well above 500k events/s.
func BenchmarkParse(b *testing.B) {
	recs := make([]Record, len(benchLines))
	for i, s := range benchLines {
		recs[i] = Record{Node: "n", File: "f", Text: s}
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		ev := Parse(recs[n%len(recs)])
		_ = ev
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}
