package rule

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/faultline/faultline/internal/loggen"
	"github.com/faultline/faultline/parsers"
)

// Launch signals are data: a --rules DIR's launch.yaml adds a readiness
// line (here an in-house server's; SGLang's is built in), and with it a later
// launch that comes up resolves the earlier launch's finding; without it,
// nothing is resolved.
func TestLaunchSignalsFromData(t *testing.T) {
	custom := fstest.MapFS{
		"launch.yaml":       {Data: []byte("ready:\n  - literal: 'inference gateway accepting requests'\n")},
		"catalog/test.yaml": {Data: []byte(testCatalog)},
		"r.yaml":            {Data: []byte(strings.SplitN(testRules, "---", 2)[0])},
	}
	for _, tt := range []struct {
		name     string
		fsys     fstest.MapFS
		resolved bool
	}{
		{"built-in signals only", fstest.MapFS{"r.yaml": custom["r.yaml"], "catalog/test.yaml": custom["catalog/test.yaml"]}, false},
		{"with the DIR's ready line", custom, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadFSPack(tt.fsys, ".", "dir")
			if err != nil {
				t.Fatal(err)
			}
			e := NewEngine(p.Rules)
			e.Observe(ev("a", 0, "vLLM API server version 0.17.1"))
			e.Observe(ev("a", 1, "Error while creating shared memory segment /dev/shm/nccl-1"))
			e.Observe(ev("a", 10, "vLLM API server version 0.17.1"))
			got := e.Observe(ev("a", 20, "inference gateway accepting requests on :8000"))
			if resolved := len(got) == 1 && got[0].Status == "resolved"; resolved != tt.resolved {
				t.Fatalf("resolved = %v, want %v (%+v)", resolved, tt.resolved, got)
			}
		})
	}
}

