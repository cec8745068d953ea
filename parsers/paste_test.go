package parsers

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestSplitPastePrefixes(t *testing.T) {
	ts := time.Date(2026, 4, 8, 22, 41, 7, 123456789, time.UTC)
	for _, tc := range []struct {
		in, rest string
		time     time.Time
	}{
		{"worker-1  | INFO 04-08 22:41:30 [api_server.py:1] x", "INFO 04-08 22:41:30 [api_server.py:1] x", time.Time{}},
		{"proj_ray-head_1 | (raylet) x", "(raylet) x", time.Time{}},
		{"[pod/vllm-0/main] Traceback (most recent call last):", "Traceback (most recent call last):", time.Time{}},
		{"2026-04-08T22:41:07.123456789Z NCCL INFO x", "NCCL INFO x", ts},
		{"2026-04-09T00:41:07.123456789+02:00 x", "x", ts},
		{"worker-1  | 2026-04-08T22:41:07.123456789Z x", "x", ts},
		{"[pod/vllm-0/main] 2026-04-08T22:41:07.123456789Z  indented", " indented", ts},
		// A Markdown quote (a log quoted in an issue), outside the others.
		{"> worker-1  | 2026-04-08T22:41:07.123456789Z x", "x", ts},
		{">   File \"x.py\", line 1, in f", "  File \"x.py\", line 1, in f", time.Time{}},
		{"> > nested", "nested", time.Time{}},
		{">", "", time.Time{}},
		{"> ", "", time.Time{}},
		{">>> import torch", ">>> import torch", time.Time{}},
		{">x", ">x", time.Time{}},
		// Open MPI's --tag-output: framing, so an NCCL line's host is its own.
		{"[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>", "5873af64cf59:10158:10560 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>", time.Time{}},
		{"[12,31]<stderr>:Traceback (most recent call last):", "Traceback (most recent call last):", time.Time{}},
		{"[1,1]<stdout>:", "", time.Time{}},
		{"[1,0]<stddiag>:x", "x", time.Time{}},
		{"[1,0]<stdin>:x", "[1,0]<stdin>:x", time.Time{}},
		{"[1,]<stdout>:x", "[1,]<stdout>:x", time.Time{}},
		{"[a,0]<stdout>:x", "[a,0]<stdout>:x", time.Time{}},
		{"[1,0] <stdout>:x", "[1,0] <stdout>:x", time.Time{}},
		// A writer's own texts stay whole.
		{"2026-04-08T22:41:07.123Z INFO own time", "2026-04-08T22:41:07.123Z INFO own time", time.Time{}},
		{"2026-04-08T22:41:07.123456Z INFO own time", "2026-04-08T22:41:07.123456Z INFO own time", time.Time{}},
		{"INFO | message of a logger with pipes", "INFO | message of a logger with pipes", time.Time{}},
		{"| table | row |", "| table | row |", time.Time{}},
		{"name | value", "value", time.Time{}}, // indistinguishable from compose: a container called name
		{"[rank0]: x", "[rank0]: x", time.Time{}},
		{"[pod/a] x", "[pod/a] x", time.Time{}},
		{"[pod/a/b/c] x", "[pod/a/b/c] x", time.Time{}},
		{"(pid=1) x | y", "(pid=1) x | y", time.Time{}},
		{"10.0.0.1 | x", "10.0.0.1 | x", time.Time{}},
		{"a b | c", "a b | c", time.Time{}},
		{"worker-1|x", "worker-1|x", time.Time{}},
		// A logger re-logging stderr line by line (FastChat's StreamToLogger).
		{"2024-09-26 06:12:44 | ERROR | stderr |   File \"x.py\", line 1, in f", "  File \"x.py\", line 1, in f", time.Date(2024, 9, 26, 6, 12, 44, 0, time.UTC)},
		{"2024-09-26 06:12:44 | ERROR | stderr | ", "", time.Date(2024, 9, 26, 6, 12, 44, 0, time.UTC)},
		{"2024-09-26 06:12:44 | ERROR | stderr |", "", time.Date(2024, 9, 26, 6, 12, 44, 0, time.UTC)},
		{"fastchat-model-worker-1  | 2024-09-26 06:12:45 | INFO | stdout | Loading", "Loading", time.Date(2024, 9, 26, 6, 12, 45, 0, time.UTC)},
		// Its own records, and other loggers' pipes, keep their header.
		{"2024-09-26 06:12:44 | INFO | model_worker | Loading the model", "2024-09-26 06:12:44 | INFO | model_worker | Loading the model", time.Time{}},
		{"2024-09-26 06:12:44 | ERROR | stderrx | y", "2024-09-26 06:12:44 | ERROR | stderrx | y", time.Time{}},
		{"2024-09-26 06:12:44.123 | ERROR    | mod:f:1 - x", "2024-09-26 06:12:44.123 | ERROR    | mod:f:1 - x", time.Time{}},
	} {
		rest, tm, n := splitPastePrefixes(tc.in)
		if rest != tc.rest || !tm.Equal(tc.time) || n != len(tc.in)-len(rest) {
			t.Errorf("splitPastePrefixes(%q) = %q, %v, %d; want %q, %v", tc.in, rest, tm, n, tc.rest, tc.time)
		}
	}
}

