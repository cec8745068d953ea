package shipper

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Open files. The shipper may follow far more files than it may hold open
// (10,000 container and Ray session logs under a limit of 256 descriptors):
// a file is opened when it is found, read to its end, and, once nothing of
// it is held (no batch, no record being joined, no batch awaiting its ack),
// closed when others wait for a descriptor or when it has been idle for
// Config.IdleClose. A closed ("parked") file keeps its place (offset,
// checkpoints, the last bytes read) and its inotify watch, and is opened
// again as soon as it is written (or, where inotify says nothing, at the
// next look at it, every parkPoll). Only so many files are open at once
// (Config.MaxOpenFiles, below the descriptor limit less descReserve for the
// rest), so that neither descriptors nor memory grow with the number of
// files.

// descReserve descriptors are left to everything else: the NATS
// connection, the metrics listener and its clients, inotify, the state
// files, directory reads of discovery.
const descReserve = 64

// parkPoll is how often a parked file is looked at without inotify.
const parkPoll = time.Second

// parkKeep bytes before a parked file's offset are kept: they tell a file
// truncated or rewritten meanwhile (checkFile) from one that only grew.
const parkKeep = 256

// fdSlots bounds the files open at once.
type fdSlots struct {
	ch      chan struct{}
	waiting atomic.Int32
}

func newFDSlots(n int) *fdSlots { return &fdSlots{ch: make(chan struct{}, n)} }

// openBudget is how many files may be open at once: max, or less when the
// descriptor limit is lower.
func openBudget(limit int) int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < uint64(limit+descReserve) {
		return int(max(8, int64(rl.Cur)-descReserve))
	}
	return limit
}

// acquire waits for a slot; false if ctx ended first.
func (s *fdSlots) acquire(ctx context.Context) bool {
	select {
	case s.ch <- struct{}{}:
		return true
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case s.ch <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *fdSlots) release() { <-s.ch }

// contended: a file waits for a slot.
func (s *fdSlots) contended() bool { return s.waiting.Load() > 0 }

// descriptorLimit tells an open that failed for want of descriptors (the
// process's or the system's): not a reason to give the file up.
func descriptorLimit(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// openFile opens path holding a slot, waiting for one, and for descriptors
// while the process has none left; the error is the open's otherwise.
func (sh *Shipper) openFile(ctx context.Context, path string) (*os.File, error) {
	for {
		if !sh.fds.acquire(ctx) {
			return nil, ctx.Err()
		}
		f, err := os.Open(path)
		if err == nil {
			return f, nil
		}
		sh.fds.release()
		if !descriptorLimit(err) {
			return nil, err
		}
		if sh.firstTime("emfile") {
			sh.log.Warn("out of file descriptors: files wait for one (raise the limit, or lower --max-open-files)", "err", err, "max_open_files", cap(sh.fds.ch))
		}
		sh.metrics.fdWaits.Inc()
		sleepCtx(ctx, sh.cfg.PollInterval)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// closeFile closes the cursor's file and gives its slot back.
func (c *cursor) closeFile() {
	if !c.open {
		return
	}
	c.open = false
	c.fd.Close()
	c.sh.fds.release()
	c.sh.metrics.files.Dec()
}

// parkable tells whether the file can be closed now: at its end, nothing of
// it held in memory or awaiting an ack, and idle long enough (or others
// wait for a descriptor).
func (c *cursor) parkable(idle time.Duration) bool {
	if !c.open || c.count > 0 || c.replay != nil || c.long || c.r != c.w {
		return false
	}
	if idle < c.sh.cfg.IdleClose && (!c.sh.fds.contended() || idle < 2*c.sh.cfg.PollInterval) {
		return false
	}
	if _, held := c.join.PendingOffset(); held {
		return false
	}
	if _, held := c.dec.PendingOffset(); held {
		return false
	}
	return c.tracker.inFlight() == 0
}

// park closes the file and drops what is only needed while reading it;
// the parker looks after it until it is written.
func (c *cursor) park() {
	keep := min(c.r, parkKeep)
	c.tail = append(c.tail[:0], c.buf[c.r-keep:c.r]...)
	c.buf, c.r, c.w = nil, 0, 0
	c.fifo, c.sentRecs = nil, nil
	if fi, err := c.fd.Stat(); err == nil {
		c.parkSize, c.parkMod = fi.Size(), fi.ModTime()
	}
	c.closeFile()
	c.sh.metrics.lag.DeleteLabelValues(c.src.path)
}

// parker watches the parked files, without a goroutine (and its stack)
// each: it wakes a file when inotify says it was written, or when a look at
// it (every parkPoll) finds it changed, and hands it to a new follower.
type parker struct {
	mu    sync.Mutex
	files map[*cursor]struct{}
}

func (p *parker) add(c *cursor) {
	c.parkLook = time.Now().Add(parkPoll)
	p.mu.Lock()
	if p.files == nil {
		p.files = map[*cursor]struct{}{}
	}
	p.files[c] = struct{}{}
	c.sh.metrics.parked.Set(float64(len(p.files)))
	p.mu.Unlock()
}

// run wakes parked files until ctx ends.
func (p *parker) run(ctx context.Context, sh *Shipper) {
	t := time.NewTicker(sh.cfg.PollInterval)
	defer t.Stop()
	var woken []*cursor
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		woken = woken[:0]
		p.mu.Lock()
		for c := range p.files {
			select {
			case <-c.wake: // written (inotify)
			default:
				if now.Before(c.parkLook) {
					continue
				}
				c.parkLook = now.Add(parkPoll)
				if !c.changed() {
					continue
				}
			}
			delete(p.files, c)
			woken = append(woken, c)
		}
		sh.metrics.parked.Set(float64(len(p.files)))
		p.mu.Unlock()
		for _, c := range woken {
			sh.wg.Add(1)
			go func() {
				defer sh.wg.Done()
				sh.unpark(ctx, c)
			}()
		}
	}
}

// changed tells whether the parked file's path names another file, none,
// or the file with other contents than when it was parked.
func (c *cursor) changed() bool {
	fi, err := os.Stat(c.src.path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return statDevIno(fi) != c.di || fi.Size() != c.parkSize || !fi.ModTime().Equal(c.parkMod)
}

// unpark opens the parked file again at its offset and follows it; when the
// path names another file or none now, everything of this one was read
// and acknowledged: the path is looked at again.
func (sh *Shipper) unpark(ctx context.Context, c *cursor) {
	src := c.src
	reopen := func() {
		sh.markRead(c.key, c.base)
		c.unwatch()
		sh.release(c.di)
		sh.scanRotated(ctx, src, time.Now())
		sh.follow(ctx, src, nil)
	}
	if pfi, err := os.Stat(src.path); err != nil || statDevIno(pfi) != c.di {
		reopen()
		return
	}
	f, err := sh.openFile(ctx, src.path)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		reopen()
		return
	}
	if ofi, err := f.Stat(); err != nil || statDevIno(ofi) != c.di {
		f.Close()
		sh.fds.release()
		reopen()
		return
	}
	if _, err := f.Seek(c.base, io.SeekStart); err != nil {
		f.Close()
		sh.fds.release()
		reopen()
		return
	}
	c.fd, c.f, c.open, c.recheck = f, f, true, true
	sh.metrics.files.Inc()
	c.buf = make([]byte, readBufStart)
	c.r = copy(c.buf, c.tail)
	c.w = c.r
	sh.follow(ctx, src, c)
}