// A broken launch.yaml is reported at its line and column.
func TestLaunchSignalsLint(t *testing.T) {
	_, err := LoadFSPack(fstest.MapFS{"launch.yaml": {Data: []byte(`opens:
  vllm:
    - literal: 'vLLM says hello'
      regex: 'hello ('
failed:
  - 'ab'
ready:
  - regex: 'x'
`)}}, ".", "dir")
	for _, want := range []string{
		"dir/launch.yaml:4:14: regex: error parsing regexp",
		`dir/launch.yaml:6:5: literal "ab" is too short`,
		"dir/launch.yaml:8:10: a signal needs a literal",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

// A failure signal may be a bare literal or a literal with a regex the
// message must also match: the bare exception line of a paste counts, the
// same words inside a sentence do not.
func TestFailedSignalWithRegex(t *testing.T) {
	p, err := LoadFSPack(fstest.MapFS{"launch.yaml": {Data: []byte(`failed:
  - 'plain literal signal'
  - literal: 'Error: '
    regex: '(?m)^(?:[A-Za-z_]\w*\.)*[A-Z]\w*Error: \S'
`)}}, ".", "dir")
	if err != nil {
		t.Fatal(err)
	}
	ls := p.launch
	for _, tt := range []struct {
		msg  string
		want bool
	}{
		{"ValueError: Loaded weights leave no GPU memory for the KV cache", true},
		{"requests.exceptions.HTTPError: 401 Client Error: Unauthorized", true},
		{"the last Error: was handled and retried", false},
		{"a plain literal signal here", true},
	} {
		if got := ls.confirmed(markFailed, tt.msg); got != tt.want {
			t.Errorf("confirmed(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

// TestLaunchSignalLineStart: a signal whose regex starts with "(?m)^" is
// tried at line starts only, and says what the regex says, on every event
// of generated logs and on texts where the match starts on a later line or
// spans lines; a regex that "^" does not anchor as a whole keeps running
// as it is.
func TestLaunchSignalLineStart(t *testing.T) {
	for _, tc := range []struct {
		src    string
		anchor bool
	}{
		{`(?m)^\s*[A-Z]\w*Error: \S`, true},
		{`(?m)^a|b`, false},
		{`(?m)^a$`, false},
		{`(?m)^a|^b`, false},
		{`(?m)^(?:a|b)c`, true},
		{`a(?m)^b`, false},
	} {
		if got := lineStartRegex(tc.src) != nil; got != tc.anchor {
			t.Errorf("lineStartRegex(%q) anchored %v, want %v", tc.src, got, tc.anchor)
		}
	}
	rules, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	ls := NewEngine(rules).idx.launch
	texts := signalTexts(t)
	anchored, hits := 0, 0
	for mark := range ls.signals {
		for i := range ls.signals[mark] {
			s := &ls.signals[mark][i]
			if s.lineRe == nil {
				continue
			}
			anchored++
			for _, text := range texts {
				want := s.re.MatchString(text)
				if got := s.matches(text); got != want {
					t.Errorf("%q on %q: %v, the regex says %v", s.re, text, got, want)
				}
				if want {
					hits++
				}
			}
		}
	}
	if anchored == 0 || hits == 0 {
		t.Fatalf("%d anchored signals, %d matches: nothing checked", anchored, hits)
	}
}

// signalTexts are texts for the launch signals: messages and texts of the
// records of 20k generated lines (1% diagnostic), and texts where an
// exception line starts on a later line or a match spans lines.
func signalTexts(t *testing.T) []string {
	texts := []string{
		"ValueError: x",
		"first line\nValueError: bad value",
		"first line\n  \n  torch.OutOfMemoryError: CUDA",
		"`\n\nRuntimeError: y",
		"no error here: RpcError: RPC Error message: reset",
		"x ValueError: not at a line start\nmore",
		"Exception: z\n",
		"first line\nray.exceptions.RayTaskError(KeyError): ray::RayWorkerWrapper.execute_method()",
		"RayTaskError(Exception): w",
		"\n",
		"",
	}
	var buf bytes.Buffer
	if _, err := loggen.New(3, loggen.Options{DiagnosticShare: 0.01}).WriteLines(&buf, loggen.Plain, 20_000); err != nil {
		t.Fatal(err)
	}
	j := parsers.NewJoiner(parsers.Origin{Node: "n", FileID: "x"}, parsers.JoinOptions{}, func(r parsers.Record) {
		texts = append(texts, parsers.Parse(r).Message, r.Text)
	})
	for _, l := range strings.Split(buf.String(), "\n") {
		j.Add(parsers.Line{Text: l})
	}
	j.Flush()
	return texts
}

// TestConfirmedHit: the launch signals looked up by the scanner's hits
// say what trying every signal of a mark says, for every mark.
func TestConfirmedHit(t *testing.T) {
	rules, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(rules)
	confirmed := 0
	for _, text := range signalTexts(t) {
		hits := e.idx.ac.scan(text)
		for mark := range e.idx.launch.signals {
			want := e.idx.launch.confirmed(mark, text)
			if got := e.idx.confirmedHit(mark, text, hits); got != want {
				t.Errorf("mark %d on %q: %v, trying every signal says %v", mark, text, got, want)
			}
			if want {
				confirmed++
			}
		}
	}
	if confirmed == 0 {
		t.Fatal("no text confirmed a signal: nothing checked")
	}
}

// TestBuiltinLauncherFailureSignals: the launchers' own failure reports
// (vLLM's multi-node-serving.sh, Open MPI's mpirun, DeepSpeed's launch.py,
// pdsh, the kubelet, NIXL's UCX backend) and the supervisors of deployments (ray start --block,
// Ray Jobs, kubectl, Slurm, torchrun, docker compose, systemd, the shell) mark a launch failed, as
// they print them; the same tools' progress and success lines do not.
func TestBuiltinLauncherFailureSignals(t *testing.T) {
	rules, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	ls := NewEngine(rules).idx.launch
	for _, tt := range []struct {
		msg  string
		want bool
	}{
		{"Error: Missing argument --ray_address", true},
		{"Error: Missing argument --ray_cluster_size", true},
		{"Ray worker starts timeout, head address: 10.0.0.5:6379", true},
		{"Waiting for all ray workers to be active timed out.", true},
		{"Wait for all ray workers to be active. 1/2 is active", false},
		{"Waiting until the ray worker is active...", false},
		{"All ray workers are active and the ray cluster is initialized successfully.", false},
		{"Worker: Ray runtime started with head address 10.0.0.5:6379", false},
		{"mpirun noticed that process rank 6 with PID 0 on node xxxxxxxx exited on signal 9 (Killed).", true},
		// Open MPI wraps its help text at 80 columns.
		{"mpirun noticed that process rank 1 with PID 90398 on node shannon\nexited  on signal 11 (Segmentation fault).", true},
		{"Primary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted.", true},
		{"['/usr/bin/python', '-u', 'train.py', '--local_rank=1'] exits with return code = 1", true},
		{"Process 4123 exits successfully.", false},
		{"pdsh@basecm11: node002: ssh exited with exit code 255", true},
		{"pdsh@basecm11: node002: ssh exited with exit code 0", false},
		{"  Warning  BackOff    5m16s (x21329 over 3d20h)  kubelet  Back-off restarting failed container ray-head in pod main-ray-cluster-kuberay-head-7zw69_default(da4143b0)", true},
		{"Unexpected UCX error: Endpoint timeout", true},
		{"UCX  INFO  ucp_context: using transports tcp,cuda_copy", false},
		// ray start --block, both spellings; Ray Jobs; RAY_CHECK.
		{"Some Ray subprocesses exited unexpectedly:\n  raylet [exit code=1]", true},
		{"Some Ray subprcesses exited unexpectedly:", true},
		{"Running subprocesses are monitored and a message will be printed if any of them terminate unexpectedly.", false},
		{"Job entrypoint command failed with exit code -11, last available logs (truncated to 20,000 chars):", true},
		{"Job 'raysubmit_73nQ2jgcpZATWrNN' failed", true},
		{"Job 'raysubmit_73nQ2jgcpZATWrNN' succeeded", false},
		{"experimental_mutable_object_provider.cc:153:  An unexpected system state has occurred. You have likely discovered a bug in Ray.", true},
		{"gcs_rpc_client.h:537:  Check failed: absl::ToInt64Seconds(absl::Now() - gcs_last_alive_time_) < 60", true},
		// kubectl describe and get pods.
		{"      Exit Code:    1", true},
		{"      Exit Code:    0", false},
		{"default   main-ray-cluster-kuberay-head-7zw69   0/1     CrashLoopBackOff   6 (4m41s ago)   18m", true},
		{"qwen-multinode-0-vllm-0-1   0/1     Error     3 (31s ago)   54s", true},
		{"qwen-multinode-0-vllm-0-0   0/1     Running   0             54s", false},
		{"      Reason:       OOMKilled", true},
		{"vllm-0   0/1     ImagePullBackOff   0          2m", true},
		{"INFO 05-03 00:18:16 [core.py:12] Error handling is enabled", false},
		// Slurm.
		{"srun: error: sn30-r1-h1: task 0: Exited with exit code 1", true},
		{"srun: error: node30: tasks 0-1: Killed", true},
		{"srun: error: Unable to create step for job 20192207: Invalid generic resource (gres) specification", true},
		{"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", false},
		{"slurmstepd: error: *** JOB 1234567 ON gpu-node-07 CANCELLED AT 2025-03-01T10:00:00 DUE TO TIME LIMIT ***", true},
		{"slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1234.0.", true},
		// torchrun, docker compose, systemd, the shell, the kernel, abseil.
		{"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", true},
		{"Root Cause (first observed failure):", true},
		{"ray-worker exited with code 1", true},
		{"ray-worker exited with code 0", false},
		{"vllm.service: Main process exited, code=exited, status=1/FAILURE", true},
		{"vllm.service: Main process exited, code=exited, status=0/SUCCESS", false},
		{"vllm.service: Failed with result 'exit-code'.", true},
		{"/opt/start.sh: line 12:  4711 Killed                  python3 -m vllm.entrypoints.openai.api_server", true},
		{"Killed", true},
		{"Killed 3 idle workers", false},
		{"Segmentation fault (core dumped)", true},
		{"Out of memory: Killed process 12345 (ray::RayWorkerW)", true},
		{"(RayWorker pid=4711) *** SIGBUS received at time=1692322557 on cpu 5 ***", true},
		{"      Reason:       Error      Exit Code:    137      Started:      Tue, 18 Nov 2025", true},
		{"[job-3bb8-worker-0:4682 :0:4682] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))", true},
		{"[job-3bb8-worker-0:4682 :0:4682] Caught signal 11 (Segmentation fa", true},
		{"docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].", true},
		{"exec /usr/bin/python3: exec format error", true},
		// Hugging Face TGI's launcher: a shard that exited, failed to start or
		// crashed, the router that crashed, and main's error at exit.
		{"2024-05-02T10:11:21.533307Z ERROR shard-manager: text_generation_launcher: Shard complete standard error output:", true},
		{"2024-05-02T10:11:21.631027Z ERROR text_generation_launcher: Shard 1 failed to start", true},
		{"2024-05-02T10:41:21.631027Z ERROR text_generation_launcher: Shard 0 crashed", true},
		{"2024-05-02T10:41:21.631027Z ERROR text_generation_launcher: Webserver Crashed", true},
		{"Error: ShardCannotStart", true},
		{"Error: DownloadError", true},
		{"Error: NotEnoughCUDADevices(\"`sharded` is true but only found 1 CUDA devices\")", true},
		{"2024-05-02T10:11:40.533307Z  INFO shard-manager: text_generation_launcher: Shard ready in 34.61s rank=0", false},
		{"2024-05-02T10:11:15.931215Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... rank=0", false},
		{"Error: ShardCannotStartle", false},
		{"Service failed to start", false},
		// NIXL's lower-case exception classes.
		{"nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND", true},
		{"rixl._bindings.nixlBackendError: NIXL_ERR_BACKEND", true},
		// Ray's wrapped exceptions name the cause in parentheses.
		{"ray.exceptions.RayTaskError(KeyError): ray::RayWorkerWrapper.execute_method() (pid=535, ip=192.168.3.107)", true},
		{"ray.exceptions.RayTaskError(ValueError): ray::RayWorkerWrapper.execute_method()", true},
		{"RayTaskError(Exception): ray::f()", true},
		{"INFO stats(KeyError): 0 raised", false},
		{"counter for OOMError(s): 0", false},
	} {
		if got := ls.confirmed(markFailed, tt.msg); got != tt.want {
			t.Errorf("confirmed(failed, %q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

// TestBuiltinNCCLFailureSignals: NCCL's own reports of an error return (the
// async init thread's trace, the proxy's failed operations) mark a launch
// failed; NCCL's INFO traces of a success and the benign "[Service thread]
// Connection closed by localRank" of a communicator's teardown do not.
func TestBuiltinNCCLFailureSignals(t *testing.T) {
	rules, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	ls := NewEngine(rules).idx.launch
	for _, tt := range []struct {
		msg  string
		want bool
	}{
		{"group.cc:75 -> 6 [Async thread]", true},
		{"init.cc:840 -> 2 [Async thread]", true},
		{"-> 3 [Async thread]", true}, // 2.30.7: INFO_LOC moves the file:line into the prefix
		{"> 2 [Async thread]", true},  // the piece a cut at 80 columns leaves (NVIDIA/nccl#562's bazel paths)
		{"group.cc:64 -> 0 [Async thread]", false},
		{"init.cc:1358 -> 3", false}, // the same trace on the caller's thread: one frame of many
		{"[Proxy Service 3] Failed to execute operation Setup from rank 3, retcode 1", true},
		{"[Service thread] Error encountered progressing operation=Connect, res=3, closing connection", true},
		{"Socket recv failed while polling for opId=0x55a51966cc80", true},
		{"[Service thread] Connection closed by localRank 2", false},
	} {
		if got := ls.confirmed(markFailed, tt.msg); got != tt.want {
			t.Errorf("confirmed(failed, %q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}
