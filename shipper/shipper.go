// Package shipper tails Ray, vLLM and NCCL logs on one node (files, Docker
// containers found from Docker's data root, stdin), frames and joins them
// into records with package parsers, and publishes them to NATS JetStream in
// the wire format, persisting each file's offset only once the server has
// acknowledged the records below it.
//
// Data flow per file: cursor (read, frame lines) → parsers.Decoder →
// parsers.Joiner → batch (transport.Encoder) → Publisher (async, bounded window) →
// PubAck → tracker (contiguous acknowledged prefix) → Store (atomic file).
package shipper

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// Config is everything a shipper needs. Zero durations and sizes take the
// defaults of Defaults.
type Config struct {
	Paths      []string // globs of plain, json-file or CRI files
	Containers []string // path.Match patterns of Docker container names
	// ExcludeContainers are never tailed, even when Containers match them:
	// the Faultline stack's own containers (the analyzer prints findings that
	// quote log lines; shipping them back would feed it its own evidence).
	ExcludeContainers []string
	// ContainerLabels a matched container must carry, each KEY (any
	// value) or KEY=VALUE: the compose stack ships only containers
	// labelled faultline.ship, not every container of the host.
	ContainerLabels []string
	ContainerPaths  []string // globs inside matched containers (Ray session logs are added)
	DockerRoot      string
	Stdin           io.Reader // non-nil: read it as one more file ("-")

	Cluster string
	Node    string
	// Identity names this shipper process on every batch it publishes
	// (transport.HeaderShipper), so that serve can say when two processes
	// publish under one node name. Default: NewIdentity, new at every Run.
	Identity string
	// PodAsNode names records of kubelet pod logs (/var/log/pods) by their
	// pod instead of Node (kubelet.go).
	PodAsNode bool

	NATS        NATSOptions
	Stream      StreamOptions
	MaxInFlight int
	AckTimeout  time.Duration
	// Compression of the batches: "s2" (default), "zstd" or "none".
	Compression string

	StateDir string
	// SaveInterval is the most often acknowledged offsets are written to
	// StateDir (each write is an fsync): after a crash, what was
	// acknowledged since the last write is sent again (and dropped by the
	// server as duplicates, see sentLogFile). Default 50ms.
	SaveInterval time.Duration
	FlushTimeout time.Duration // joiner idle flush
	BatchBytes   int
	BatchWait    time.Duration
	PollInterval time.Duration // how often globs, rotations and files at EOF are checked (inotify wakes a follower at once where it can)
	RotateWait   time.Duration // keep reading a renamed file until it was quiet this long
	// MaxOpenFiles is the most files held open at once (default 1024, and
	// never more than the descriptor limit less descReserve); the others
	// wait, closed, until they are written (files.go).
	MaxOpenFiles int
	IdleClose    time.Duration // close a file idle this long (default 1m; at once when others wait)

	Log     *slog.Logger
	Metrics *Metrics
	Health  *Health // what /healthz says (NewHealth(Metrics) by default)
}

// NewIdentity names one shipper process: host name, process id and a
// random part, "vm:4711:3f9a2c" (two shippers in one process, as serve
// --demo runs them, and two hosts cloned with one name still differ).
func NewIdentity() string {
	host, _ := os.Hostname()
	var r [3]byte
	rand.Read(r[:])
	return fmt.Sprintf("%s:%d:%x", host, os.Getpid(), r)
}

