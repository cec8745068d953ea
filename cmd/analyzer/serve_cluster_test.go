package main

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/server"
	"github.com/faultline/faultline/transport"
)

// parseClusterFlags parses args with serve's NATS and scale-out flags.
func parseClusterFlags(t *testing.T, args ...string) (server.Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg server.Config
	fs.StringVar(&cfg.NATS.URL, "nats", "", "")
	cf := registerClusterFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	return cfg, cf.apply(fs, &cfg)
}

// TestServeClusterFlags: the scale-out and retention flags land in
// server.Config.Cluster and .Stream; none of them leaves the
// single-machine default as it was.
func TestServeClusterFlags(t *testing.T) {
	for _, c := range []struct {
		args    []string
		cluster server.ClusterConfig
		stream  transport.StreamOptions
	}{
		{nil, server.ClusterConfig{}, transport.StreamOptions{}},
		{[]string{"--nats-cluster", "fl", "--nats-cluster-listen", "10.0.0.1:6222", "--nats-routes", "nats://10.0.0.1:6222, nats://10.0.0.2:6222,",
			"--partitions", "24", "--stream-replicas", "3", "--member", "a1", "--advertise", "https://10.0.0.1:8080"},
			server.ClusterConfig{Name: "fl", Listen: "10.0.0.1:6222", Routes: []string{"nats://10.0.0.1:6222", "nats://10.0.0.2:6222"},
				Partitions: 24, Replicas: 3, Member: "a1", Advertise: "https://10.0.0.1:8080"}, transport.StreamOptions{}},
		{[]string{"--nats", "nats://n1:4222", "--partitions", "1"}, server.ClusterConfig{Partitions: 1}, transport.StreamOptions{}},
		{[]string{"--retention-age", "72h", "--retention-bytes", "10GiB"}, server.ClusterConfig{},
			transport.StreamOptions{MaxAge: 72 * time.Hour, MaxBytes: 10 << 30}},
	} {
		cfg, err := parseClusterFlags(t, c.args...)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(cfg.Cluster, c.cluster) || cfg.Stream != c.stream {
			t.Errorf("%q:\ncluster %+v\nstream  %+v\nwant    %+v\n        %+v", c.args, cfg.Cluster, cfg.Stream, c.cluster, c.stream)
		}
	}
}

// TestServeClusterFlagErrors: flags that cannot go together, or out of
// range, stop serve with exit status 1 and say why, before anything starts.
func TestServeClusterFlagErrors(t *testing.T) {
	routes := []string{"--nats-routes", "nats://h:6222"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats-cluster-listen", "127.0.0.1:6222"}, "--nats-cluster-listen needs --nats-cluster"},
		{routes, "--nats-routes needs --nats-cluster"},
		{append([]string{"--nats-cluster", "fl", "--nats", "nats://n1:4222"}, routes...), "not both"},
		{[]string{"--nats-cluster", "fl"}, "--nats-cluster needs --nats-routes"},
		{append([]string{"--nats-cluster", "fl", "--partitions", "0"}, routes...), "--partitions 0: want 1 to 1024"},
		{append([]string{"--nats-cluster", "fl", "--partitions", "1025"}, routes...), "--partitions 1025: want 1 to 1024"},
		{append([]string{"--nats-cluster", "fl", "--stream-replicas", "7"}, routes...), "--stream-replicas 7"},
		{[]string{"--member", "a"}, "--member is for analyzers that share the stream"},
		{[]string{"--stream-replicas", "3"}, "--stream-replicas is for analyzers that share the stream"},
		{append([]string{"--nats-cluster", "fl", "--advertise", "10.0.0.1:8080"}, routes...), "--advertise"},
		{[]string{"--lease-ttl", "3s"}, "--lease-ttl is for analyzers that share the stream"},
		{append([]string{"--nats-cluster", "fl", "--lease-ttl", "100ms"}, routes...), "--lease-ttl 100ms: want 1s to 1m"},
		{[]string{"--retention-age", "-1h"}, "--retention-age"},
		{[]string{"--retention-bytes", "lots"}, "want a size"},
	} {
		_, errs, code := runCmd(t, append([]string{"serve", "--data-dir", t.TempDir()}, c.args...)...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("serve %q: exit %d, %q; want exit 1 and %q", c.args, code, errs, c.want)
		}
	}
}
