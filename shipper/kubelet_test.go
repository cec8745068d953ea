package shipper

import (
	"testing"

	"github.com/faultline/faultline/parsers"
)

// TestParsePodLogPath: the kubelet's layouts (as on a node: the pod
// directory, a rotation, a compressed rotation, the /var/log/containers
// symlink; KubeRay head and worker pods) and paths that are none of them.
func TestParsePodLogPath(t *testing.T) {
	const id = "3f1c5a0b9d2e4f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"
	for _, c := range []struct {
		path string
		want PodLog
		ok   bool
	}{
		{"/var/log/pods/kuberay_raycluster-vllm-head-x7k2p_0d5a6f1e-3b2c-4d1e-9f8a-7b6c5d4e3f2a/ray-head/0.log",
			PodLog{Namespace: "kuberay", Pod: "raycluster-vllm-head-x7k2p", UID: "0d5a6f1e-3b2c-4d1e-9f8a-7b6c5d4e3f2a", Container: "ray-head"}, true},
		{"/var/log/pods/kuberay_raycluster-vllm-gpu-group-worker-9qz4m_5e6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b/ray-worker/3.log",
			PodLog{Namespace: "kuberay", Pod: "raycluster-vllm-gpu-group-worker-9qz4m", UID: "5e6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b", Container: "ray-worker", Restart: 3}, true},
		{"/var/log/pods/kube-system_kube-apiserver-cp1_a1b2c3d4e5f60718293a4b5c6d7e8f90/kube-apiserver/1.log.20260408-224105",
			PodLog{Namespace: "kube-system", Pod: "kube-apiserver-cp1", UID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", Container: "kube-apiserver", Restart: 1}, true},
		{"/var/log/pods/default_vllm-0_11111111-2222-3333-4444-555555555555/vllm/0.log.20260408-224105.gz",
			PodLog{Namespace: "default", Pod: "vllm-0", UID: "11111111-2222-3333-4444-555555555555", Container: "vllm"}, true},
		{"/host/var/log/pods/ml_ray.head-0_uid/ray-head/0.log", PodLog{Namespace: "ml", Pod: "ray.head-0", UID: "uid", Container: "ray-head"}, true},
		{"/var/log/containers/raycluster-vllm-head-x7k2p_kuberay_ray-head-" + id + ".log",
			PodLog{Namespace: "kuberay", Pod: "raycluster-vllm-head-x7k2p", Container: "ray-head"}, true},
		{"/var/log/pods/kuberay_pod_uid/ray-head/current.log", PodLog{}, false},
		{"/var/log/pods/kuberay-pod-uid/ray-head/0.log", PodLog{}, false},
		{"/var/log/pods/kuberay_pod_uid/0.log", PodLog{}, false},
		{"/var/log/containers/not-a-pod.log", PodLog{}, false},
		{"/var/log/containers/pod_ns_container-short.log", PodLog{}, false},
		{"/tmp/ray/session_latest/logs/raylet.out", PodLog{}, false},
		{"/var/lib/docker/containers/" + id + "/" + id + "-json.log", PodLog{}, false},
	} {
		got, ok := ParsePodLogPath(c.path)
		if ok != c.ok || got != c.want {
			t.Errorf("%s:\n got %+v %v\nwant %+v %v", c.path, got, ok, c.want, c.ok)
		}
	}
	o := parsers.Origin{Cluster: "dgx", Node: "gpu-node-1", File: "f"}
	path := "/var/log/pods/kuberay_raycluster-vllm-head-x7k2p_uid/ray-head/0.log"
	if got := kubeOrigin(o, path, true); got.Node != "raycluster-vllm-head-x7k2p" || got.Container != "kuberay/raycluster-vllm-head-x7k2p/ray-head" || got.Cluster != "dgx" {
		t.Errorf("--pod-as-node: %+v", got)
	}
	if got := kubeOrigin(o, path, false); got.Node != "gpu-node-1" || got.Container != "kuberay/raycluster-vllm-head-x7k2p/ray-head" {
		t.Errorf("pod log without --pod-as-node: %+v", got)
	}
	if got := kubeOrigin(o, "/var/log/ray.log", true); got != o {
		t.Errorf("not a pod log: %+v", got)
	}
}