// joinText reads text as a plain file and returns its records' texts.
func joinText(t *testing.T, text string) []string {
	t.Helper()
	lines, _, _ := readAllLines(t, []byte(text), ReaderOptions{Format: FormatPlain})
	recs := joinLines(t, lines, int64(len(text)), JoinOptions{})
	sort.Slice(recs, func(i, k int) bool { return recs[i].Offset < recs[k].Offset })
	var out []string
	for _, r := range recs {
		out = append(out, r.Text)
	}
	return out
}

// Pastes come back as the log was written: wrapped lines joined back (with
// or without an indent), tools' prefixes removed, a squashed paste cut into
// its entries.
func TestPastesReadAsWritten(t *testing.T) {
	gcs := "[2025-07-23 10:05:49,679 W 51000 51000] gcs_rpc_client.h:151: Failed to connect to GCS at addr 10.1.230.180:6379 within 5 seconds."
	raylet := "(raylet) node_manager.cc:3007: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed"
	kv := "(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cache is needed, which is larger than the available KV cache memory (4.25 GiB)."
	gloo := "[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback address as fallback. Manually set the network interface with GLOO_SOCKET_IFNAME"
	fc := "fastchat-model-worker-1  | 2024-09-26 06:12:44 | ERROR | stderr | "
	raw437 := "INFO 02-03 13:18:39 (RayWorkerVllm pid=5085) [0m [E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=20518) ran for 1800270 milliseconds before timing out."
	long := "(RayWorkerWrapper pid=1394) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4967570, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800542 milliseconds before timing out."
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"a rich log entry whose wrapped message lost its indent, then the next entry",
			"[10/21/24 06:53:04] ERROR    ['distilabel.pipeline'] Failed to local.py:302\n" +
				"load step 'x_0': Step load failed:\n" +
				"The number of required GPUs\n" +
				"\n" +
				"[10/21/24 06:53:05] INFO     ['distilabel.pipeline'] Stopping   local.py:310\n" +
				"INFO 10-21 06:53:05 llm_engine.py:1] not rich\n",
			[]string{"[10/21/24 06:53:04] ERROR    ['distilabel.pipeline'] Failed to local.py:302\nload step 'x_0': Step load failed:\nThe number of required GPUs",
				"[10/21/24 06:53:05] INFO     ['distilabel.pipeline'] Stopping   local.py:310",
				"INFO 10-21 06:53:05 llm_engine.py:1] not rich"}},
		{"indented wrap (fold -s and a hanging indent)",
			"(RayWorkerWrapper pid=1394) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation \n" +
				"    timeout: WorkNCCL(SeqNum=4967570, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800542 \n" +
				"    milliseconds before timing out.\n",
			[]string{long}},
		{"indented wrap, blank dropped (textwrap)",
			"(RayWorkerWrapper pid=1394) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation\n" +
				"  timeout: WorkNCCL(SeqNum=4967570, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800542\n" +
				"  milliseconds before timing out.\n",
			[]string{long}},
		{"an NCCL line's wrapped piece goes to its writer, not to the unprefixed writer",
			// wrapped at 80 columns: "posix_fallocate" did not fit
			"7635c25c81cd:41588:41837 [0] include/shm.h:28 NCCL WARN The call to \n" +
				"  posix_fallocate failed : No space left on device\n" +
				"7635c25c81cd:41588:41837 [0] NCCL INFO include/shm.h:41 -> 2\n",
			[]string{"7635c25c81cd:41588:41837 [0] include/shm.h:28 NCCL WARN The call to posix_fallocate failed : No space left on device\n" +
				"7635c25c81cd:41588:41837 [0] NCCL INFO include/shm.h:41 -> 2"}},
		{"hard cut inside an address, at a terminal's width",
			gcs[:100] + "\n" + gcs[100:] + "\n",
			[]string{gcs}},
		{"compose prefix and a cut at 80 columns",
			("worker-1  | " + raylet)[:80] + "\n" + ("worker-1  | " + raylet)[80:] + "\n" +
				"worker-1  | (raylet) next\n",
			[]string{raylet, "(raylet) next"}},
		{"prefixes that differ from line to line",
			"worker-1 | Traceback (most recent call last):\n" +
				"[pod/worker-0/main] 2026-04-08T22:41:07.123456789Z   File \"/app/x.py\", line 3, in <module>\n" +
				"worker-1    | 2026-04-08T22:41:07.123456789Z     main()\n" +
				"ValueError: bad\n",
			[]string{"Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in <module>\n    main()\nValueError: bad"}},
		{"squashed onto one line",
			"2024-04-01 10:49:31,995\tINFO worker.py:1567 -- Connecting to existing Ray cluster at address: 10.4.80.151:6379... " +
				"INFO 08-23 10:16:22 ray_utils.py:174] Waiting for creating a placement group of specs for 10 seconds. " +
				"(RayWorkerWrapper pid=12, ip=10.0.0.2) INFO 08-23 10:16:23 worker.py:1] started " +
				"ERROR 08-23 10:16:24 engine.py:1] failed Traceback (most recent call last):   File \"/app/x.py\", line 3, in <module>     main()     ^^^^^^ ValueError: bad value\n",
			[]string{"2024-04-01 10:49:31,995\tINFO worker.py:1567 -- Connecting to existing Ray cluster at address: 10.4.80.151:6379...",
				"INFO 08-23 10:16:22 ray_utils.py:174] Waiting for creating a placement group of specs for 10 seconds.",
				"(RayWorkerWrapper pid=12, ip=10.0.0.2) INFO 08-23 10:16:23 worker.py:1] started",
				"ERROR 08-23 10:16:24 engine.py:1] failed",
				"Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in <module>\n    main()\n    ^^^^^^\nValueError: bad value"}},
		{"squashed pdsh output keeps its host labels",
			"trainer-2: [2024-02-24 04:37:50,964] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18507 " +
				"trainer-2: [2024-02-24 04:37:50,993] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18508 " +
				"trainer-2: [2024-02-24 04:37:51,021] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18509 " +
				"trainer-2: [2024-02-24 04:37:51,021] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18510\n",
			[]string{"trainer-2: [2024-02-24 04:37:50,964] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18507",
				"trainer-2: [2024-02-24 04:37:50,993] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18508",
				"trainer-2: [2024-02-24 04:37:51,021] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18509",
				"trainer-2: [2024-02-24 04:37:51,021] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18510"}},
		{"cut twice: the reporter's terminal at 119 columns, then fold at 80",
			kv[:80] + "\n" + kv[80:119] + "\n" + kv[119:] + "\n",
			[]string{kv}},
		{"an author's indented continuation, cut again at 80",
			gloo[:80] + "\n" + gloo[80:84] + "\n        " + gloo[85:] + "\n",
			[]string{gloo}},
		{"the writer wrapped before a tool prefixed every piece",
			"engine-1  | " + gloo[:84] + "\nengine-1  |         " + gloo[85:] + "\n",
			[]string{gloo}},
		{"a traceback under long tool prefixes, cut at 80: its header, frames and code mended",
			fc + "Traceback (mos\nt recent call last):\n" +
				fc + "  File \"/usr/l\nocal/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py\n\", line 989, in from_pretrained\n" +
				fc + "KeyError: 'mll\nama'\n",
			[]string{"Traceback (most recent call last):\n  File \"/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py\", line 989, in from_pretrained\nKeyError: 'mllama'"}},
		{"a traceback under long tool prefixes, word-wrapped at 80 with an indent",
			fc + "Traceback \n  (most recent call last):\n" +
				fc + "  File \n  \"/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuratio\n  n_auto.py\", line 691, in __getitem__\n" +
				fc + "    raise \n  KeyError(key)\n" +
				fc + "KeyError: \n  'mllama'\n",
			[]string{"Traceback (most recent call last):\n  File \"/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py\", line 691, in __getitem__\n    raise KeyError(key)\nKeyError: 'mllama'"}},
		{"squashed under tool prefixes",
			fc + "Traceback (most recent call last): " + fc + "  File \"/app/x.py\", line 3, in <module> " + fc + "    main() " + fc + "ValueError: bad value\n",
			[]string{"Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in <module>\n    main()\nValueError: bad value"}},
		{"squashed excerpt that starts at a frame",
			"  File \"/app/a.py\", line 55, in __init__     self.e = E.f(args)   File \"/app/b.py\", line 145, in f     e = cls(x)   File \"/app/c.py\", line 38, in validate     raise ValueError(msg) ValueError: The precision of resource node:172.17.0.8 cannot go beyond 0.0001\n",
			[]string{"  File \"/app/a.py\", line 55, in __init__\n    self.e = E.f(args)\n  File \"/app/b.py\", line 145, in f\n    e = cls(x)\n  File \"/app/c.py\", line 38, in validate\n    raise ValueError(msg)\nValueError: The precision of resource node:172.17.0.8 cannot go beyond 0.0001"}},
		{"squashed NCCL lines without their host prefix: the WARN and each trace line",
			"[pie-driver-cuda] fatal: NCCL async error at driver/cuda/src/distributed.cpp:100 (ncclCommInitRankConfig(&comm_, world_size, uid, rank, &config)): unhandled cuda error " +
				"transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument' transport/nvls.cc:401 -> 1 init.cc:1138 -> 1 group.cc:75 -> 1 [Async thread]\n",
			[]string{"[pie-driver-cuda] fatal: NCCL async error at driver/cuda/src/distributed.cpp:100 (ncclCommInitRankConfig(&comm_, world_size, uid, rank, &config)): unhandled cuda error",
				"transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument'",
				"transport/nvls.cc:401 -> 1", "init.cc:1138 -> 1", "group.cc:75 -> 1 [Async thread]"}},
		{"squashed headless NCCL 2.30.7 WARN lines, with the function after the line",
			"vm:691:691 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0> and then the paste lost the prefixes of the next lines on the way into the issue " +
				"transport/nvls.cc:251 (nvlsGroupCreate) NCCL WARN Cuda failure 1 'invalid argument' transport/nvls.cc:401 -> 1 init.cc:1138 -> 1\n",
			[]string{"vm:691:691 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0> and then the paste lost the prefixes of the next lines on the way into the issue",
				"transport/nvls.cc:251 (nvlsGroupCreate) NCCL WARN Cuda failure 1 'invalid argument'", "transport/nvls.cc:401 -> 1", "init.cc:1138 -> 1"}},
		{"squashed NCCL lines with their prefix are cut at the prefix only",
			"node004:27907:27907 [1] NCCL INFO init.cc:1138 -> 1 node004:27907:27907 [1] transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument' " +
				"node004:27907:27907 [1] NCCL INFO transport/nvls.cc:401 -> 1 node004:27907:27907 [1] NCCL INFO group.cc:75 -> 1 [Async thread]\n",
			[]string{"node004:27907:27907 [1] NCCL INFO init.cc:1138 -> 1", "node004:27907:27907 [1] transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument'\nnode004:27907:27907 [1] NCCL INFO transport/nvls.cc:401 -> 1\nnode004:27907:27907 [1] NCCL INFO group.cc:75 -> 1 [Async thread]"}},
		{"mpirun --tag-output: the tag is framing",
			"[1,0]<stdout>:c1:10158:10560 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>\n[1,1]<stdout>:\n[1,1]<stderr>:c1:10159:10559 [1] NCCL INFO NET/IB : No device found.\n",
			[]string{"c1:10158:10560 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>", "c1:10159:10559 [1] NCCL INFO NET/IB : No device found."}},
		{"squashed mpirun --tag-output lines are cut at each tag",
			"[1,0]<stdout>:c1:10158:10560 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0> [1,0]<stdout>:NCCL version 2.5.6+cuda10.2 " +
				"[1,3]<stdout>:c1:10161:10551 [3] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0> [1,2]<stdout>:c1:10160:10557 [2] NCCL INFO NET/IB : No device found.\n",
			[]string{"c1:10158:10560 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>", "NCCL version 2.5.6+cuda10.2",
				"c1:10161:10551 [3] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>", "c1:10160:10557 [2] NCCL INFO NET/IB : No device found."}},
		{"colour codes whose ESC was lost are columns of the cut",
			(raw437)[:80] + "\n" + raw437[80:] + "\n",
			[]string{strings.Replace(raw437, "[0m", "", 1)}},
		{"quoted in an issue (Markdown \"> \")",
			"> Traceback (most recent call last):\n>   File \"/app/x.py\", line 3, in <module>\n>     main()\n> ValueError: bad\n>\n> INFO 10-21 06:53:05 llm_engine.py:1] next\n",
			[]string{"Traceback (most recent call last):\n  File \"/app/x.py\", line 3, in <module>\n    main()\nValueError: bad", "INFO 10-21 06:53:05 llm_engine.py:1] next"}},
		{"CRLF and colours",
			"\x1b[32mINFO\x1b[0m 06-21 19:00:00 [api_server.py:1043] vLLM API server version 0.8.5\r\n",
			[]string{"INFO 06-21 19:00:00 [api_server.py:1043] vLLM API server version 0.8.5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := joinText(t, tc.in)
			if strings.Join(got, "\n--\n") != strings.Join(tc.want, "\n--\n") {
				t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n--\n"), strings.Join(tc.want, "\n--\n"))
			}
		})
	}
}

