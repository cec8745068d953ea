package shipper

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultline/faultline/parsers"
)

// PodLog is what a kubelet's log path says about a container's log file.
type PodLog struct {
	Namespace, Pod, UID, Container string
	Restart                        int // the container's restart count (the file's name)
}

// ParsePodLogPath reads the kubelet's layouts of container logs:
//
//	/var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log
//	  (and its rotations <restart>.log.<YYYYMMDD-hhmmss>[.gz])
//	/var/log/containers/<pod>_<namespace>_<container>-<container id>.log
//	  (the symlinks into it)
//
// Namespaces and pod names are DNS labels and subdomains, so "_" separates
// them unambiguously. ok is false for any other path.
func ParsePodLogPath(path string) (PodLog, bool) {
	path = filepath.ToSlash(filepath.Clean(path))
	parts := strings.Split(path, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		switch parts[i] {
		case "pods":
			if i+3 >= len(parts) || i+4 != len(parts) {
				continue
			}
			ids := strings.Split(parts[i+1], "_")
			if len(ids) != 3 || ids[0] == "" || ids[1] == "" || ids[2] == "" {
				return PodLog{}, false
			}
			name := parts[i+3]
			j := strings.Index(name, ".log")
			if j <= 0 {
				return PodLog{}, false
			}
			restart, err := strconv.Atoi(name[:j])
			if err != nil || parts[i+2] == "" {
				return PodLog{}, false
			}
			return PodLog{Namespace: ids[0], Pod: ids[1], UID: ids[2], Container: parts[i+2], Restart: restart}, true
		case "containers":
			if i+2 != len(parts) {
				continue
			}
			name, ok := strings.CutSuffix(parts[i+1], ".log")
			ids := strings.Split(name, "_")
			if !ok || len(ids) != 3 {
				return PodLog{}, false
			}
			k := strings.LastIndexByte(ids[2], '-')
			if k <= 0 || len(ids[2])-k-1 != 64 {
				return PodLog{}, false // <container>-<64 hex digits of the container ID>
			}
			return PodLog{Pod: ids[0], Namespace: ids[1], Container: ids[2][:k]}, true
		}
	}
	return PodLog{}, false
}

// kubeOrigin names a kubelet log file's records by its pod (the shipper's
// --pod-as-node): in Kubernetes a Ray node is a pod, so the pod is the node
// the rules correlate, and the container (namespace/pod/container) what
// evidence shows.
func kubeOrigin(o parsers.Origin, path string, podAsNode bool) parsers.Origin {
	pl, ok := ParsePodLogPath(path)
	if !ok {
		return o
	}
	o.Container = pl.Namespace + "/" + pl.Pod + "/" + pl.Container
	if podAsNode {
		o.Node = pl.Pod
	}
	return o
}
