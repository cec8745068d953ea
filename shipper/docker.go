package shipper

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// containerConfig is the part of Docker's <root>/containers/<id>/config.v2.json
// that the shipper reads. Reading the data root needs no Docker API socket.
type containerConfig struct {
	ID      string `json:"ID"`
	Name    string `json:"Name"` // with a leading slash
	LogPath string `json:"LogPath"`
	Driver  string `json:"Driver"` // storage driver: overlay2, fuse-overlayfs, ...
	State   struct {
		Running bool `json:"Running"`
	} `json:"State"`
	MountPoints map[string]struct {
		Source      string `json:"Source"`
		Destination string `json:"Destination"`
	} `json:"MountPoints"`
	Config struct {
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
}

// container is a discovered container with what is needed to reach its files.
type container struct {
	containerConfig
	name   string // without the slash
	rootfs string // host path of the container's root file system, "" if not reachable
}

// containers lists the containers under root whose names match one of
// patterns and none of excludes (path.Match) and that carry every label of
// labels (KEY, any value, or KEY=VALUE; an empty one asks nothing).
func containers(root string, patterns, excludes, labels []string) ([]container, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "containers", "*", "config.v2.json"))
	if err != nil {
		return nil, err
	}
	var out []container
	for _, cfgPath := range dirs {
		b, err := os.ReadFile(cfgPath)
		if err != nil {
			continue // removed between Glob and ReadFile
		}
		var c container
		if err := json.Unmarshal(b, &c.containerConfig); err != nil {
			continue // being rewritten by dockerd; next poll
		}
		c.name = strings.TrimPrefix(c.Name, "/")
		if !matchAny(patterns, c.name) || matchAny(excludes, c.name) || !hasLabels(c.Config.Labels, labels) {
			continue
		}
		if c.ID == "" {
			c.ID = filepath.Base(filepath.Dir(cfgPath))
		}
		if c.State.Running {
			c.rootfs = containerRootFS(root, c.Driver, c.ID)
		}
		out = append(out, c)
	}
	return out, nil
}

// hasLabels reports whether have holds every label of want (KEY: with any
// value; KEY=VALUE: with that value).
func hasLabels(have map[string]string, want []string) bool {
	for _, w := range want {
		if w == "" {
			continue
		}
		k, v, withValue := strings.Cut(w, "=")
		got, ok := have[k]
		if !ok || withValue && got != v {
			return false
		}
	}
	return true
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// containerRootFS finds the merged root file system of a running container
// from the layer store: <root>/image/<driver>/layerdb/mounts/<id>/mount-id
// names <root>/<driver>/<mount-id>/merged (overlay2, fuse-overlayfs).
func containerRootFS(root, driver, id string) string {
	if driver == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(root, "image", driver, "layerdb", "mounts", id, "mount-id"))
	if err != nil {
		return ""
	}
	merged := filepath.Join(root, driver, strings.TrimSpace(string(b)), "merged")
	if fi, err := os.Stat(merged); err != nil || !fi.IsDir() {
		return ""
	}
	return merged
}

// hostPath maps a path inside the container to the host: through a bind
// mount or volume when one covers it, else through the root file system.
// Symbolic links are resolved inside the container (Ray's session_latest is
// an absolute link that must not be followed on the host).
func (c *container) hostPath(ctrPath string) (string, bool) {
	for i := 0; i < 40; i++ {
		hp, ok := c.mapPath(ctrPath)
		if !ok {
			return "", false
		}
		// Resolve the first symlink component, if any, in container terms.
		parts := strings.Split(strings.Trim(ctrPath, "/"), "/")
		resolved := false
		for j := range parts {
			prefix := "/" + strings.Join(parts[:j+1], "/")
			hpp, ok := c.mapPath(prefix)
			if !ok {
				return "", false
			}
			if strings.ContainsAny(parts[j], "*?[") {
				break // glob meta: resolve no further
			}
			target, err := os.Readlink(hpp)
			if err != nil {
				continue
			}
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(prefix), target)
			}
			ctrPath = path.Join(target, strings.Join(parts[j+1:], "/"))
			resolved = true
			break
		}
		if !resolved {
			return hp, true
		}
	}
	return "", false
}

func (c *container) mapPath(ctrPath string) (string, bool) {
	best := ""
	for dst := range c.MountPoints {
		if (ctrPath == dst || strings.HasPrefix(ctrPath, strings.TrimSuffix(dst, "/")+"/")) && len(dst) > len(best) {
			best = dst
		}
	}
	if best != "" && c.MountPoints[best].Source != "" {
		return filepath.Join(c.MountPoints[best].Source, strings.TrimPrefix(ctrPath, best)), true
	}
	if c.rootfs == "" {
		return "", false
	}
	return filepath.Join(c.rootfs, ctrPath), true
}

// dockerSources lists the files of matched containers: the json-file log
// (and, through the root file system or a mount, the container paths).
func (sh *Shipper) dockerSources() []source {
	cs, err := containers(sh.cfg.DockerRoot, sh.cfg.Containers, sh.cfg.ExcludeContainers, sh.cfg.ContainerLabels)
	if err != nil {
		sh.sayOnce("docker-root", "cannot read Docker data root", "root", sh.cfg.DockerRoot, "err", err)
		return nil
	}
	globs := append([]string{RaySessionLogs}, sh.cfg.ContainerPaths...)
	var out []source
	for _, c := range cs {
		if c.LogPath != "" {
			out = append(out, source{path: c.LogPath, display: c.LogPath, container: c.name})
		}
		if !c.State.Running {
			continue
		}
		for _, g := range globs {
			dir, pattern := path.Split(g)
			hostDir, ok := c.hostPath(path.Clean(dir))
			if !ok {
				sh.sayOnce("rootfs:"+c.ID, "container root file system not reachable; only its json-file log is shipped",
					"container", c.name, "driver", c.Driver, "path", g)
				continue
			}
			matches, _ := filepath.Glob(filepath.Join(hostDir, pattern))
			for _, m := range matches {
				out = append(out, source{path: m, display: path.Join(path.Clean(dir), filepath.Base(m)), container: c.name})
			}
		}
	}
	return out
}

// sayOnce logs a message the first time its key is seen.
func (sh *Shipper) sayOnce(key, msg string, args ...any) {
	sh.mu.Lock()
	seen := sh.once[key]
	sh.once[key] = true
	sh.mu.Unlock()
	if !seen {
		sh.log.Warn(msg, args...)
	}
}