// Logs as written keep their lines: the shapes that look like a paste's
// wraps but are not (an indented block after a long line, lines of one
// width, times inside a long line) are left as they are.
func TestLogsAsWrittenStayWhole(t *testing.T) {
	row := "           8             2     float     sum      -1    29.05    0.00    0.00      0    28.53    0.00    0.00      0"
	for _, tc := range []struct {
		name string
		in   string
		want []string // nil: one record per line
	}{
		{"a Python warning and its source line",
			"/usr/local/lib/python3.12/site-packages/torch/cuda/__init__.py:283: UserWarning: Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n" +
				"  warnings.warn(\n",
			[]string{"/usr/local/lib/python3.12/site-packages/torch/cuda/__init__.py:283: UserWarning: Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n  warnings.warn("}},
		{"a Ray actor's fields",
			"ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n" +
				"\tclass_name: RayWorkerWrapper\n\tactor_id: 3a3\n",
			[]string{"ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n\tclass_name: RayWorkerWrapper\n\tactor_id: 3a3"}},
		{"a block after a colon",
			"RuntimeError: Version mismatch: The cluster was started with a Ray and Python version of:\n" +
				"    Ray: 2.12.0\n    Python: 3.11.11\n",
			[]string{"RuntimeError: Version mismatch: The cluster was started with a Ray and Python version of:\n    Ray: 2.12.0\n    Python: 3.11.11"}},
		{"ray status items",
			"Demands:\n {'GPU': 1.0, 'node:192.168.200.12': 0.001}: 1+ pending tasks/actors (1+ using placement groups)\n" +
				" {'GPU': 1.0} * 1 (PACK): 1+ pending placement groups\n",
			[]string{"Demands:\n {'GPU': 1.0, 'node:192.168.200.12': 0.001}: 1+ pending tasks/actors (1+ using placement groups)\n {'GPU': 1.0} * 1 (PACK): 1+ pending placement groups"}},
		{"a traceback with long frame lines",
			"Traceback (most recent call last):\n" +
				"  File \"/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/deepseek_v2.py\", line 129, in __init__\n" +
				"    self.experts = FusedMoE(\n" +
				"                   ^^^^^^^^^\n" +
				"torch.OutOfMemoryError: CUDA out of memory.\n",
			[]string{"Traceback (most recent call last):\n  File \"/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/deepseek_v2.py\", line 129, in __init__\n    self.experts = FusedMoE(\n                   ^^^^^^^^^\ntorch.OutOfMemoryError: CUDA out of memory."}},
		{"table rows of one width",
			strings.Repeat(row+"\n", 6),
			[]string{strings.TrimSuffix(strings.Repeat(row+"\n", 6), "\n")}},
		{"lines of exactly 100 columns, each its own entry",
			"trainer-2: [2024-02-24 04:37:50,964] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18507\n" +
				"trainer-2: [2024-02-24 04:37:50,993] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18508\n" +
				"trainer-2: [2024-02-24 04:37:51,021] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18509\n" +
				"trainer-2: [2024-02-24 04:37:51,021] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18510\n",
			nil},
		{"a long line that quotes times",
			"Job finished: submitted 2024-04-01 10:49:31,995 started 2024-04-01 10:49:32,001 ended 2024-04-01 10:59:31,000 " + strings.Repeat("x", 200) + "\n",
			nil},
		{"nested prefixes of one entry",
			"(vLLMHttpServer pid=6840) (Worker pid=7181) ERROR 06-09 17:58:55 [multiproc_executor.py:852] torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 32847, useIpv6: false, code: -98, name: EADDRINUSE\n",
			nil},
		{"a long line that ends in a time cut off (a fuzz crasher)",
			strings.Repeat("x ", 130) + "[0000-01-01 00:00:00,0\n",
			nil},
		{"an application's RFC 3339 times",
			"2026-04-08T22:41:07.123Z INFO one\n2026-04-08T22:41:08.456Z INFO two\n",
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == nil {
				want = strings.Split(strings.TrimSuffix(tc.in, "\n"), "\n")
			}
			got := joinText(t, tc.in)
			if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
				t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n--\n"), strings.Join(want, "\n--\n"))
			}
		})
	}
}

