// Package audit writes the gateway's audit log: JSON Lines, one record per
// policy decision, forwarded call and administrative action, each carrying
// the hash of the record before it, so that Verify detects a record edited,
// removed or moved. Rotation by size keeps the chain across files: the
// first record of a new file carries the hash of the last one of the file
// before.
//
// A record's line ends with its own hash: `…,"prev":"<hex>","hash":"<hex>"}`,
// where hash is the SHA-256 of the line's bytes up to (not including)
// `,"hash":`, and prev is the hash of the record before (64 zeros for the
// first record ever written).
package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Genesis is the prev of the first record of a chain.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one entry. Empty fields are left out.
type Record struct {
	Seq  uint64 `json:"seq"`
	Time string `json:"time"`
	// Type is "call" (a decided and possibly forwarded call), "admin" (an
	// administrative action) or "approval" (a person's answer).
	Type      string `json:"type"`
	Principal string `json:"principal,omitempty"` // the sandbox or client
	Client    string `json:"client,omitempty"`    // clientInfo name/version
	Action    string `json:"action,omitempty"`    // the policy action, or the admin command ("server add")
	Method    string `json:"method,omitempty"`    // the MCP method
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"` // original tool or prompt name, URI, or admin subject
	// Decision is "allow", "deny", or "" when no policy is loaded.
	Decision   string          `json:"decision,omitempty"`
	Policies   []string        `json:"policies,omitempty"`
	Approval   string          `json:"approval,omitempty"` // "granted", "denied", "timeout"
	ApprovedBy string          `json:"approvedBy,omitempty"`
	ArgsSHA256 string          `json:"argsSha256,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	DurationMS *float64        `json:"durationMs,omitempty"`
	// Outcome is "ok", "tool_error", "error", "denied".
	Outcome    string `json:"outcome,omitempty"`
	ErrorClass string `json:"errorClass,omitempty"`
	Detail     string `json:"detail,omitempty"`
	// Run links a call to the built-in tool call that made it (a code-mode
	// run, mcp-exec): that call's record and each of its inner calls'
	// carry the same id.
	Run string `json:"run,omitempty"`
}

// Options configure a Log.
type Options struct {
	// MaxBytes rotates the file once it grows beyond this size; 0: 100 MiB.
	MaxBytes int64
	// Keep is how many rotated files are kept (FILE.1 is the newest); 0: 10.
	Keep int
	// Arguments records calls' arguments in full instead of their hash.
	Arguments bool
	Logger    *slog.Logger
}

// Log is an append-only audit file.
type Log struct {
	path string
	opts Options

	mu   sync.Mutex
	f    *os.File
	lock *os.File // FILE.lock, flocked while the log is open
	size int64
	seq  uint64
	prev string
	buf  []byte
}

// Open opens (or creates, mode 0600) the audit file at path and continues
// its chain. The file must be a regular file, not a symbolic link (the
// gateway may run as root: a link would let whoever can write the
// directory point its appends anywhere); and one gateway writes it: the
// lock file FILE.lock is held (flock) while the log is open, so a second
// gateway given the same file is refused rather than interleaving its
// chain with the first's.
func Open(path string, opts Options) (*Log, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 100 << 20
	}
	if opts.Keep <= 0 {
		opts.Keep = 10
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	l := &Log{path: path, opts: opts, prev: Genesis}
	lock, err := lockFile(path)
	if err != nil {
		return nil, err
	}
	l.lock = lock
	fail := func(err error) (*Log, error) {
		lock.Close()
		return nil, err
	}
	last, size, err := lastRecord(path)
	if err != nil {
		return fail(fmt.Errorf("audit log %s: %w", path, err))
	}
	if last == nil && size == 0 {
		// An empty or new file continues the newest rotated one, if any.
		if last, _, err = lastRecord(path + ".1"); err != nil {
			return fail(fmt.Errorf("audit log %s.1: %w", path, err))
		}
	}
	if last != nil {
		l.prev, l.seq = last.hash, last.seq
	}
	if err := l.openFile(); err != nil {
		return fail(err)
	}
	return l, nil
}

// ErrLocked: another gateway writes the audit file.
var ErrLocked = errors.New("audit file is locked by another gateway")

// lockFile takes FILE.lock (created 0600, never through a link) for this
// process, and writes its pid there for the message of the next one.
func lockFile(path string) (*os.File, error) {
	name := path + ".lock"
	f, err := openNoFollow(name, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := "pid unknown"
		if b, rerr := io.ReadAll(io.LimitReader(f, 32)); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			holder = "pid " + string(bytes.TrimSpace(b))
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("audit file %s is locked by another gateway (%s, holding %s): give each gateway its own --audit-file: %w", path, holder, name, ErrLocked)
		}
		return nil, fmt.Errorf("audit file %s: cannot lock %s: %w", path, name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// openNoFollow opens an audit file without following a symbolic link in
// its last element, and checks that it is a regular file. O_NONBLOCK keeps
// a FIFO put there from blocking the open (a regular file ignores it).
func openNoFollow(name string, flag int) (*os.File, error) {
	f, err := os.OpenFile(name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("audit file %s is not a regular file (a FIFO): give the path of a regular file as --audit-file", name)
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("audit file %s is a symbolic link; the gateway does not follow links for its audit log: give the real path as --audit-file", name)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("audit file %s is not a regular file (%s): give the path of a regular file as --audit-file", name, st.Mode().Type())
	}
	return f, nil
}

// Path is the file written to.
func (l *Log) Path() string { return l.path }

// Arguments reports whether arguments are recorded in full.
func (l *Log) Arguments() bool { return l.opts.Arguments }

func (l *Log) openFile() error {
	f, err := openNoFollow(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("audit log: %w (set --audit-file to a writable path)", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

type tail struct {
	seq  uint64
	hash string
}

// lastRecord reads the last complete record of a file.
func lastRecord(path string) (*tail, int64, error) {
	f, err := openNoFollow(path, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	// Read the last 64 KiB, and more while no line in it is whole: a
	// record with a client's arguments in full may be longer, and taking
	// its tail for no record would start a new chain at Genesis.
	for window := int64(64 << 10); ; window *= 2 {
		off := max(size-window, 0)
		b := make([]byte, size-off)
		if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		b = bytes.TrimRight(b, "\n")
		if off > 0 {
			// The window's first line may be cut: only what follows a
			// newline is whole.
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				continue
			}
			b = b[i+1:]
		}
		lines := bytes.Split(b, []byte("\n"))
		for i := len(lines) - 1; i >= 0; i-- {
			if seq, _, hash, ok := parseLine(lines[i]); ok {
				return &tail{seq: seq, hash: hash}, size, nil
			}
		}
		if off == 0 {
			return nil, size, nil
		}
	}
}

// Write appends a record, filling in its seq, time and chain.
func (l *Log) Write(r *Record) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("audit log is closed")
	}
	if l.size >= l.opts.MaxBytes {
		if err := l.rotate(); err != nil {
			l.opts.Logger.Error("rotating the audit log failed; writing on", "file", l.path, "err", err)
		}
	}
	l.seq++
	r.Seq = l.seq
	if r.Time == "" {
		r.Time = time.Now().UTC().Format(time.RFC3339Nano)
	}
	body, err := json.Marshal(r)
	if err != nil {
		l.seq--
		return fmt.Errorf("audit record: %w", err)
	}
	b := append(l.buf[:0], body[:len(body)-1]...)
	b = append(b, `,"prev":"`...)
	b = append(b, l.prev...)
	b = append(b, '"')
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])
	b = append(b, `,"hash":"`...)
	b = append(b, hash...)
	b = append(b, "\"}\n"...)
	l.buf = b
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err != nil {
		l.seq--
		return fmt.Errorf("writing the audit log %s: %w", l.path, err)
	}
	l.prev = hash
	return nil
}

