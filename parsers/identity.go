package parsers

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FingerprintBytes of a file's first line identify it (with device and
// inode): enough to tell two files apart, little enough to read on every poll.
const FingerprintBytes = 4096

// ErrNoFirstLine says that a file has no complete first line yet (shorter
// than FingerprintBytes and no newline): its fingerprint may still change.
var ErrNoFirstLine = errors.New("file has no complete first line yet")

// FileID is a file's identity: its device and inode, which survive a rename
// (Docker's rotation renames the active file), and the fingerprint of its
// first line, which tells a recreated file that reuses an inode from the
// old one. Its String form is what records carry as their FileID, so the
// same file read live or offline gives records the same IDs.
type FileID struct {
	Dev, Ino uint64
	FP       string // Fingerprint of the (decompressed) first line
}

func (id FileID) String() string {
	return strconv.FormatUint(id.Dev, 10) + ":" + strconv.FormatUint(id.Ino, 10) + ":" + id.FP
}

// Fingerprint hashes the first line of head (at most FingerprintBytes,
// without the newline): the first 16 hex digits of its SHA-256. The error is
// ErrNoFirstLine when head holds no newline and is shorter than
// FingerprintBytes; the fingerprint of what is there is returned with it.
func Fingerprint(head []byte) (string, error) {
	var err error
	if len(head) > FingerprintBytes {
		head = head[:FingerprintBytes]
	}
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	} else if len(head) < FingerprintBytes {
		err = ErrNoFirstLine
	}
	sum := sha256.Sum256(head)
	return hex.EncodeToString(sum[:8]), err
}

// IsGzip reports whether a file's first bytes are a gzip header. Files are
// told by content, not by name: logrotate's compress without compressext,
// or a rotation copied under another name, has no ".gz".
func IsGzip(head []byte) bool {
	return len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b // RFC 1952 ID1, ID2
}

// FileIsGzip is IsGzip of f's first bytes (read with ReadAt: f's offset
// does not move).
func FileIsGzip(f io.ReaderAt) bool {
	var magic [2]byte
	n, _ := f.ReadAt(magic[:], 0)
	return IsGzip(magic[:n])
}

// Identify returns f's identity. The fingerprint is taken from the
// decompressed content of a gzip file, so that a compressed rotation is
// recognised as the file it was compressed from. The error is
// ErrNoFirstLine (with the identity so far) while the first line is
// incomplete; a tailer waits, an offline reader takes it as it is.
func Identify(f *os.File) (FileID, error) {
	fi, err := f.Stat()
	if err != nil {
		return FileID{}, fmt.Errorf("file identity: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, fmt.Errorf("file identity of %s: no device/inode on this platform", f.Name())
	}
	id := FileID{Dev: uint64(st.Dev), Ino: st.Ino}
	head := make([]byte, FingerprintBytes)
	var n int
	if FileIsGzip(f) {
		zr, err := gzip.NewReader(io.NewSectionReader(f, 0, fi.Size()))
		if err != nil {
			return id, fmt.Errorf("file identity of %s: %w", f.Name(), err)
		}
		n, err = io.ReadFull(zr, head)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return id, fmt.Errorf("file identity of %s: %w", f.Name(), err)
		}
	} else {
		n, err = f.ReadAt(head, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return id, fmt.Errorf("file identity of %s: %w", f.Name(), err)
		}
	}
	id.FP, err = Fingerprint(head[:n])
	return id, err
}

// FileIdentity returns Identify(path).String() for offline reading: a file
// whose first line has no newline is identified by what it holds.
func FileIdentity(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("file identity: %w", err)
	}
	defer f.Close()
	return fileIdentity(f)
}

func fileIdentity(f *os.File) (string, error) {
	id, err := Identify(f)
	if err != nil && !errors.Is(err, ErrNoFirstLine) {
		return "", err
	}
	return id.String(), nil
}

// ContainerOf names the container a Docker json-file log belongs to: from
// config.v2.json beside it (Docker's data root), else from a
// "<name>-json.log" file name (rotations "<name>-json.log.N" included);
// "" for other files. The shipper and offline reading both label records
// with it.
func ContainerOf(p string) string {
	base := filepath.Base(p)
	i := strings.Index(base, "-json.log")
	if i < 0 {
		return ""
	}
	if data, err := os.ReadFile(filepath.Join(filepath.Dir(p), "config.v2.json")); err == nil {
		var cfg struct{ Name string }
		if json.Unmarshal(data, &cfg) == nil && cfg.Name != "" {
			return strings.TrimPrefix(cfg.Name, "/")
		}
	}
	return base[:i]
}