// A paste read by a tailer line by line, with idle flushes between lines,
// gives the records that reading the file at once gives.
func TestPasteSameLiveAndOffline(t *testing.T) {
	raylet := "2026-04-08T22:41:07.123456789Z (raylet) node_manager.cc:3007: 2 Workers (tasks / actors) killed due to memory pressure (OOM)"
	paste := "worker-1  | 7635c25c81cd:41588:41837 [0] include/shm.h:28 NCCL WARN The call to \n" +
		"  posix_fallocate failed : No space left on device\n" +
		raylet[:100] + "\n" + raylet[100:] + "\n" +
		"2024-04-01 10:49:31,995\tINFO worker.py:1 -- a " + "2024-04-01 10:49:32,995\tINFO worker.py:1 -- b " +
		"2024-04-01 10:49:33,995\tINFO worker.py:1 -- c " + "2024-04-01 10:49:34,995\tINFO worker.py:1 -- d " + strings.Repeat("e", 100) + "\n"
	var offline []Record
	lines, _, _ := readAllLines(t, []byte(paste), ReaderOptions{})
	j := NewJoiner(Origin{Node: "n"}, JoinOptions{}, func(r Record) { offline = append(offline, r) })
	for _, l := range lines {
		j.Add(l)
	}
	j.Flush()

	now := time.Date(2026, 4, 8, 22, 41, 0, 0, time.UTC)
	var live []Record
	d := NewDecoder(FormatAuto)
	lj := NewJoiner(Origin{Node: "n"}, JoinOptions{Now: func() time.Time { return now }}, func(r Record) { live = append(live, r) })
	off := int64(0)
	for i, raw := range strings.SplitAfter(paste, "\n") {
		if raw == "" {
			continue
		}
		if l, ok, _ := d.Decode([]byte(raw), off, int64(len(raw)), i+1); ok {
			lj.Add(l)
		}
		off += int64(len(raw))
		lj.FlushIdle(time.Second) // the paste arrived at once: nothing is idle
	}
	lj.Flush()
	if len(live) != len(offline) || len(offline) != 6 {
		t.Fatalf("live %d records, offline %d (want 6)", len(live), len(offline))
	}
	for i := range live {
		live[i].Time, offline[i].Time = time.Time{}, time.Time{} // (read time live)
		if live[i] != offline[i] {
			t.Errorf("record %d: live %+v, offline %+v", i, live[i], offline[i])
		}
	}
}