// RaySessionLogs is tailed inside every matched container.
const RaySessionLogs = "/tmp/ray/session_latest/logs/*"

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Cluster == "" {
		c.Cluster = "default"
	}
	if c.Node == "" {
		c.Node, _ = os.Hostname()
	}
	if c.Identity == "" {
		c.Identity = NewIdentity()
	}
	if c.NATS.URL == "" {
		c.NATS.URL = "nats://127.0.0.1:4222"
	}
	if c.DockerRoot == "" {
		c.DockerRoot = "/var/lib/docker"
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 16
	}
	if c.StateDir == "" {
		c.StateDir = "./shipper-state"
	}
	if c.SaveInterval == 0 {
		c.SaveInterval = storeFlushEvery
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = 50 * time.Millisecond
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = 768 << 10
	}
	if c.BatchWait == 0 {
		c.BatchWait = 25 * time.Millisecond
	}
	if c.PollInterval == 0 {
		c.PollInterval = 50 * time.Millisecond
	}
	if c.RotateWait == 0 {
		c.RotateWait = 500 * time.Millisecond
	}
	if c.MaxOpenFiles <= 0 {
		c.MaxOpenFiles = 1024
	}
	if c.IdleClose == 0 {
		c.IdleClose = time.Minute
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	if c.Health == nil {
		c.Health = NewHealth(c.Metrics)
	}
}

// Shipper runs the inputs of one node.
type Shipper struct {
	cfg       Config
	log       *slog.Logger
	metrics   *Metrics
	store     *Store
	sent      *sentLog
	fds       *fdSlots // files open at once
	parker    parker   // the files parked (closed until written)
	dirs      dirListings
	pub       *Publisher
	subject   string
	softLimit int // close a batch once its body reaches this
	hardLimit int // a body never exceeds this (server max payload less headers)

	mu     sync.Mutex
	notify *notifier // wakes followers when their file is written (nil: poll only)

	paths  map[string]bool   // host paths being followed
	inodes map[devIno]string // open files, so one file is never read twice
	wg     sync.WaitGroup
	once   map[string]bool  // messages said once (unreachable container roots)
	readTo map[string]int64 // key → offset read to, of files finished in this run
}

// Run ships until ctx is done (then it waits up to 5 s for in-flight acks and
// saves the offsets) or until stdin ends when stdin is the only input.
func Run(ctx context.Context, cfg Config) error {
	cfg.Defaults()
	if len(cfg.Paths) == 0 && len(cfg.Containers) == 0 && cfg.Stdin == nil {
		return errors.New("nothing to ship: give --path, --container or -")
	}
	for _, p := range cfg.Paths {
		if _, err := filepath.Match(p, ""); err != nil {
			return fmt.Errorf("--path %q: %w", p, err)
		}
	}
	store, err := OpenStore(cfg.StateDir, cfg.Log)
	if err != nil {
		return err
	}
	store.every, store.metrics, store.health = cfg.SaveInterval, cfg.Metrics, cfg.Health
	sent, err := openSentLog(cfg.StateDir, cfg.Log, cfg.Metrics, store.savedOnDisk)
	if err != nil {
		return err
	}
	defer sent.Close()
	sent.health = cfg.Health
	sh := &Shipper{cfg: cfg, log: cfg.Log, metrics: cfg.Metrics, store: store, sent: sent,
		subject: transport.LogsSubject(cfg.Cluster, cfg.Node), fds: newFDSlots(openBudget(cfg.MaxOpenFiles)),
		paths: map[string]bool{}, inodes: map[devIno]string{}, once: map[string]bool{}}

	storeCtx, stopStore := context.WithCancel(context.Background())
	storeDone := make(chan struct{})
	go func() { store.Run(storeCtx); close(storeDone) }()
	defer func() { stopStore(); <-storeDone }()

	sh.pub, err = Connect(ctx, cfg.NATS, cfg.Stream, PublisherOptions{MaxInFlight: cfg.MaxInFlight, AckTimeout: cfg.AckTimeout, Compression: cfg.Compression,
		Name: "faultline-shipper " + cfg.Node, Shipper: cfg.Identity}, cfg.Log, cfg.Metrics, cfg.Health)
	if err != nil {
		return err
	}
	defer sh.pub.Close()
	sh.hardLimit = sh.pub.MaxPayload() - 1024 // headers and slack
	sh.softLimit = min(cfg.BatchBytes, sh.hardLimit)
	sh.pub.bodyCap = min(sh.softLimit+sh.softLimit/4, sh.hardLimit)
	sent.setWindow(sh.pub.DuplicateWindow())
	sh.log.Info("shipping", "subject", sh.subject, "identity", cfg.Identity, "max_payload", sh.pub.MaxPayload(), "batch_bytes", sh.softLimit,
		"max_in_flight", cfg.MaxInFlight, "save_interval", cfg.SaveInterval, "duplicate_window", sh.pub.DuplicateWindow(), "max_open_files", cap(sh.fds.ch),
		"paths", cfg.Paths, "containers", cfg.Containers, "container_labels", cfg.ContainerLabels)

	sh.notify = newNotifier(cfg.Log)
	defer sh.notify.Close()
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	if cfg.Stdin != nil {
		sh.wg.Add(1)
		go func() {
			defer sh.wg.Done()
			c := sh.newStdinCursor(cfg.Stdin)
			c.follow(readCtx)
			if len(cfg.Paths) == 0 && len(cfg.Containers) == 0 {
				stopReading() // stdin was the only input: done
			}
		}()
	}
	if len(cfg.Paths) > 0 || len(cfg.Containers) > 0 {
		sh.wg.Add(2)
		go func() { defer sh.wg.Done(); sh.discover(readCtx) }()
		go func() { defer sh.wg.Done(); sh.parker.run(readCtx, sh) }()
	}
	<-readCtx.Done()
	sh.wg.Wait()

	// Let in-flight batches be acknowledged so their offsets are saved.
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sh.pub.Wait(wctx); err != nil {
		sh.log.Warn("stopping with batches not acknowledged; they will be sent again", "err", err)
	}
	stopStore()
	<-storeDone
	return store.Flush()
}

