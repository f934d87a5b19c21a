// Package github prepares the servers of the sandbox contract's GitHub
// entries: it shallow-clones github.com/<owner>/<repo> and runs the entry's
// installCmd in the clone, so that the upstream package can start its runCmd
// there. It sits beside the call path: the command line runs it before an
// upstream starts.
package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options say where and how a repository is prepared.
type Options struct {
	// Dir holds the clones, as Dir/<owner>/<repo>.
	Dir string
	// BaseURL is where repositories are cloned from; "" means https://github.com.
	BaseURL string
	// Env is the environment of git and of installCmd.
	Env []string
	// Output receives git's and installCmd's output, each line prefixed
	// "[<server>] ". Nil discards it.
	Output io.Writer
}

// Repo names one GitHub server.
type Repo struct {
	Server      string // the key in the mcp object, "github/<owner>/<repo>"
	Owner, Name string
	InstallCmd  string
}

// Prepare makes sure the repository is cloned and installed and returns its
// directory. A repository already in place is used as it is: it is only put
// there after its clone and installCmd succeeded (it is prepared in a
// temporary directory and renamed into place), so a failure leaves nothing behind.
func Prepare(ctx context.Context, r Repo, opts Options) (string, error) {
	target := filepath.Join(opts.Dir, r.Owner, r.Name)
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		return target, nil
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("mcp server %q: creating %s: %w", r.Server, parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+r.Name+".partial-")
	if err != nil {
		return "", fmt.Errorf("mcp server %q: %w", r.Server, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()

	base := strings.TrimSuffix(opts.BaseURL, "/")
	if base == "" {
		base = "https://github.com"
	}
	url := base + "/" + r.Owner + "/" + r.Name + ".git"
	out := &tail{w: prefixWriter(opts.Output, r.Server)}
	env := append(append([]string(nil), opts.Env...), "GIT_TERMINAL_PROMPT=0")
	if err := run(ctx, out, env, "", "git", "clone", "--depth", "1", "--", url, tmp); err != nil {
		return "", fmt.Errorf("mcp server %q: cloning %s failed: %w%s", r.Server, url, err, out.String())
	}
	if strings.TrimSpace(r.InstallCmd) != "" {
		if err := run(ctx, out, opts.Env, tmp, "/bin/sh", "-c", r.InstallCmd); err != nil {
			return "", fmt.Errorf("mcp server %q: installCmd failed: %w%s", r.Server, err, out.String())
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		if fi, statErr := os.Stat(target); statErr == nil && fi.IsDir() {
			return target, nil // prepared meanwhile by someone else
		}
		return "", fmt.Errorf("mcp server %q: moving the clone into place: %w", r.Server, err)
	}
	ok = true
	return target, nil
}

// run runs a command in its own process group, killing the whole group when
// ctx ends.
func run(ctx context.Context, out io.Writer, env []string, dir string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s", ee.ProcessState.String())
	}
	return err
}

// tail keeps the last lines written through it, for error messages.
type tail struct {
	mu    sync.Mutex
	w     io.Writer
	lines []string
	part  []byte
}

const tailLines = 15

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.part[:i]))
		if len(t.lines) > tailLines {
			t.lines = t.lines[1:]
		}
		t.part = t.part[i+1:]
	}
	if t.w != nil {
		_, _ = t.w.Write(p)
	}
	return len(p), nil
}

// String is the tail as a suffix for an error message ("" when empty).
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.part) > 0 {
		lines = append(lines, string(t.part))
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its output ends:\n  " + strings.Join(lines, "\n  ")
}

// prefixWriter prefixes each line with "[server] ".
func prefixWriter(w io.Writer, server string) io.Writer {
	if w == nil {
		return nil
	}
	return &prefixed{w: w, prefix: []byte("[" + server + "] "), atStart: true}
}

type prefixed struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  []byte
	atStart bool
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if p.atStart {
			out = append(out, p.prefix...)
			p.atStart = false
		}
		out = append(out, c)
		if c == '\n' {
			p.atStart = true
		}
	}
	_, err := p.w.Write(out)
	return len(b), err
}