// FuzzSplitPastePrefixes: what is removed is a head of the line, a tool's
// time comes only with a stamp, and the rest is never longer.
func FuzzSplitPastePrefixes(f *testing.F) {
	for _, s := range []string{"worker-1  | x", "[pod/a-0/main] 2026-04-08T22:41:07.123456789Z x",
		"2026-04-09T00:41:07.123456789+02:00 x", "a_1 | b_1 | c_1 | d_1 | x", "INFO | x", "[pod/a/b]x", "0000-00-00T00:00:00.000000000Z ",
		"2026-02-30T00:00:00.000000000Z x", "x |", " | x", "[1,0]<stdout>:h:1:2 [0] NCCL INFO x", "[1,0]<stdout>:[1,1]<stderr>:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rest, tm, n := splitPastePrefixes(s)
		if n != len(s)-len(rest) || !strings.HasSuffix(s, rest) {
			t.Fatalf("%q: rest %q, n %d", s, rest, n)
		}
		if !tm.IsZero() && n < len("2006-01-02T15:04:05.000000000Z ") {
			t.Fatalf("%q: time %v from %d bytes", s, tm, n)
		}
		if n == 0 && !tm.IsZero() {
			t.Fatalf("%q: a time without a prefix", s)
		}
	})
}

// FuzzSquashCuts: cuts are in order, inside the text, each just after a
// blank, and each piece before a cut says something.
func FuzzSquashCuts(f *testing.F) {
	f.Add("2024-04-01 10:49:31,995\tINFO a 2024-04-01 10:49:32,995\tINFO b 2024-04-01 10:49:33,995\tINFO c " + strings.Repeat("d", 200))
	f.Add("x: [2024-02-24 04:37:50,964] [INFO] a x: [2024-02-24 04:37:50,964] [INFO] b x: [2024-02-24 04:37:50,964] [INFO] c x: Traceback (most recent call last):   File \"a\", line 1, in f     g()     ^^^ E: e" + strings.Repeat(" ", 200))
	f.Add("(A pid=1) (B pid=2) INFO 01-01 00:00:00 [a.py:1] x h:1:2 [0] NCCL INFO y h:1:2 [0] a.cc:1 NCCL WARN z I0101 00:00:00.000 1 a.cc:1] w" + strings.Repeat("q", 200))
	f.Add("x: unhandled cuda error a/b.cc:1 NCCL WARN c d.cc:2 -> 1 h:1:2 [0] NCCL INFO e.cc:3 -> 1 f.cu:4 -> 2 [Async thread]" + strings.Repeat("q", 200))
	f.Add("  File \"a.py\", line 1, in f     g()   File \"b.py\", line 2, in g     h()   File \"c.py\", line 3, in h     raise E(x) E: e" + strings.Repeat(" ", 200))
	f.Add("a | 2024-09-26 06:12:44 | ERROR | stderr | Traceback (most recent call last): web-1  | 2024-09-26 06:12:44 | ERROR | stderr |   File \"x\", line 1, in f [pod/a-0/m] 2026-04-08T22:41:07.123456789Z E: e web_1 | x" + strings.Repeat("q", 200))
	f.Fuzz(func(t *testing.T, text string) {
		cuts := squashCuts(text, nil)
		last := 0
		for _, c := range cuts {
			if c <= last || c >= len(text) || text[c-1] != ' ' {
				t.Fatalf("%q: cuts %v", text, cuts)
			}
			if !hasPayload(text[last:c]) {
				t.Fatalf("%q: cut %d leaves %q with nothing said", text, c, text[last:c])
			}
			last = c
		}
		if cuts != nil && len(cuts) < 1 {
			t.Fatalf("%q: empty cuts", text)
		}
	})
}