// discover polls the globs and the Docker data root and starts a follower for
// every new file. Polling (not inotify) is what works the same on overlay and
// fuse mounts of container file systems and on host paths.
func (sh *Shipper) discover(ctx context.Context) {
	for {
		pass := time.Now()
		for _, g := range sh.cfg.Paths {
			matches, _ := filepath.Glob(g)
			if len(matches) == 0 {
				sh.checkGlobDir(g)
			}
			for _, m := range matches {
				sh.start(ctx, source{path: m, display: m, found: pass})
			}
		}
		if len(sh.cfg.Containers) > 0 {
			for _, src := range sh.dockerSources() {
				src.found = pass
				sh.start(ctx, src)
			}
		}
		// A pass takes at most a tenth of the time: globs over folders
		// of thousands of files are milliseconds each.
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(sh.cfg.PollInterval, 9*time.Since(pass))):
		}
	}
}

// start follows src.path unless it is followed already.
func (sh *Shipper) start(ctx context.Context, src source) {
	sh.mu.Lock()
	if sh.paths[src.path] {
		sh.mu.Unlock()
		return
	}
	// What a path found as input is, and why one is not read: the rule
	// diagnose's folder walk follows too (parsers.StatInput).
	if fi, err := parsers.StatInput(src.path); err != nil || fi.IsDir() {
		sh.mu.Unlock()
		var skipped *parsers.SkippedInput
		if errors.As(err, &skipped) {
			sh.skip(src.path, skipped.Reason, skipped.Err)
		}
		return
	} else if base, ok := rotatedBase(src.path); ok {
		// A glob matching name and name.1: name.1 is read as name's
		// rotation, from the offset that file had reached.
		sh.mu.Unlock()
		if sh.firstTime("rotated:" + src.path) {
			sh.log.Debug("read as a rotation of its live file", "file", src.path, "live", base)
		}
		return
	} else if isGzipFile(src.path) {
		sh.mu.Unlock()
		sh.skip(src.path, "compressed", errors.New("a gzip file is read only as a rotation of the live file beside it"))
		return
	} else if other, ok := sh.inodes[statDevIno(fi)]; ok && other != src.path {
		sh.mu.Unlock()
		return // the same file under another name (a rotated copy being drained)
	}
	sh.paths[src.path] = true
	sh.mu.Unlock()
	sh.wg.Add(1)
	go func() {
		defer sh.wg.Done()
		// (a listing of the folder read since the file was found will
		// do: thousands found at once share one)
		sh.scanRotated(ctx, src, src.found)
		sh.follow(ctx, src, nil)
	}()
}

