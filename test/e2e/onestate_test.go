package e2e

// One server, one process, one state: a stdio server that speaks both
// protocol eras (a Go SDK v1.8.0 server) runs as one process for the
// gateway's clients of both eras, so what one client stores another reads,
// and a tool one client made the server add is callable by every client.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stateServerEnv makes the test server run as the stateful server below.
const stateServerEnv = "E2E_SERVER_STATE"

type putArgs struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type keyArgs struct {
	Key string `json:"key"`
}

type growArgs struct {
	Name string `json:"name"`
}

// runStateServer is a dual-era stdio server with state: a key-value store
// (put, get), a tool list its clients grow (grow), its pid, and three ways
// of asking the client for its name: ask_input returns a 2026-07-28 input
// request (the SDK turns it into elicitation/create on a session), ask_elicit
// sends elicitation/create itself (which the SDK allows on a session only),
// ask_twice asks in two rounds of input requests (on a session the SDK asks
// the first itself and returns the second as it is).
func runStateServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e-state-server", Version: "1"}, nil)
	var mu sync.Mutex
	store := map[string]string{}
	reply := func(format string, args ...any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "put", Description: "Stores a value under a key."},
		func(ctx context.Context, req *mcp.CallToolRequest, a putArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			store[a.Key] = a.Value
			mu.Unlock()
			return reply("stored %s", a.Key)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get", Description: "Returns the value stored under a key."},
		func(ctx context.Context, req *mcp.CallToolRequest, a keyArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			v, ok := store[a.Key]
			mu.Unlock()
			if !ok {
				return reply("%s is not set", a.Key)
			}
			return reply("%s=%s", a.Key, v)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds a tool of the given name."},
		func(ctx context.Context, req *mcp.CallToolRequest, a growArgs) (*mcp.CallToolResult, any, error) {
			name := a.Name
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Added by grow."},
				func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
					return reply("%s of pid %d", name, os.Getpid())
				})
			return reply("added %s", name)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return reply("%d", os.Getpid())
		})
	nameSchema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}
	mcp.AddTool(s, &mcp.Tool{Name: "ask_input", Description: "Asks the client's name with an input request."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok && r != nil && r.Action == "accept" {
				return reply("Hello, %v!", r.Content["name"])
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_elicit", Description: "Asks the client's name with elicitation/create."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema})
			if err != nil {
				return nil, nil, err
			}
			return reply("Hello, %v!", r.Content["name"])
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_twice", Description: "Asks two questions in two rounds of input requests, the first answer kept in the requestState."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			answer := func(key string) (string, bool) {
				r, ok := req.Params.InputResponses[key].(*mcp.ElicitResult)
				if !ok || r == nil || r.Action != "accept" {
					return "", false
				}
				return fmt.Sprint(r.Content["name"]), true
			}
			if first, ok := strings.CutPrefix(req.Params.RequestState, "first="); ok {
				if second, ok := answer("second"); ok {
					return reply("%s, then %s", first, second)
				}
			}
			if first, ok := answer("first"); ok {
				return &mcp.CallToolResult{RequestState: "first=" + first, InputRequests: mcp.InputRequestMap{"second": &mcp.ElicitParams{Message: "second", RequestedSchema: nameSchema}}}, nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"first": &mcp.ElicitParams{Message: "first", RequestedSchema: nameSchema}}}, nil, nil
		})
	addCapsTools(s) // inputreq_test.go
	addFailLists(s) // listen_test.go
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// connectNamed connects a Go SDK client of the given era ("" for
// 2026-07-28, the SDK's newest) that answers elicitations with name and
// reports each tools/list_changed on the returned channel.
func (g *gw) connectNamed(ctx context.Context, era, name string) (*mcp.ClientSession, <-chan struct{}) {
	g.t.Helper()
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + name, Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			answer := name
			if m := req.Params.Message; m == "first" || m == "second" {
				answer = name + " to " + m
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": answer}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		g.t.Fatalf("connecting a %q client: %v\nlog:\n%s", era, err, g.log())
	}
	g.t.Cleanup(func() { cs.Close() })
	want := era
	if want == "" {
		want = modernEra
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		g.t.Fatalf("the client negotiated %s, want %s", got, want)
	}
	return cs, changed
}

