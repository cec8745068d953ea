package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// container is a container of a Kubernetes pod template, as far as the
// tests read it.
type container struct {
	Name          string
	Command, Args []string
	Env           []struct {
		Name, Value string
		ValueFrom   map[string]any `yaml:"valueFrom"`
	}
}

// manifestContainers parses every document of every manifest under
// deploy/kubernetes and returns the containers of their pod templates
// (Deployment/StatefulSet/DaemonSet templates, RayCluster head and worker
// groups), by file.
func manifestContainers(t *testing.T) map[string][]container {
	t.Helper()
	files, err := filepath.Glob("../../deploy/kubernetes/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	type podSpec struct{ Containers []container }
	type template struct{ Spec podSpec }
	out := map[string][]container{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var m struct {
				APIVersion string `yaml:"apiVersion"`
				Kind       string
				Metadata   struct{ Name, Namespace string }
				Spec       struct {
					Template      template
					HeadGroupSpec struct {
						Template template
					} `yaml:"headGroupSpec"`
					WorkerGroupSpecs []struct {
						Template template
					} `yaml:"workerGroupSpecs"`
				}
			}
			if err := yaml.UnmarshalWithOptions(doc, &m); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if m.APIVersion == "" || m.Kind == "" || m.Metadata.Name == "" || m.Metadata.Namespace == "" {
				t.Errorf("%s document %d: apiVersion %q kind %q name %q namespace %q", f, i, m.APIVersion, m.Kind, m.Metadata.Name, m.Metadata.Namespace)
			}
			cs := append([]container{}, m.Spec.Template.Spec.Containers...)
			cs = append(cs, m.Spec.HeadGroupSpec.Template.Spec.Containers...)
			for _, w := range m.Spec.WorkerGroupSpecs {
				cs = append(cs, w.Template.Spec.Containers...)
			}
			out[filepath.Base(f)] = append(out[filepath.Base(f)], cs...)
		}
	}
	return out
}

// TestKubernetesManifests: every manifest parses; every shipper container
// in them (the DaemonSet, the KubeRay sidecars) runs with flags the shipper
// accepts, its token from a secret, never a command line; the sidecar takes
// its cluster from the RayCluster's label and shares /tmp/ray.
func TestKubernetesManifests(t *testing.T) {
	shippers := 0
	for file, cs := range manifestContainers(t) {
		for _, c := range cs {
			if len(c.Command) == 0 || !strings.HasSuffix(c.Command[0], "/shipper") {
				continue
			}
			shippers++
			env := map[string]string{"NODE_NAME": "gpu-node-1", "POD_NAME": "vllm-head-x7k2p", "RAY_CLUSTER": "vllm"}
			token := false
			for _, e := range c.Env {
				if e.Value != "" {
					env[e.Name] = e.Value
				}
				token = token || (e.Name == "FAULTLINE_TOKEN" && e.ValueFrom["secretKeyRef"] != nil)
			}
			if !token {
				t.Errorf("%s %s: no FAULTLINE_TOKEN from a secret", file, c.Name)
			}
			var args []string
			for _, a := range c.Args {
				args = append(args, regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(a, func(m string) string { return env[m[2:len(m)-1]] }))
			}
			s := checkArgs(t, args)
			if file == "kuberay-sidecar.yaml" {
				if s.Cluster != "vllm" || s.Node != "vllm-head-x7k2p" || len(s.Path) != 1 || !strings.HasPrefix(s.Path[0], "/tmp/ray/") {
					t.Errorf("%s %s: %+v", file, c.Name, s)
				}
				ok := false
				for _, e := range c.Env {
					if e.Name == "RAY_CLUSTER" {
						ok = strings.Contains(yamlString(e.ValueFrom), "ray.io/cluster")
					}
				}
				if !ok {
					t.Errorf("%s %s: RAY_CLUSTER does not come from the ray.io/cluster label", file, c.Name)
				}
			}
		}
	}
	if shippers < 3 {
		t.Errorf("%d shipper containers in the manifests, want the DaemonSet's and a sidecar per Ray group", shippers)
	}
}

func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
