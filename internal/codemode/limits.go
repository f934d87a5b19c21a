package codemode

import "github.com/mcp-gateway/mcp-gateway/internal/codemode/proto"

// A run's limits and how it ends are package proto's, which the runner
// process shares.
type (
	Limits      = proto.Limits
	LimitError  = proto.LimitError
	Exception   = proto.Exception
	RunnerError = proto.RunnerError
	Outcome     = proto.Outcome
)

// ErrCancelled ends a run whose caller cancelled it.
var ErrCancelled = proto.ErrCancelled

// The default limits.
const (
	DefaultTimeout      = proto.DefaultTimeout
	DefaultCPU          = proto.DefaultCPU
	DefaultCalls        = proto.DefaultCalls
	DefaultConcurrent   = proto.DefaultConcurrent
	DefaultProgramBytes = proto.DefaultProgramBytes
	DefaultResultBytes  = proto.DefaultResultBytes
	DefaultReturnBytes  = proto.DefaultReturnBytes
	DefaultMemoryBytes  = proto.DefaultMemoryBytes
)

// The limits by name, as a LimitError and the metrics name them.
const (
	LimitTimeout      = proto.LimitTimeout
	LimitCPU          = proto.LimitCPU
	LimitCalls        = proto.LimitCalls
	LimitProgramBytes = proto.LimitProgramBytes
	LimitResultBytes  = proto.LimitResultBytes
	LimitReturnBytes  = proto.LimitReturnBytes
	LimitMemory       = proto.LimitMemory
)
