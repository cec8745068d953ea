package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestAnalyzerManifest: deploy/kubernetes/analyzer.yaml runs serve with
// flags it accepts, keeps its data on the StatefulSet's volume, reads the
// tokens from a secret, and probes liveness on /healthz and readiness on
// /readyz of its HTTP port; its Service exposes NATS and HTTP.
func TestAnalyzerManifest(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/analyzer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var m struct {
			Kind string
			Spec struct {
				Ports    []struct{ Name string }
				Template struct {
					Spec struct {
						Containers []struct {
							Command, Args []string
							Env           []struct{ Name string }
							Liveness      struct {
								HTTPGet struct{ Path, Port string } `yaml:"httpGet"`
							} `yaml:"livenessProbe"`
							Readiness struct {
								HTTPGet struct{ Path, Port string } `yaml:"httpGet"`
							} `yaml:"readinessProbe"`
							VolumeMounts []struct {
								MountPath string `yaml:"mountPath"`
							} `yaml:"volumeMounts"`
						}
					}
				}
				VolumeClaimTemplates []any `yaml:"volumeClaimTemplates"`
			}
		}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		kinds[m.Kind] = true
		switch m.Kind {
		case "Service":
			if len(m.Spec.Ports) != 2 {
				t.Errorf("Service ports %+v", m.Spec.Ports)
			}
		case "StatefulSet":
			c := m.Spec.Template.Spec.Containers[0]
			if c.Args[0] != "serve" {
				t.Fatalf("args %q", c.Args)
			}
			s, _, err := parseServe(c.Args[1:], io.Discard, io.Discard)
			if err != nil {
				t.Fatalf("serve %q: %v", c.Args[1:], err)
			}
			if s.DataDir != "/data" || len(c.VolumeMounts) == 0 || c.VolumeMounts[0].MountPath != "/data" || len(m.Spec.VolumeClaimTemplates) == 0 {
				t.Errorf("data dir %q, mounts %+v", s.DataDir, c.VolumeMounts)
			}
			if strings.Contains(strings.Join(c.Args, " "), "token") {
				t.Errorf("a token on the command line: %q", c.Args)
			}
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
			}
			if !env["FAULTLINE_TOKEN"] || !env["FAULTLINE_HTTP_TOKEN"] {
				t.Errorf("env %v", env)
			}
			if c.Liveness.HTTPGet.Path != "/healthz" || c.Readiness.HTTPGet.Path != "/readyz" {
				t.Errorf("probes %+v %+v", c.Liveness, c.Readiness)
			}
		}
	}
	if !kinds["Service"] || !kinds["StatefulSet"] {
		t.Errorf("kinds %v", kinds)
	}
}
