package shipper

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// notifier wakes a file's follower as soon as the file is written (inotify),
// instead of at its next poll: the poll interval was most of the time from
// a line appended to its record read. Polling stays, as the fallback where
// inotify says nothing (overlay and fuse mounts written from another mount
// namespace, NFS) and for rotations.
type notifier struct {
	f   *os.File
	fd  int // f's descriptor (f.Fd() would make it blocking, and Close could not end a read)
	log *slog.Logger

	mu      sync.Mutex
	watches map[int32]*watch // by watch descriptor
}

type watch struct {
	wake chan struct{}
	refs int
}

func newNotifier(log *slog.Logger) *notifier {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		log.Info("inotify unavailable, polling only", "err", err)
		return nil
	}
	// Non-blocking, so reads go through the runtime poller and Close
	// ends them.
	n := &notifier{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, log: log, watches: map[int32]*watch{}}
	go n.run()
	return n
}

// watchFile wakes the returned channel when f is modified; stop ends it.
// It watches the open file itself (its /proc/self/fd link), not its path,
// which may name another file after a rotation. A nil channel (never
// ready) means polling only.
func (n *notifier) watchFile(f *os.File) (<-chan struct{}, func()) {
	if n == nil || f == nil {
		return nil, func() {}
	}
	wd, err := syscall.InotifyAddWatch(n.fd, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), syscall.IN_MODIFY)
	if err != nil {
		return nil, func() {}
	}
	n.mu.Lock()
	w := n.watches[int32(wd)]
	if w == nil { // the same inode watched twice shares its descriptor
		w = &watch{wake: make(chan struct{}, 1)}
		n.watches[int32(wd)] = w
	}
	w.refs++
	n.mu.Unlock()
	var once sync.Once
	return w.wake, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if w.refs--; w.refs == 0 && n.watches[int32(wd)] == w {
				delete(n.watches, int32(wd))
				syscall.InotifyRmWatch(n.fd, uint32(wd)) // fails once the file is gone: nothing to undo
			}
		})
	}
}

// run reads events until Close and wakes their watchers (a wake already
// pending is enough: the follower reads everything there is).
func (n *notifier) run() {
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		k, err := n.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				n.log.Warn("inotify stopped, polling only", "err", fmt.Errorf("inotify read: %w", err))
			}
			return
		}
		n.mu.Lock()
		for off := 0; off+syscall.SizeofInotifyEvent <= k; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			w := n.watches[ev.Wd]
			if w == nil {
				continue
			}
			if ev.Mask&syscall.IN_IGNORED != 0 { // the file is gone: the kernel dropped the watch
				delete(n.watches, ev.Wd)
			}
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		n.mu.Unlock()
	}
}

// Close stops the notifier.
func (n *notifier) Close() {
	if n != nil {
		n.f.Close()
	}
}
