package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/faultline/faultline/parsers"
)

// skipExt are files found in collected-log folders that are not logs.
var skipExt = map[string]bool{".md": true, ".json": true, ".yaml": true, ".yml": true, ".png": true, ".jpg": true, ".tar": true, ".zip": true}

// Expand lists the files of the inputs. A folder given without NODE= is a
// bundle: each subfolder is a node (spark-1/, spark-2/), and files directly
// inside it belong to a node named after the folder. A file given without
// NODE= is a node named after the file. Symlinks are followed.
//
// A path that cannot be read as a log (a symlink loop, a folder that cannot
// be listed, a FIFO: parsers.StatInput decides, as it does for the shipper)
// is skipped, whether it was given or found in a folder: warn gets a
// *parsers.SkippedInput naming it and why (nil drops it), and the other
// inputs are read. An input that does not exist is an error, and so is a
// folder in which nothing can be read.
func Expand(inputs []Input, warn func(error)) ([]File, error) {
	if warn == nil {
		warn = func(error) {}
	}
	var out []File
	for _, in := range inputs {
		fi, err := parsers.StatInput(in.Path)
		var skipped *parsers.SkippedInput
		switch {
		case errors.As(err, &skipped):
			warn(skipped)
			continue
		case err != nil:
			return nil, fmt.Errorf("input %s: %w", in.Path, err)
		}
		if !fi.IsDir() {
			node := in.Node
			if node == "" {
				node = nodeFromFile(in.Path)
			}
			out = append(out, File{Path: in.Path, Node: node, Container: parsers.ContainerOf(in.Path)})
			continue
		}
		root := filepath.Clean(in.Path)
		var files []File
		skips := 0
		err = parsers.WalkInputs(root, func(p string) error {
			if skipExt[strings.ToLower(filepath.Ext(p))] {
				return nil
			}
			node := in.Node
			if node == "" {
				rel, _ := filepath.Rel(root, p)
				if i := strings.IndexByte(rel, filepath.Separator); i > 0 {
					node = rel[:i]
				} else {
					node = filepath.Base(root)
				}
			}
			files = append(files, File{Path: p, Node: node, Container: parsers.ContainerOf(p)})
			return nil
		}, func(s *parsers.SkippedInput) {
			skips++
			warn(s)
		})
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			if skips > 0 {
				return nil, fmt.Errorf("input %s: no readable log files in this folder (%d skipped)", in.Path, skips)
			}
			return nil, fmt.Errorf("input %s: no log files in this folder", in.Path)
		}
		out = append(out, files...)
	}
	if len(out) == 0 {
		return nil, errors.New("no readable input: every path given was skipped")
	}
	return out, nil
}

// nodeFromFile names the node of a file given alone: its name without the
// log extension, a rotation's number and compression (vllm.log.1.gz,
// Docker's c-json.log.3 and Ray's monitor.log.1 are vllm, c and monitor,
// as the live file would be). A number is a rotation's only after a log
// extension, so 10.1.230.180.log stays 10.1.230.180.
func nodeFromFile(p string) string {
	if m := rotatedName.FindStringSubmatch(filepath.Base(p)); m != nil && m[1] != "" {
		return m[1]
	}
	return "node"
}

var rotatedName = regexp.MustCompile(`^(.*?)(?:-json)?(?:\.(?:log|out|err|txt)(?:\.\d+)?)?(?:\.gz)?$`)

// filePool bounds the files a replay holds open: a replay of 10,000 files
// under a 1,024 open-files limit must read them all, not skip those it
// could not open. A file is opened when it is read, closed at its end, and,
// when the pool is full, the least recently read file is closed and later
// reopened at its position.
type filePool struct {
	max   int
	open  []*lazyFile
	clock uint64
}

func newFilePool() *filePool {
	n := 256
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 1<<20 {
		// Leave room for the rules, the index and the process's own files.
		n = min(n, max(4, int(rl.Cur)/4))
	}
	return &filePool{max: n}
}

// lazyFile reads a file through the pool. It notices a file truncated or
// replaced while it was being read instead of ending quietly at its new end.
type lazyFile struct {
	pool   *filePool
	path   string
	f      *os.File
	pos    int64
	size   int64 // at the first open
	dev    uint64
	ino    uint64
	opened bool
	used   uint64
	eof    bool
}

func (p *filePool) file(path string) *lazyFile { return &lazyFile{pool: p, path: path} }

func (l *lazyFile) Read(b []byte) (int, error) {
	if l.eof {
		return 0, io.EOF
	}
	if l.f == nil {
		if err := l.pool.reopen(l); err != nil {
			return 0, err
		}
	}
	l.pool.clock++
	l.used = l.pool.clock
	n, err := l.f.Read(b)
	l.pos += int64(n)
	if errors.Is(err, io.EOF) {
		l.pool.close(l)
		if l.pos < l.size {
			return n, fmt.Errorf("truncated while being read: it ended at byte %d of %d", l.pos, l.size)
		}
		l.eof = true
	} else if err != nil {
		err = fmt.Errorf("read at byte %d: %w", l.pos, err)
	}
	return n, err
}

// Close releases the file's descriptor.
func (l *lazyFile) Close() error {
	l.pool.close(l)
	return nil
}

// reopen opens l (again) at its position, closing the least recently read
// file when the pool is full or the process is out of descriptors.
func (p *filePool) reopen(l *lazyFile) error {
	for len(p.open) >= p.max {
		p.evict()
	}
	f, err := os.Open(l.path)
	for err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) && len(p.open) > 0 {
		// The limit is lower than we thought (other files are open): hold
		// fewer.
		p.max = max(1, len(p.open)-1)
		p.evict()
		f, err = os.Open(l.path)
	}
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !l.opened {
		l.opened, l.size = true, fi.Size()
		if st != nil {
			l.dev, l.ino = uint64(st.Dev), st.Ino
		}
	} else {
		if st != nil && (uint64(st.Dev) != l.dev || st.Ino != l.ino) {
			f.Close()
			return fmt.Errorf("replaced by another file while being read (at byte %d)", l.pos)
		}
		if fi.Size() < l.pos {
			f.Close()
			return fmt.Errorf("truncated while being read: %d bytes now, %d read", fi.Size(), l.pos)
		}
		if _, err := f.Seek(l.pos, io.SeekStart); err != nil {
			f.Close()
			return err
		}
	}
	l.f = f
	p.open = append(p.open, l)
	return nil
}

func (p *filePool) evict() {
	if len(p.open) == 0 {
		return
	}
	oldest := 0
	for i, o := range p.open {
		if o.used < p.open[oldest].used {
			oldest = i
		}
	}
	p.close(p.open[oldest])
}

func (p *filePool) close(l *lazyFile) {
	if l.f == nil {
		return
	}
	l.f.Close()
	l.f = nil
	for i, o := range p.open {
		if o == l {
			p.open = append(p.open[:i], p.open[i+1:]...)
			break
		}
	}
}