// FuzzPasteLiveOffline: a tailer that decodes and joins line by line, with
// idle flushes between lines, gives the records that offline reading gives.
func FuzzPasteLiveOffline(f *testing.F) {
	for _, s := range []string{
		"worker-1  | 7635c25c81cd:41588:41837 [0] include/shm.h:28 NCCL WARN The call to \n  posix_fallocate failed\n",
		strings.Repeat("x", 100) + "\n" + "10.1.2\n" + strings.Repeat("y", 100) + "\nz\n",
		"2024-04-01 10:49:31,995\tINFO a 2024-04-01 10:49:32,995\tINFO b 2024-04-01 10:49:33,995\tINFO c " + strings.Repeat("d", 200) + "\n  e\n",
		`{"log":"a\n","stream":"stdout","time":"2024-01-01T00:00:00Z"}` + "\n  broken\n" + `{"log":"b","stream":"stdout","time":"2024-01-01T00:00:00Z"}` + "\n",
		// cut twice; a writer's wrap under a tool's prefix; a traceback wrapped under long prefixes; a quote
		strings.Repeat("k", 80) + "\n" + strings.Repeat("v", 39) + "\ne is\n",
		"engine-1  | " + strings.Repeat("w ", 42) + "\nengine-1  |         address\n",
		"a-1 | 2024-09-26 06:12:44 | ERROR | stderr | Traceback (mos\nt recent call last):\na-1 | 2024-09-26 06:12:44 | ERROR | stderr |   File \n  \"/x\", line 1, in f\na-1 | 2024-09-26 06:12:44 | ERROR | stderr |     raise \n  E(x)\n",
		"> Traceback (most recent call last):\n>   File \"x\", line 1, in f\n>\n> E: e\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var offline []Record
		r := NewReader(bytes.NewReader(data), ReaderOptions{EOFIsEnd: true})
		j := NewJoiner(Origin{Node: "n"}, JoinOptions{}, func(r Record) { offline = append(offline, r) })
		for {
			l, err := r.Next()
			if err != nil {
				break
			}
			j.Add(l)
		}
		j.Flush()

		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var live []Record
		d := NewDecoder(FormatAuto)
		d.Detect(data)
		lj := NewJoiner(Origin{Node: "n"}, JoinOptions{Now: func() time.Time { return now }}, func(r Record) { live = append(live, r) })
		off, num := int64(0), 0
		for _, raw := range bytes.SplitAfter(data, []byte("\n")) {
			if len(raw) == 0 {
				continue
			}
			num++
			head, dropped := raw, int64(0)
			if lim := d.LineLimit(); len(bytes.TrimSuffix(head, []byte("\n"))) > lim {
				dropped = int64(len(bytes.TrimSuffix(head, []byte("\n"))) - lim)
				head = head[:lim]
			}
			if l, ok, _ := d.DecodeCut(head, off, int64(len(raw)), num, dropped); ok {
				lj.Add(l)
			}
			off += int64(len(raw))
			lj.FlushIdle(time.Second)
		}
		for {
			l, ok := d.Flush()
			if !ok {
				break
			}
			lj.Add(l)
		}
		lj.Flush()
		if len(live) != len(offline) {
			t.Fatalf("live %d records, offline %d", len(live), len(offline))
		}
		for i := range live {
			live[i].Time, offline[i].Time = time.Time{}, time.Time{}
			if live[i] != offline[i] {
				t.Fatalf("record %d: live %+v, offline %+v", i, live[i], offline[i])
			}
		}
	})
}