// callAs calls a tool and returns its text, failing on any error.
func callAs(ctx context.Context, t *testing.T, who string, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s calling %s: %v", who, tool, err)
	}
	if res.IsError {
		t.Fatalf("%s calling %s: tool error %q", who, tool, text(res))
	}
	return text(res)
}

// TestOneStatePerServer: a 2026-07-28 client stores a value and makes the
// dual-era server add a tool; a 2025-11-25 client reads that value, sees the
// tool and calls it, and the reverse; both reach the same process, the only
// one the server has; and each kind of client answers the server's
// questions, asked either way.
func TestOneStatePerServer(t *testing.T) {
	g := startServe(t, fmt.Sprintf(`{"state": {"runCmd": %q}}`, stateServerEnv+"=1 "+testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	session, sessionChanged := g.connectNamed(ctx, sessionEra, "Sam")
	stateless, statelessChanged := g.connectNamed(ctx, "", "Sky")

	// What a 2026-07-28 client stores, a 2025-11-25 client reads, and back.
	if got := callAs(ctx, t, "the 2026-07-28 client", stateless, "put", map[string]any{"key": "colour", "value": "teal"}); got != "stored colour" {
		t.Fatalf("put answered %q", got)
	}
	if got := callAs(ctx, t, "the 2025-11-25 client", session, "get", map[string]any{"key": "colour"}); got != "colour=teal" {
		t.Errorf("the 2025-11-25 client read %q, want %q: the two eras do not see one state", got, "colour=teal")
	}
	callAs(ctx, t, "the 2025-11-25 client", session, "put", map[string]any{"key": "shape", "value": "round"})
	if got := callAs(ctx, t, "the 2026-07-28 client", stateless, "get", map[string]any{"key": "shape"}); got != "shape=round" {
		t.Errorf("the 2026-07-28 client read %q, want %q", got, "shape=round")
	}

	// A tool the 2026-07-28 client made the server add is listed to the
	// 2025-11-25 client (after its list_changed) and callable by it.
	drain(sessionChanged)
	if got := callAs(ctx, t, "the 2026-07-28 client", stateless, "grow", map[string]any{"name": "added_by_stateless"}); got != "added added_by_stateless" {
		t.Fatalf("grow answered %q", got)
	}
	waitListed(ctx, t, session, sessionChanged, "added_by_stateless")
	pid := callAs(ctx, t, "the 2025-11-25 client", session, "pid", nil)
	if got, want := callAs(ctx, t, "the 2025-11-25 client", session, "added_by_stateless", nil), "added_by_stateless of pid "+pid; got != want {
		t.Errorf("the added tool answered %q, want %q", got, want)
	}
	// And the reverse.
	drain(statelessChanged)
	callAs(ctx, t, "the 2025-11-25 client", session, "grow", map[string]any{"name": "added_by_session"})
	waitListed(ctx, t, stateless, statelessChanged, "added_by_session")
	if got, want := callAs(ctx, t, "the 2026-07-28 client", stateless, "added_by_session", nil), "added_by_session of pid "+pid; got != want {
		t.Errorf("the added tool answered %q, want %q", got, want)
	}
	if got := callAs(ctx, t, "the 2026-07-28 client", stateless, "pid", nil); got != pid {
		t.Errorf("the 2026-07-28 client reached pid %s, the 2025-11-25 client pid %s: one server, two processes", got, pid)
	}

	// The server's questions reach the client whose call asked, in its era.
	for _, c := range []struct {
		who, name string
		cs        *mcp.ClientSession
	}{{"the 2025-11-25 client", "Sam", session}, {"the 2026-07-28 client", "Sky", stateless}} {
		for _, tool := range []string{"ask_input", "ask_elicit"} {
			if got, want := callAs(ctx, t, c.who, c.cs, tool, nil), "Hello, "+c.name+"!"; got != want {
				t.Errorf("%s calling %s got %q, want %q", c.who, tool, got, want)
			}
		}
		if got, want := callAs(ctx, t, c.who, c.cs, "ask_twice", nil), c.name+" to first, then "+c.name+" to second"; got != want {
			t.Errorf("%s calling ask_twice got %q, want %q", c.who, got, want)
		}
	}

	// Exactly one process of the server.
	var procs []string
	for p, cmd := range g.children() {
		if strings.Contains(cmd, gatewayTestBinary()) {
			procs = append(procs, fmt.Sprintf("%d: %s", p, cmd))
		}
	}
	slices.Sort(procs)
	if len(procs) != 1 {
		t.Errorf("the server runs as %d processes, want 1:\n%s", len(procs), strings.Join(procs, "\n"))
	}
}

// gatewayTestBinary is the e2e test binary, which the server's runCmd runs.
func gatewayTestBinary() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe
}

// waitListed waits for list_changed notifications until the client's tool
// list has name.
func waitListed(ctx context.Context, t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}, name string) {
	t.Helper()
	for !slices.Contains(toolNames(ctx, t, cs), name) {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("tool %q was never listed: %v", name, toolNames(context.Background(), t, cs))
		}
	}
}

