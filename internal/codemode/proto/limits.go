package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Limits bound one run. A zero field takes its default (Default*); the
// command line sets them with the --code-mode-* flags.
type Limits struct {
	// Timeout bounds the run's wall-clock time, inner calls included.
	Timeout time.Duration
	// CPU bounds the time the engine spends running the program's own
	// code (not waiting for inner calls). The engine runs on one
	// goroutine, so that time is the run's CPU time but for the garbage
	// collector's share.
	CPU time.Duration
	// Calls bounds the inner calls one run may make.
	Calls int
	// Concurrent bounds the inner calls in flight at once; a call beyond
	// it waits for one to end (it does not end the run).
	Concurrent int
	// ProgramBytes bounds the size of the program's source.
	ProgramBytes int
	// ResultBytes bounds the size of each inner call's result (its JSON).
	ResultBytes int
	// ReturnBytes bounds the size of the returned value, as JSON.
	ReturnBytes int
	// MemoryBytes bounds how much the runner's heap may grow while the
	// program's code runs; the runner process's data segment is capped
	// by the OS a little above it (see docs/code-mode.md, "Memory").
	MemoryBytes int64
}

// The default limits.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultCPU          = 10 * time.Second
	DefaultCalls        = 100
	DefaultConcurrent   = 8
	DefaultProgramBytes = 64 << 10
	DefaultResultBytes  = 1 << 20
	DefaultReturnBytes  = 1 << 20
	DefaultMemoryBytes  = 128 << 20
)

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.CPU <= 0 {
		l.CPU = DefaultCPU
	}
	if l.Calls <= 0 {
		l.Calls = DefaultCalls
	}
	if l.Concurrent <= 0 {
		l.Concurrent = DefaultConcurrent
	}
	if l.ProgramBytes <= 0 {
		l.ProgramBytes = DefaultProgramBytes
	}
	if l.ResultBytes <= 0 {
		l.ResultBytes = DefaultResultBytes
	}
	if l.ReturnBytes <= 0 {
		l.ReturnBytes = DefaultReturnBytes
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	return l
}

// The limits by name, as a LimitError and the metrics name them.
const (
	LimitTimeout      = "timeout"
	LimitCPU          = "cpu"
	LimitCalls        = "calls"
	LimitProgramBytes = "program-bytes"
	LimitResultBytes  = "result-bytes"
	LimitReturnBytes  = "return-bytes"
	LimitMemory       = "memory"
)

// flagOf names the command-line flag of each limit, for messages.
var flagOf = map[string]string{
	LimitTimeout:      "--code-mode-timeout",
	LimitCPU:          "--code-mode-cpu",
	LimitCalls:        "--code-mode-max-calls",
	LimitProgramBytes: "--code-mode-max-program-bytes",
	LimitResultBytes:  "--code-mode-max-result-bytes",
	LimitReturnBytes:  "--code-mode-max-return-bytes",
	LimitMemory:       "--code-mode-max-memory-bytes",
}

// LimitError ends a run that exceeded a limit.
type LimitError struct {
	Limit  string // one of the Limit* names
	Detail string // what exceeded it
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("code-mode: the run was ended by its %s limit: %s (the gateway's %s); make the program do less per run", e.Limit, e.Detail, flagOf[e.Limit])
}

// Limitf makes a LimitError.
func Limitf(limit, format string, args ...any) *LimitError {
	return &LimitError{Limit: limit, Detail: fmt.Sprintf(format, args...)}
}

// Exception is a program that threw (or was rejected) or did not compile.
type Exception struct{ Message string }

func (e *Exception) Error() string { return "code-mode: the program failed: " + e.Message }

// ErrCancelled ends a run whose caller cancelled it.
var ErrCancelled = errors.New("code-mode: the run was cancelled by its caller")

// RunnerError ends a run whose runner process failed: it could not be
// found or started, or it died (crashed) in the middle of the run.
type RunnerError struct{ Message string }

func (e *RunnerError) Error() string { return "code-mode: " + e.Message }

// Outcome is how a run ended.
type Outcome struct {
	// Value is the returned value as JSON ("null" for undefined); nil when
	// the run failed.
	Value json.RawMessage
	// Err is why the run failed: a *LimitError, an *Exception (the program
	// threw, or did not compile), a *RunnerError, or ErrCancelled.
	Err     error
	Calls   int           // inner calls made
	Logs    []string      // console.log's lines
	Elapsed time.Duration // wall-clock time
	CPU     time.Duration // time the program's code ran
}