// The records of every log of the corpus as written (testdata/logs) are
// those of testdata/join/corpus-records.golden: a file's record count and a
// hash of their offsets, sizes, lines and texts. The paste rules guess from
// shapes; this keeps a guess from ever joining or cutting the lines of a log
// as its writers wrote it. A file not in the golden file yet is only listed
// (go test ./parsers -run TestCorpusRecordsAsWritten -update adds it).
func TestCorpusRecordsAsWritten(t *testing.T) {
	const golden = "testdata/join/corpus-records.golden"
	var files []string
	filepath.WalkDir("../testdata/logs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".md") && !strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 40 {
		t.Fatalf("found %d logs, want the corpus", len(files))
	}
	sort.Strings(files)
	var got strings.Builder
	sums := map[string]string{}
	for _, p := range files {
		h := sha256.New()
		n := 0
		if err := ReadFile(p, Origin{Node: "n", FileID: "f"}, func(r Record) {
			n++
			fmt.Fprintf(h, "%d %d %d %d %q\n", r.Offset, r.Size, r.Line, r.Lines, r.Text)
		}, nil); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("../testdata/logs", p)
		line := fmt.Sprintf("%s %d %x", filepath.ToSlash(rel), n, h.Sum(nil)[:12])
		sums[filepath.ToSlash(rel)] = line
		got.WriteString(line + "\n")
	}
	if goldenUpdate() {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		file, _, _ := strings.Cut(want, " ")
		switch line, ok := sums[file]; {
		case !ok:
			t.Errorf("%s is in %s and no longer in the corpus", file, golden)
		case line != want:
			t.Errorf("%s: records changed: %s, as written %s (run go test ./parsers -run TestJoinCorpus -v and look at its records)", file, line, want)
		}
		delete(sums, file)
	}
	for file := range sums {
		t.Logf("%s: not in %s yet", file, golden)
	}
}
