package upstream_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
)

// checkIDs fails unless ids are distinct integers in [1, 2^53) (a
// JavaScript server reads them exactly) whose differences are not all the
// same: one id does not tell the next.
func checkIDs(t *testing.T, raw []string) {
	t.Helper()
	if len(raw) < 10 {
		t.Fatalf("only %d ids seen: %q", len(raw), raw)
	}
	seen := map[uint64]bool{}
	var ids []uint64
	for _, r := range raw {
		id, err := strconv.ParseUint(r, 10, 64)
		if err != nil || id == 0 || id >= 1<<53 {
			t.Errorf("id %s: not an integer in [1, 2^53)", r)
			continue
		}
		if seen[id] {
			t.Errorf("id %d sent twice", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	steps := map[uint64]bool{}
	for i := 1; i < len(ids); i++ {
		steps[ids[i]-ids[i-1]] = true
	}
	if len(steps) < 2 {
		t.Errorf("ids %v follow one another by a constant step: guessable", ids)
	}
}

func TestStdioRequestIDsAreUnguessable(t *testing.T) {
	ctx := testContext(t)
	record := t.TempDir() + "/stdin"
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) {
		o.Env = append(o.Env, fakeRecordEnv+"="+record)
	})
	for range 20 {
		mustCall(t, ctx, fx.s, "echo", `{}`)
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for line := range strings.Lines(string(data)) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil {
			ids = append(ids, string(m.ID))
		}
	}
	checkIDs(t, ids)
}

func TestRemoteRequestIDsAreUnguessable(t *testing.T) {
	ctx := testContext(t)
	var mu sync.Mutex
	var ids []string
	url := fakeStreamable(t, func(id json.RawMessage, method, session string) (int, string, string) {
		mu.Lock()
		ids = append(ids, string(id))
		mu.Unlock()
		return 200, "application/json", `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`
	})
	fx := newRemote(t, url, func(o *upstream.HTTPOptions) { o.NoListen = true })
	for range 20 {
		if _, err := fx.up.Call(ctx, "tools/call", toolParams("x", `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	checkIDs(t, ids)
}
