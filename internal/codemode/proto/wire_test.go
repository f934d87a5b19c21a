package proto

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// An outcome crosses the runner's pipe as it was: its value or its error's
// kind and words, its calls, logs and times.
func TestOutcomeRoundTrip(t *testing.T) {
	for _, out := range []Outcome{
		{Value: json.RawMessage(`{"a":1}`), Calls: 2, Logs: []string{"x"}, Elapsed: time.Second, CPU: time.Millisecond},
		{Err: Limitf(LimitCPU, "the program's code ran for more than %s", time.Second), Calls: 1},
		{Err: &Exception{Message: "Error: boom"}},
		{Err: ErrCancelled},
		{Err: &RunnerError{Message: "it died"}},
	} {
		b, err := json.Marshal(Message{Done: DoneOf(out)})
		if err != nil {
			t.Fatal(err)
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil || m.Done == nil {
			t.Fatalf("%s: %v", b, err)
		}
		got := m.Done.Outcome()
		if string(got.Value) != string(out.Value) || got.Calls != out.Calls || got.Elapsed != out.Elapsed || got.CPU != out.CPU || len(got.Logs) != len(out.Logs) {
			t.Errorf("%s came back as %+v", b, got)
		}
		if (out.Err == nil) != (got.Err == nil) || out.Err != nil && got.Err.Error() != out.Err.Error() {
			t.Errorf("%v came back as %v", out.Err, got.Err)
		}
		var le *LimitError
		if errors.As(out.Err, &le) && !errors.As(got.Err, &le) {
			t.Errorf("a limit came back as %T", got.Err)
		}
	}
}
