// Package proto is what the gateway and its code-mode runner processes
// (cmd/mcp-gateway-codemode) share: a run's limits, how it ends, and the
// messages they exchange. It imports no JavaScript engine, so the gateway
// that links it does not link one either.
//
// The messages are JSON values, one a line, on the runner's stdin (from
// the gateway) and stdout (to it). A runner serves one run at a time:
//
//	gateway → runner  {"run": {"source", "tools" | "sameTools", "limits"}}
//	runner → gateway  {"call": {"id", "tool", "arguments"}}    (an inner call; any number, concurrent)
//	gateway → runner  {"reply": {"id", "result" | "error" | "tooLarge"}}
//	runner → gateway  {"done": {"value" | "error", "calls", "logs", "elapsedNs", "cpuNs"}}
//
// after which the runner waits for the next run, in a fresh engine.
package proto

import (
	"encoding/json"
	"errors"
	"time"
)

// Func is a function a program may call: servers.<Server>.<Name>.
type Func struct {
	Server string `json:"server"`
	Name   string `json:"name"`
}

// Message is one line of the runner's protocol: exactly one field is set.
type Message struct {
	Run   *RunRequest `json:"run,omitempty"`
	Call  *Call       `json:"call,omitempty"`
	Reply *Reply      `json:"reply,omitempty"`
	Done  *Done       `json:"done,omitempty"`
}

// RunRequest starts a run. SameTools: its Tools are the previous run's
// (a warm runner is not sent a thousand tools again).
type RunRequest struct {
	Source    string `json:"source"`
	Tools     []Func `json:"tools,omitempty"`
	SameTools bool   `json:"sameTools,omitempty"`
	Limits    Limits `json:"limits"`
}

// Call is one inner call of the run: Tool indexes RunRequest.Tools.
type Call struct {
	ID        uint64          `json:"id"`
	Tool      int             `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// Reply answers a Call: its CallToolResult, or why it got none, or, for a
// result larger than the run's ResultBytes (not sent), its size.
type Reply struct {
	ID       uint64          `json:"id"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	TooLarge int             `json:"tooLarge,omitempty"`
}

// Done is how the run ended.
type Done struct {
	Value     json.RawMessage `json:"value,omitempty"`
	Error     *Failure        `json:"error,omitempty"`
	Calls     int             `json:"calls"`
	Logs      []string        `json:"logs,omitempty"`
	ElapsedNs int64           `json:"elapsedNs"`
	CPUNs     int64           `json:"cpuNs"`
}

// Failure is an Outcome's error on the wire.
type Failure struct {
	Kind    string `json:"kind"` // limit, exception, cancelled, runner
	Limit   string `json:"limit,omitempty"`
	Message string `json:"message"` // a limit's Detail, else the message
}

// DoneOf puts an Outcome on the wire.
func DoneOf(out Outcome) *Done {
	d := &Done{Value: out.Value, Calls: out.Calls, Logs: out.Logs, ElapsedNs: int64(out.Elapsed), CPUNs: int64(out.CPU)}
	var le *LimitError
	var ex *Exception
	var re *RunnerError
	switch err := out.Err; {
	case err == nil:
	case errors.As(err, &le):
		d.Error = &Failure{Kind: "limit", Limit: le.Limit, Message: le.Detail}
	case errors.As(err, &ex):
		d.Error = &Failure{Kind: "exception", Message: ex.Message}
	case errors.Is(err, ErrCancelled):
		d.Error = &Failure{Kind: "cancelled"}
	case errors.As(err, &re):
		d.Error = &Failure{Kind: "runner", Message: re.Message}
	default:
		d.Error = &Failure{Kind: "exception", Message: err.Error()}
	}
	return d
}

// Outcome takes an Outcome off the wire.
func (d *Done) Outcome() Outcome {
	out := Outcome{Value: d.Value, Calls: d.Calls, Logs: d.Logs, Elapsed: time.Duration(d.ElapsedNs), CPU: time.Duration(d.CPUNs)}
	if f := d.Error; f != nil {
		out.Value = nil
		switch f.Kind {
		case "limit":
			out.Err = &LimitError{Limit: f.Limit, Detail: f.Message}
		case "cancelled":
			out.Err = ErrCancelled
		case "runner":
			out.Err = &RunnerError{Message: f.Message}
		default:
			out.Err = &Exception{Message: f.Message}
		}
	} else if out.Value == nil {
		out.Value = json.RawMessage("null")
	}
	return out
}
