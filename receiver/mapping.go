package receiver

import (
	"sort"
	"strings"

	"github.com/faultline/faultline/parsers"
)

// The mapping of the names a client gives a stream to Faultline's origin
// (docs/receivers.md lists it): the first key present wins. OTLP keys are
// resource attributes (a log record's attributes for the file and stream);
// Loki keys are stream labels (structured metadata for the file), written as
// Loki and Promtail name them.
var (
	otlpCluster   = []string{"faultline.cluster", "k8s.cluster.name", "ray.io/cluster", "k8s.pod.labels.ray.io/cluster", "k8s.pod.label.ray.io/cluster"}
	otlpNode      = []string{"faultline.node", "k8s.pod.name", "host.name", "k8s.node.name"}
	otlpContainer = []string{"faultline.container", "container.name", "k8s.container.name"}
	otlpFile      = []string{"log.file.path", "log.file.name"}
	otlpStream    = []string{"log.iostream"}

	lokiCluster   = []string{"faultline_cluster", "cluster", "k8s_cluster_name", "ray_io_cluster"}
	lokiNode      = []string{"faultline_node", "node", "pod", "k8s_pod_name", "host", "hostname", "host_name", "k8s_node_name", "nodename"}
	lokiContainer = []string{"faultline_container", "container", "container_name", "k8s_container_name"}
	lokiFile      = []string{"filename", "log_file_path", "file", "path"}
	lokiIOStream  = []string{"stream"}
)

// first returns the value of the first key of keys that attrs has.
func first(attrs map[string]string, keys []string) string {
	for _, k := range keys {
		if v := attrs[k]; v != "" {
			return v
		}
	}
	return ""
}

// origin maps a stream's names to an origin; identity is every name of the
// stream (labels, resource attributes), which its FileID hashes, so two
// streams that differ in any name are two streams.
func origin(kind string, attrs map[string]string, cluster, node, container, file []string, defCluster, defNode string) parsers.Origin {
	o := parsers.Origin{
		Cluster:   first(attrs, cluster),
		Node:      first(attrs, node),
		Container: first(attrs, container),
		File:      first(attrs, file),
	}
	if o.Cluster == "" {
		o.Cluster = defCluster
	}
	if o.Node == "" {
		o.Node = defNode
	}
	if o.File == "" {
		// Evidence names node:file:line; without a file the stream is
		// named by what the client called it.
		o.File = kind
		if o.Container != "" {
			o.File = kind + ":" + o.Container
		}
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{o.Cluster, o.Node, o.Container, o.File}
	for _, k := range keys {
		parts = append(parts, k+"="+attrs[k])
	}
	o.FileID = fileID(kind, parts...)
	return o
}

// isStream reports whether s names an output stream the way records do.
func isStream(s string) string {
	switch s = strings.ToLower(s); s {
	case "stdout", "stderr":
		return s
	}
	return ""
}