// TestOneStateInputRoundsForStatelessClient: a 2026-07-28 client (raw HTTP,
// reading resultType as the era defines it) goes through both rounds of the
// dual-era server's two-round tool, which the server runs in the session
// era: the first round is the server's elicitation/create, bridged to an
// input-required result; the second is the server's own input requests,
// passed on as input-required with its requestState; the last retry gets
// the result.
func TestOneStateInputRoundsForStatelessClient(t *testing.T) {
	g := startServe(t, fmt.Sprintf(`{"state": {"runCmd": %q}}`, stateServerEnv+"=1 "+testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	call := func(id int, params map[string]any) map[string]any {
		t.Helper()
		params["name"] = "ask_twice"
		params["arguments"] = map[string]any{}
		status, out := postModernAs(ctx, t, g.gw, caps, "tools/call", "ask_twice", id, params)
		if status != http.StatusOK || out["result"] == nil {
			t.Fatalf("call %d: status %d: %v\nlog:\n%s", id, status, out, g.serveLog())
		}
		return out["result"].(map[string]any)
	}
	// one returns the only input request of an input-required result.
	one := func(round string, res map[string]any) (string, string) {
		t.Helper()
		if res["resultType"] != "input_required" {
			t.Fatalf("%s round: resultType %v, want input_required: %v", round, res["resultType"], res)
		}
		reqs, _ := res["inputRequests"].(map[string]any)
		if len(reqs) != 1 {
			t.Fatalf("%s round: inputRequests %v, want one", round, res["inputRequests"])
		}
		for key, r := range reqs {
			msg, _ := r.(map[string]any)["params"].(map[string]any)["message"].(string)
			if msg != round {
				t.Fatalf("%s round: the question is %q", round, msg)
			}
			state, _ := res["requestState"].(string)
			return key, state
		}
		return "", ""
	}
	answer := func(name string) map[string]any {
		return map[string]any{"action": "accept", "content": map[string]any{"name": name}}
	}
	key, state := one("first", call(1, map[string]any{}))
	res := call(2, map[string]any{"inputResponses": map[string]any{key: answer("Ada")}, "requestState": state})
	key, state = one("second", res)
	if key != "second" || state != "first=Ada" {
		t.Errorf("second round: key %q, requestState %q; want the server's own, %q and %q", key, state, "second", "first=Ada")
	}
	res = call(3, map[string]any{"inputResponses": map[string]any{key: answer("Bo")}, "requestState": state})
	if res["resultType"] != "complete" {
		t.Errorf("last retry: resultType %v, want complete: %v", res["resultType"], res)
	}
	content, _ := res["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != "Ada, then Bo" {
		t.Errorf("last retry: content %v, want the text %q", res["content"], "Ada, then Bo")
	}
}