// follow reads the file at src.path, then the file that replaces it after a
// rename rotation, until the path is gone or ctx ends; c, when not nil, is
// the cursor of that file, parked and opened again (files.go). A file
// parked again is handed to the parker, and its path stays followed.
func (sh *Shipper) follow(ctx context.Context, src source, c *cursor) {
	parked := false
	defer func() {
		if !parked {
			sh.mu.Lock()
			delete(sh.paths, src.path)
			sh.mu.Unlock()
		}
	}()
	for ctx.Err() == nil {
		if c != nil {
			res := sh.followCursor(ctx, src, c)
			c = nil
			if res == followParked {
				parked = true
				return
			}
			if res != followRotated && res != followReopen {
				return
			}
			continue
		}
		f, err := sh.openFile(ctx, src.path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
				sh.skip(src.path, parsers.SkipReason(err), err)
			}
			return // gone; discovery starts over if it comes back
		}
		closeF := func() { f.Close(); sh.fds.release() }
		nc, err := sh.newCursor(src, f)
		if errors.Is(err, errNotReady) {
			if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
				sh.heldBack(src.path, fi.Size())
			}
			closeF()
			select { // empty or first line incomplete: wait for it
			case <-ctx.Done():
			case <-time.After(sh.cfg.PollInterval):
			}
			continue
		}
		if err != nil {
			closeF()
			sh.log.Error("cannot follow", "file", src.path, "err", err)
			return
		}
		if !sh.hold(nc.di, src.path) {
			closeF()
			return
		}
		nc.open = true
		sh.metrics.files.Inc()
		nc.wake, nc.unwatch = sh.notify.watchFile(nc.fd)
		c = nc
		c.log.Debug("following", "offset", c.base, "key", c.key)
	}
}

// followCursor follows the open file of c until it is parked, rotated away,
// removed or ctx ends, and does what comes after; the caller looks at the
// path again after followRotated and followReopen.
func (sh *Shipper) followCursor(ctx context.Context, src source, c *cursor) followResult {
	res := c.follow(ctx)
	done := func() {
		c.closeFile()
		c.unwatch()
		sh.release(c.di)
	}
	switch res {
	case followParked:
		sh.parker.add(c)
	case followReopen:
		// Parked, and the path names another file or none now: this
		// one was read and acknowledged to its end.
		done()
		sh.scanRotated(ctx, src, time.Now())
	case followRotated:
		c.log.Info("rotated, following the new file and finishing the old one")
		sh.wg.Add(1)
		go func() {
			defer sh.wg.Done()
			defer done()
			c.drainRenamed(ctx)
			sh.markRead(c.key, c.base)
		}()
		// Docker may have rotated twice before we looked (path → .1 →
		// .2): the file in between is at .1 now, complete, and never seen.
		sh.scanRotated(ctx, src, time.Now())
	default:
		done()
		sh.metrics.lag.DeleteLabelValues(src.path)
	}
	return res
}

// checkGlobDir reports a glob that matches nothing because its folder
// cannot be read (a Glob says nothing about it).
func (sh *Shipper) checkGlobDir(g string) {
	dir := filepath.Dir(g)
	if strings.ContainsAny(dir, `*?[\`) {
		return
	}
	d, err := os.Open(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sh.skip(dir, parsers.SkipReason(err), err)
		}
		return
	}
	d.Close()
}

func (sh *Shipper) hold(di devIno, path string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if other, ok := sh.inodes[di]; ok && other != path {
		return false
	}
	sh.inodes[di] = path
	return true
}

func (sh *Shipper) release(di devIno) {
	sh.mu.Lock()
	delete(sh.inodes, di)
	sh.mu.Unlock()
}