// rotate moves FILE to FILE.1 (FILE.1 to FILE.2, …, dropping the oldest)
// and starts a new FILE, whose first record continues the chain.
func (l *Log) rotate() error {
	if err := l.f.Close(); err != nil {
		return err
	}
	l.f = nil
	oldest := l.path + "." + strconv.Itoa(l.opts.Keep)
	if dropped, _, err := lastRecord(oldest); err == nil && dropped != nil {
		// The chain's head leaves with it: say where the rest starts,
		// which `audit verify --from` needs.
		l.opts.Logger.Info("audit log: the oldest rotated file is dropped (--audit-max-bytes, ten kept); verify the files kept with `mcp-gateway audit verify --from HASH`",
			"file", oldest, "from", dropped.hash)
	}
	for i := l.opts.Keep; i >= 1; i-- {
		from := l.path
		if i > 1 {
			from = l.path + "." + strconv.Itoa(i-1)
		}
		to := l.path + "." + strconv.Itoa(i)
		if err := os.Rename(from, to); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return l.openFile()
}

// Close closes the file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if l.lock != nil {
		l.lock.Close() // releases the flock
		l.lock = nil
	}
	return err
}

// HashArguments is the SHA-256 of a call's arguments as received, in hex.
func HashArguments(args []byte) string {
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

// parseLine checks a record line's own hash and returns its seq, prev and hash.
func parseLine(line []byte) (seq uint64, prev, hash string, ok bool) {
	i := bytes.LastIndex(line, []byte(`,"hash":"`))
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return 0, "", "", false
	}
	hash = string(line[i+len(`,"hash":"`) : len(line)-2])
	sum := sha256.Sum256(line[:i])
	if hex.EncodeToString(sum[:]) != hash {
		return 0, "", hash, false
	}
	var r struct {
		Seq  uint64 `json:"seq"`
		Prev string `json:"prev"`
	}
	if json.Unmarshal(line, &r) != nil {
		return 0, "", hash, false
	}
	return r.Seq, r.Prev, hash, true
}

// Problem is one break of the chain Verify found.
type Problem struct {
	File string
	Line int
	What string
}

func (p Problem) String() string {
	if p.Line == 0 { // about the file itself
		return fmt.Sprintf("%s: %s", p.File, p.What)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.What)
}

// Result is what Verify found.
type Result struct {
	Records  int
	Files    []string
	First    string // the prev of the first record read (Genesis when the chain starts there)
	Last     string // the hash of the last record: keep it elsewhere to detect a truncation later
	Problems []Problem
}

// Files returns path's rotated files (every FILE.N there is), oldest
// first, then path itself.
func Files(path string) []string {
	files, _ := rotated(path)
	return append(files, path)
}

// rotated lists the FILE.N beside path, oldest (highest N) first, and the
// FILE.N missing below the highest one.
func rotated(path string) (files, missing []string) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, nil
	}
	prefix := filepath.Base(path) + "."
	var ns []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n > 0 && strconv.Itoa(n) == rest {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	for i := len(ns) - 1; i >= 0; i-- {
		files = append(files, path+"."+strconv.Itoa(ns[i]))
	}
	if len(ns) > 0 {
		for n := 1; n < ns[len(ns)-1]; n++ {
			if !slices.Contains(ns, n) {
				missing = append(missing, path+"."+strconv.Itoa(n))
			}
		}
	}
	return files, missing
}

// VerifyLog verifies the audit log at path with its rotated files, as one
// chain starting from from (Genesis when ""): besides Verify's problems, a
// rotated file missing between others is reported by name.
func VerifyLog(path, from string) (*Result, error) {
	files, missing := rotated(path)
	files = append(files, path)
	res, err := VerifyFrom(from, files...)
	if err != nil {
		return nil, err
	}
	var ps []Problem
	for _, m := range missing {
		ps = append(ps, Problem{File: m, What: "missing: a rotated file was removed (rotated files after it exist), so the records it held are gone"})
	}
	res.Problems = append(ps, res.Problems...)
	return res, nil
}

// Verify reads files in order as one chain from Genesis (VerifyFrom).
func Verify(files ...string) (*Result, error) { return VerifyFrom(Genesis, files...) }

// VerifyFrom reads files in order as one chain and reports a first record
// whose prev is not from (Genesis when "": the head of the chain was cut,
// or rotated away, in which case from is the hash it should start from),
// and every record whose own hash does not match its content (edited),
// whose prev is not the hash of the record before (removed, inserted or
// moved), or whose sequence number does not follow.
func VerifyFrom(from string, files ...string) (*Result, error) {
	if from == "" {
		from = Genesis
	}
	res := &Result{Files: files}
	var prev string
	var seq uint64
	first := true
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		n := 0
		for sc.Scan() {
			n++
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			res.Records++
			s, p, h, ok := parseLine(line)
			if !ok {
				res.Problems = append(res.Problems, Problem{name, n, "the record does not match its hash: it was edited (or is not an audit record)"})
				prev, first = h, false
				seq++
				continue
			}
			switch {
			case first:
				res.First = p
				if p != from {
					what := fmt.Sprintf("the chain does not start at its genesis: the first record (%d) carries prev %s; the records before it were cut, or rotated away (then give the hash it should start from with --from)", s, p)
					if from != Genesis {
						what = fmt.Sprintf("the chain does not start at %s (--from): the first record (%d) carries prev %s", from, s, p)
					}
					res.Problems = append(res.Problems, Problem{name, n, what})
				}
			case p != prev:
				res.Problems = append(res.Problems, Problem{name, n, fmt.Sprintf("the chain is broken before record %d: its prev is not the hash of the record before it (a record was removed, inserted or moved)", s)})
			case s != seq+1:
				res.Problems = append(res.Problems, Problem{name, n, fmt.Sprintf("record %d follows record %d", s, seq)})
			}
			first = false
			prev, seq = h, s
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	res.Last = prev
	return res, nil
}
