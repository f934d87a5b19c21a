package e2e

// The whole MCP protocol through the gateway, against the real everything
// server (npm) sharing one process among several clients, with Go SDK
// clients of both protocol eras: prompts, resources, templates and
// completions; progress; cancellation; elicitation, sampling and roots
// reaching only the client whose call caused them; resource updates reaching
// only subscribers; logging filtered by each client's level; and the
// 2026-07-28 era's input-required round trip in front of a legacy server.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	sessionEra = "2025-11-25"
	modernEra  = "2026-07-28"
)

var bothEras = []string{sessionEra, modernEra}

// launchPassthrough launches a gateway in front of the everything server and
// our test server, so the everything server is one upstream of several.
func launchPassthrough(t *testing.T, extra ...string) *gw {
	t.Helper()
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}, "tests": {"runCmd": %q}}`,
		filepath.Join(npmBin, "mcp-server-everything"), testServerCmd()), extra...)
	return g
}

// everythingDocs is the directory the everything server serves its static
// resources from.
func everythingDocs() string {
	return filepath.Join(npmBin, "..", "@modelcontextprotocol", "server-everything", "dist", "docs")
}

// recorder records everything the gateway sends one client unprompted, and
// answers its server-to-client requests.
type recorder struct {
	name string

	mu       sync.Mutex
	progress []mcp.ProgressNotificationParams
	logs     []mcp.LoggingMessageParams
	updated  []string
	elicits  []mcp.ElicitParams
	samples  []mcp.CreateMessageParams
	requests []string // methods of the requests the client received (session era)
	notes    []string // methods of the notifications the client received
}

func (r *recorder) snapshotProgress() []mcp.ProgressNotificationParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.progress)
}

func (r *recorder) snapshotLogs() []mcp.LoggingMessageParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.logs)
}

func (r *recorder) snapshotUpdated() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.updated)
}

func (r *recorder) snapshotElicits() []mcp.ElicitParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.elicits)
}

func (r *recorder) snapshotSamples() []mcp.CreateMessageParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.samples)
}

func (r *recorder) snapshotRequests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

func (r *recorder) sawNote(method string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.notes, method)
}

// progressFor returns the progress notifications carrying token.
func (r *recorder) progressFor(token any) []mcp.ProgressNotificationParams {
	var out []mcp.ProgressNotificationParams
	for _, p := range r.snapshotProgress() {
		if fmt.Sprint(p.ProgressToken) == fmt.Sprint(token) {
			out = append(out, p)
		}
	}
	return out
}

// elicitName is the name a client answers elicitations with.
func (r *recorder) elicitName() string { return "Ada of " + r.name }

// sampleText is the text a client answers sampling requests with.
func (r *recorder) sampleText() string { return "sampled by " + r.name }

// newRecordingClient returns a client whose every handler records into rec:
// progress, logging, resource updates, elicitation (accepting with
// rec.elicitName()) and sampling (answering rec.sampleText()).
func newRecordingClient(rec *recorder, roots ...*mcp.Root) *mcp.Client {
	return newRecordingClientWith(rec, nil, roots...)
}

// newRecordingClientWith is newRecordingClient declaring caps (nil: the
// SDK's defaults and those its handlers imply).
func newRecordingClientWith(rec *recorder, caps *mcp.ClientCapabilities, roots ...*mcp.Root) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + rec.name, Version: "1"}, &mcp.ClientOptions{
		Capabilities: caps,
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			rec.mu.Lock()
			rec.progress = append(rec.progress, *req.Params)
			rec.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			rec.mu.Lock()
			rec.logs = append(rec.logs, *req.Params)
			rec.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			rec.mu.Lock()
			rec.updated = append(rec.updated, req.Params.URI)
			rec.mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			rec.mu.Lock()
			rec.elicits = append(rec.elicits, *req.Params)
			rec.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": rec.elicitName(), "check": true, "integer": 7}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			rec.mu.Lock()
			rec.samples = append(rec.samples, *req.Params)
			rec.mu.Unlock()
			return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: rec.sampleText()}, Model: "e2e-model", Role: "assistant", StopReason: "endTurn"}, nil
		},
	})
	c.AddRoots(roots...)
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			rec.mu.Lock()
			if strings.HasPrefix(method, "notifications/") {
				rec.notes = append(rec.notes, method)
			} else {
				rec.requests = append(rec.requests, method)
			}
			rec.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	return c
}

// connectClient connects c to the gateway in the given era, like
// connectEra but with the client's own options and handlers.
func connectClient(ctx context.Context, t *testing.T, g *gw, c *mcp.Client, era string) *mcp.ClientSession {
	t.Helper()
	version := era
	if era == modernEra {
		version = "" // the SDK's newest, which it reaches through server/discover
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:   g.url,
		HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}},
		MaxRetries: -1,
	}
	cs, err := c.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to the gateway (%s): %v\nlog:\n%s", era, err, g.log())
	}
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("negotiated %s, want %s", got, era)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// recordingClient makes a recorder and a connected client for it.
func recordingClient(ctx context.Context, t *testing.T, g *gw, era, name string, roots ...*mcp.Root) (*mcp.ClientSession, *recorder) {
	t.Helper()
	rec := &recorder{name: name}
	return connectClient(ctx, t, g, newRecordingClient(rec, roots...), era), rec
}

// waitFor polls cond until it holds, failing the test when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// eventually polls cond until it holds or ctx ends, and reports which.
func eventually(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// waitForTools waits until the gateway lists every named tool: the
// everything server registers some of its tools only after initialize and
// announces them with list_changed.
func waitForTools(ctx context.Context, t *testing.T, g *gw, names ...string) {
	t.Helper()
	cs := g.connectEra(ctx, sessionEra)
	defer cs.Close()
	waitFor(ctx, t, fmt.Sprintf("the gateway to list %v", names), func() bool {
		listed := toolNames(ctx, t, cs)
		for _, n := range names {
			if !slices.Contains(listed, n) {
				return false
			}
		}
		return true
	})
}

// callResult is the outcome of a tool call made in the background.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

func callAsync(ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, params)
		ch <- callResult{res, err}
	}()
	return ch
}

// awaitCall receives a background call's outcome within ctx.
func awaitCall(ctx context.Context, t *testing.T, what string, ch <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		return callResult{}
	}
}

// longRun is the params of trigger-long-running-operation with a progress token.
func longRun(duration, steps int, token any) *mcp.CallToolParams {
	p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": duration, "steps": steps}}
	p.SetProgressToken(token)
	return p
}

func longRunText(duration, steps int) string {
	return fmt.Sprintf("Long running operation completed. Duration: %d seconds, Steps: %d.", duration, steps)
}

// directLists is what the everything server lists to a client connected to
// it directly, without the gateway.
type directLists struct {
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate // sorted by URI template
}

func listDirect(ctx context.Context, t *testing.T) directLists {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-direct", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(filepath.Join(npmBin, "mcp-server-everything"))}, nil)
	if err != nil {
		t.Fatalf("connecting to the everything server directly: %v", err)
	}
	defer cs.Close()
	var d directLists
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		d.prompts = append(d.prompts, p)
	}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		d.resources = append(d.resources, r)
	}
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		d.templates = append(d.templates, rt)
	}
	slices.SortFunc(d.templates, func(a, b *mcp.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	if len(d.prompts) == 0 || len(d.resources) == 0 || len(d.templates) == 0 {
		t.Fatalf("the everything server listed %d prompts, %d resources, %d templates directly", len(d.prompts), len(d.resources), len(d.templates))
	}
	return d
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// 1. Prompts, resources, resource templates and completions of the
// everything server, exactly as it gives them, in both eras.
func TestPassthroughPromptsResourcesCompletions(t *testing.T) {
	g := launchPassthrough(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	entries, err := os.ReadDir(everythingDocs())
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			docs = append(docs, e.Name())
		}
	}
	if len(docs) == 0 {
		t.Fatalf("no documents in %s", everythingDocs())
	}
	features, err := os.ReadFile(filepath.Join(everythingDocs(), "features.md"))
	if err != nil {
		t.Fatal(err)
	}
	direct := listDirect(ctx, t)

	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			cs := connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil), era)

			t.Run("prompts are listed as the server gives them", func(t *testing.T) {
				got := map[string]*mcp.Prompt{}
				for p, err := range cs.Prompts(ctx, nil) {
					if err != nil {
						t.Fatalf("listing prompts: %v", err)
					}
					if got[p.Name] != nil {
						t.Errorf("prompt %q listed twice", p.Name)
					}
					got[p.Name] = p
				}
				names := slices.Sorted(func(yield func(string) bool) {
					for n := range got {
						if !yield(n) {
							return
						}
					}
				})
				if want := []string{"args-prompt", "completable-prompt", "resource-prompt", "simple-prompt"}; !slices.Equal(names, want) {
					t.Fatalf("prompts = %v, want %v", names, want)
				}
				p := got["args-prompt"]
				if p.Title != "Arguments Prompt" || p.Description != "A prompt with two arguments, one required and one optional" {
					t.Errorf("args-prompt title %q description %q", p.Title, p.Description)
				}
				var args []string
				for _, a := range p.Arguments {
					args = append(args, fmt.Sprintf("%s|%v", a.Name, a.Required))
				}
				if want := []string{"city|true", "state|false"}; !slices.Equal(args, want) {
					t.Errorf("args-prompt arguments = %v, want %v", args, want)
				}
				// Every prompt exactly as the server lists it to a direct client.
				for _, want := range direct.prompts {
					if !sameJSON(t, got[want.Name], mustMarshal(t, want)) {
						t.Errorf("prompt %q through the gateway:\n%s\ndirectly:\n%s", want.Name, mustMarshal(t, got[want.Name]), mustMarshal(t, want))
					}
				}
			})

			t.Run("prompts/get with arguments returns the server's messages", func(t *testing.T) {
				res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Lyon", "state": "Rhône"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
					t.Fatalf("args-prompt messages = %+v", res.Messages)
				}
				if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "What's weather in Lyon, Rhône?" {
					t.Errorf("args-prompt message = %#v, want the text \"What's weather in Lyon, Rhône?\"", res.Messages[0].Content)
				}

				res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "resource-prompt", Arguments: map[string]string{"resourceType": "Text", "resourceId": "3"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Messages) != 2 {
					t.Fatalf("resource-prompt: %d messages, want 2: %+v", len(res.Messages), res.Messages)
				}
				if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "This prompt includes the Text resource with id: 3. Please analyze the following resource:" {
					t.Errorf("resource-prompt first message = %#v", res.Messages[0].Content)
				}
				er, ok := res.Messages[1].Content.(*mcp.EmbeddedResource)
				if !ok || er.Resource == nil || er.Resource.URI != "demo://resource/dynamic/text/3" || er.Resource.MIMEType != "text/plain" ||
					!strings.HasPrefix(er.Resource.Text, "Resource 3: This is a plaintext resource created at ") {
					t.Errorf("resource-prompt second message = %#v, want the embedded text resource 3", res.Messages[1].Content)
				}

				_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "no-such-prompt"})
				if err == nil || !strings.Contains(err.Error(), "Unknown prompt: no-such-prompt") {
					t.Errorf("getting an unknown prompt: %v", err)
				}
			})

			t.Run("resources are listed and read as the server gives them", func(t *testing.T) {
				got := map[string]*mcp.Resource{}
				for r, err := range cs.Resources(ctx, nil) {
					if err != nil {
						t.Fatalf("listing resources: %v", err)
					}
					got[r.URI] = r
				}
				for _, d := range docs {
					uri := "demo://resource/static/document/" + d
					r := got[uri]
					if r == nil {
						t.Errorf("resource %s missing from %d listed", uri, len(got))
						continue
					}
					if r.Name != d || r.Description != "Static document file exposed from /docs: "+d {
						t.Errorf("resource %s: name %q description %q", uri, r.Name, r.Description)
					}
				}
				for _, want := range direct.resources {
					if !sameJSON(t, got[want.URI], mustMarshal(t, want)) {
						t.Errorf("resource %q through the gateway:\n%s\ndirectly:\n%s", want.URI, mustMarshal(t, got[want.URI]), mustMarshal(t, want))
					}
				}
				if len(got) != len(docs) {
					t.Errorf("%d resources listed, want the server's %d documents: %v", len(got), len(docs), slices.Collect(func(yield func(string) bool) {
						for u := range got {
							if !yield(u) {
								return
							}
						}
					}))
				}

				uri := "demo://resource/static/document/features.md"
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].MIMEType != "text/markdown" || res.Contents[0].Text != string(features) {
					t.Errorf("reading %s: %d contents, first %+.200v; want the file's text", uri, len(res.Contents), res.Contents)
				}

				// A resource of a template, routed by the template.
				res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/42"})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Contents) != 1 || res.Contents[0].MIMEType != "text/plain" || !strings.HasPrefix(res.Contents[0].Text, "Resource 42: This is a plaintext resource created at ") {
					t.Errorf("reading demo://resource/dynamic/text/42: %+v", res.Contents)
				}
				res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/blob/5"})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Contents) != 1 || !strings.HasPrefix(string(res.Contents[0].Blob), "Resource 5: This is a base64 blob created at ") {
					t.Errorf("reading demo://resource/dynamic/blob/5: %+v", res.Contents)
				}

				_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://no/such/resource"})
				if err == nil || !strings.Contains(err.Error(), "demo://no/such/resource") {
					t.Errorf("reading an unknown resource: %v", err)
				}
			})

			t.Run("resource templates are listed as the server gives them", func(t *testing.T) {
				var got []string
				var all []*mcp.ResourceTemplate
				for rt, err := range cs.ResourceTemplates(ctx, nil) {
					if err != nil {
						t.Fatalf("listing resource templates: %v", err)
					}
					got = append(got, rt.URITemplate+"|"+rt.Name+"|"+rt.MIMEType)
					all = append(all, rt)
				}
				byTemplate := func(a, b *mcp.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) }
				slices.SortFunc(all, byTemplate)
				if !sameJSON(t, all, mustMarshal(t, direct.templates)) {
					t.Errorf("resource templates through the gateway:\n%s\ndirectly:\n%s", mustMarshal(t, all), mustMarshal(t, direct.templates))
				}
				slices.Sort(got)
				want := []string{
					"demo://resource/dynamic/blob/{resourceId}|Dynamic Blob Resource|application/octet-stream",
					"demo://resource/dynamic/text/{resourceId}|Dynamic Text Resource|text/plain",
				}
				if !slices.Equal(got, want) {
					t.Errorf("resource templates = %v, want %v", got, want)
				}
			})

			t.Run("completion/complete returns the server's values", func(t *testing.T) {
				for _, c := range []struct {
					params *mcp.CompleteParams
					want   []string
				}{
					{&mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
						Argument: mcp.CompleteParamsArgument{Name: "department", Value: "S"}}, []string{"Sales", "Support"}},
					{&mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
						Argument: mcp.CompleteParamsArgument{Name: "name", Value: ""},
						Context:  &mcp.CompleteContext{Arguments: map[string]string{"department": "Engineering"}}}, []string{"Alice", "Bob", "Charlie"}},
					{&mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "resource-prompt"},
						Argument: mcp.CompleteParamsArgument{Name: "resourceType", Value: "B"}}, []string{"Blob"}},
					{&mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "demo://resource/dynamic/text/{resourceId}"},
						Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: "12"}}, []string{"12"}},
				} {
					res, err := cs.Complete(ctx, c.params)
					if err != nil {
						t.Errorf("completing %s %s=%q: %v", c.params.Ref.Name+c.params.Ref.URI, c.params.Argument.Name, c.params.Argument.Value, err)
						continue
					}
					if !slices.Equal(res.Completion.Values, c.want) {
						t.Errorf("completing %s %s=%q = %v, want %v", c.params.Ref.Name+c.params.Ref.URI, c.params.Argument.Name, c.params.Argument.Value, res.Completion.Values, c.want)
					}
				}
			})
		})
	}
}

// 2. Two clients run the same long operation at once with equal progress
// tokens: each receives exactly its own steps, under its own token.
func TestPassthroughProgressNotCrossed(t *testing.T) {
	g := launchPassthrough(t)
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, recA := recordingClient(ctx, t, g, era, "A")
			b, recB := recordingClient(ctx, t, g, era, "B")
			// The same token for both; a string in one era, a number in the other.
			var token any = "the-same-token"
			if era == modernEra {
				token = 7
			}
			// Different step counts tell the two operations apart. B starts
			// once A's first step has arrived, so the two run side by side.
			callA := callAsync(ctx, a, longRun(2, 4, token))
			waitFor(ctx, t, "A's first progress notification", func() bool { return len(recA.snapshotProgress()) > 0 })
			callB := callAsync(ctx, b, longRun(1, 5, token))

			for _, c := range []struct {
				name  string
				ch    <-chan callResult
				rec   *recorder
				steps int
				dur   int
			}{{"A", callA, recA, 4, 2}, {"B", callB, recB, 5, 1}} {
				r := awaitCall(ctx, t, c.name+"'s call", c.ch)
				if r.err != nil {
					t.Fatalf("%s's call: %v", c.name, r.err)
				}
				if got, want := text(r.res), longRunText(c.dur, c.steps); got != want {
					t.Errorf("%s's result = %q, want %q", c.name, got, want)
				}
				// On a timeout, the comparison below shows what did arrive.
				eventually(ctx, func() bool { return len(c.rec.snapshotProgress()) >= c.steps })
			}
			for _, c := range []struct {
				name  string
				rec   *recorder
				steps int
			}{{"A", recA, 4}, {"B", recB, 5}} {
				got := c.rec.snapshotProgress()
				var summary []string
				for _, p := range got {
					summary = append(summary, fmt.Sprintf("%v:%v/%v", p.ProgressToken, p.Progress, p.Total))
				}
				var want []string
				for i := 1; i <= c.steps; i++ {
					want = append(want, fmt.Sprintf("%v:%v/%v", token, i, c.steps))
				}
				if !slices.Equal(summary, want) {
					t.Errorf("%s received progress %v, want exactly its own %v", c.name, summary, want)
				}
			}
		})
	}
}

// unknownAnswer is the gateway's debug line for a server's answer to a
// request nobody waits for any more: the everything server answers a call
// it was never told was cancelled.
const unknownAnswer = `mcp server \"everything\" answered an unknown request id`

// 3. A client cancels a long call: the call returns at once with the
// cancellation, and the server is told (so it never answers it).
func TestPassthroughCancellation(t *testing.T) {
	g := launchPassthrough(t, "--log-level", "debug")
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, rec := recordingClient(ctx, t, g, era, "A")
			before := strings.Count(g.log(), unknownAnswer)
			cancelled := "cancel-me-" + era
			callCtx, cancelCall := context.WithCancel(ctx)
			defer cancelCall()
			call := callAsync(callCtx, cs, longRun(4, 4, cancelled))
			waitFor(ctx, t, "the first progress notification", func() bool { return len(rec.progressFor(cancelled)) > 0 })
			cancelCall()
			r := awaitCall(ctx, t, "the cancelled call to return", call)
			if !errors.Is(r.err, context.Canceled) {
				t.Fatalf("the cancelled call returned %v, %v; want a context.Canceled error", r.res, r.err)
			}

			// The same operation, started a step later, ends after the
			// cancelled one would have: by its end, a server that was not
			// told would have answered the cancelled call.
			barrier := "barrier-" + era
			res, err := cs.CallTool(ctx, longRun(4, 4, barrier))
			if err != nil {
				t.Fatalf("the call after the cancelled one: %v", err)
			}
			if got, want := text(res), longRunText(4, 4); got != want {
				t.Errorf("the call after the cancelled one = %q, want %q", got, want)
			}
			if n := strings.Count(g.log(), unknownAnswer) - before; n != 0 {
				t.Errorf("the everything server answered the cancelled call (%d late answers in the gateway log): the cancellation did not reach it\nlog:\n%s", n, g.log())
			}
			if n := len(rec.progressFor(cancelled)); n >= 4 {
				t.Errorf("the cancelled call's progress kept arriving: %d of 4 steps", n)
			}
			waitFor(ctx, t, "the next call's 4 progress notifications", func() bool { return len(rec.progressFor(barrier)) == 4 })
		})
	}

	// A session-era client that ends its session (DELETE) mid-call: the
	// gateway cancels the call at the server.
	t.Run("a session that ends cancels its calls", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, rec := recordingClient(ctx, t, g, sessionEra, "leaving")
		before := strings.Count(g.log(), unknownAnswer)
		token := "left-behind"
		call := callAsync(ctx, cs, longRun(4, 4, token))
		waitFor(ctx, t, "the first progress notification", func() bool { return len(rec.progressFor(token)) > 0 })
		// The SDK's Close waits for calls in flight, so end the session the
		// way a client that goes away does: DELETE.
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, g.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+g.token)
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", sessionEra)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("DELETE: status %d", resp.StatusCode)
		}
		if r := awaitCall(ctx, t, "the call of the closed session to return", call); r.err == nil {
			t.Errorf("the call of a closed session returned %q without an error", text(r.res))
		}
		other := g.connectEra(ctx, sessionEra)
		res, err := other.CallTool(ctx, longRun(4, 4, "barrier"))
		if err != nil || text(res) != longRunText(4, 4) {
			t.Fatalf("the call after the closed session: %v %v", res, err)
		}
		if n := strings.Count(g.log(), unknownAnswer) - before; n != 0 {
			t.Errorf("the everything server answered the call of the closed session (%d late answers in the gateway log): it was not cancelled\nlog:\n%s", n, g.log())
		}
	})
}

// wantElicitSchema is the requestedSchema of the everything server's
// trigger-elicitation-request, as its source states it.
const wantElicitSchema = `{
  "type": "object",
  "properties": {
    "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
    "check": {"title": "Boolean", "type": "boolean", "description": "Agree to the terms and conditions"},
    "firstLine": {"title": "String with default", "type": "string", "description": "Favorite first line of a story", "default": "It was a dark and stormy night."},
    "email": {"title": "String with email format", "type": "string", "format": "email", "description": "Your email address (will be verified, and never shared with anyone else)"},
    "homepage": {"type": "string", "format": "uri", "title": "String with uri format", "description": "Portfolio / personal website"},
    "birthdate": {"title": "String with date format", "type": "string", "format": "date", "description": "Your date of birth"},
    "integer": {"title": "Integer", "type": "integer", "description": "Your favorite integer (do not give us your phone number, pin, or other sensitive info)", "minimum": 1, "maximum": 100, "default": 42},
    "number": {"title": "Number in range 1-1000", "type": "number", "description": "Favorite number (there are no wrong answers)", "minimum": 0, "maximum": 1000, "default": 3.14},
    "untitledSingleSelectEnum": {"type": "string", "title": "Untitled Single Select Enum", "description": "Choose your favorite friend", "enum": ["Monica", "Rachel", "Joey", "Chandler", "Ross", "Phoebe"], "default": "Monica"},
    "untitledMultipleSelectEnum": {"type": "array", "title": "Untitled Multiple Select Enum", "description": "Choose your favorite instruments", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"]}, "default": ["Guitar"]},
    "titledSingleSelectEnum": {"type": "string", "title": "Titled Single Select Enum", "description": "Choose your favorite hero", "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Green Lantern"}, {"const": "hero-3", "title": "Wonder Woman"}], "default": "hero-1"},
    "titledMultipleSelectEnum": {"type": "array", "title": "Titled Multiple Select Enum", "description": "Choose your favorite types of fish", "minItems": 1, "maxItems": 3, "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}, {"const": "fish-3", "title": "Trout"}]}, "default": ["fish-1"]},
    "legacyTitledEnum": {"type": "string", "title": "Legacy Titled Single Select Enum", "description": "Choose your favorite type of pet", "enum": ["pet-1", "pet-2", "pet-3", "pet-4", "pet-5"], "enumNames": ["Cats", "Dogs", "Birds", "Fish", "Reptiles"], "default": "pet-1"}
  },
  "required": ["name"]
}`

// sameJSON reports whether v marshals to the same JSON value as want.
func sameJSON(t *testing.T, v any, want string) bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(got, exp)
}

// checkElicitedAnswer checks the everything server's result for an accepted elicitation.
func checkElicitedAnswer(t *testing.T, who string, rec *recorder, r callResult) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s's trigger-elicitation-request: %v", who, r.err)
	}
	got := text(r.res)
	for _, want := range []string{"✅ User provided the requested information!", "User inputs:\n- Name: " + rec.elicitName() + "\n- Agreed to terms: true\n", "- Favorite Integer: 7\n"} {
		if r.res.IsError || !strings.Contains(got, want) {
			t.Errorf("%s's trigger-elicitation-request = %q (isError %v), want it to contain %q", who, got, r.res.IsError, want)
		}
	}
}

// 4. An elicitation from the shared everything server reaches only the
// client whose call asked for it, with the server's message and schema
// unchanged; when two clients have calls in flight it is refused.
func TestPassthroughElicitation(t *testing.T) {
	g := launchPassthrough(t)
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		waitForTools(ctx, t, g, "trigger-elicitation-request")
		cancel()
	}
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, recA := recordingClient(ctx, t, g, era, "A")
			b, recB := recordingClient(ctx, t, g, era, "B")

			t.Run("only the caller is asked", func(t *testing.T) {
				res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
				checkElicitedAnswer(t, "A", recA, callResult{res, err})
				got := recA.snapshotElicits()
				if len(got) != 1 {
					t.Fatalf("A's elicitation handler was called %d times, want once", len(got))
				}
				if got[0].Message != "Please provide inputs for the following fields:" {
					t.Errorf("A was asked %q", got[0].Message)
				}
				if !sameJSON(t, got[0].RequestedSchema, wantElicitSchema) {
					b, _ := json.Marshal(got[0].RequestedSchema)
					t.Errorf("A's requestedSchema differs from the server's:\n%s", b)
				}
				if n := len(recB.snapshotElicits()); n != 0 {
					t.Errorf("B's elicitation handler was called %d times, want never", n)
				}
				if reqs := recB.snapshotRequests(); len(reqs) != 0 {
					t.Errorf("B received requests %v, want none", reqs)
				}
			})

			t.Run("refused while two clients have calls in flight", func(t *testing.T) {
				// B's operation outlasts the check by far; it is cancelled after.
				token := "b-busy-" + era
				ctxB, cancelB := context.WithCancel(ctx)
				defer cancelB()
				callB := callAsync(ctxB, b, longRun(20, 20, token))
				waitFor(ctx, t, "B's first progress notification", func() bool { return len(recB.progressFor(token)) > 0 })
				nA, nB := len(recA.snapshotElicits()), len(recB.snapshotElicits())
				res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
				if err != nil {
					t.Fatalf("A's call: %v", err)
				}
				if got := text(res); !res.IsError || !strings.Contains(got, "elicitation/create refused: calls of several clients are in flight on mcp server \"everything\"") {
					t.Errorf("A's call while B's runs = %q (isError %v), want the gateway's refusal", got, res.IsError)
				}
				if len(recA.snapshotElicits()) != nA || len(recB.snapshotElicits()) != nB {
					t.Errorf("an ambiguous elicitation reached a client: A %d→%d, B %d→%d", nA, len(recA.snapshotElicits()), nB, len(recB.snapshotElicits()))
				}
				cancelB()
				if r := awaitCall(ctx, t, "B's call", callB); !errors.Is(r.err, context.Canceled) {
					t.Errorf("B's cancelled call: %v %v", r.res, r.err)
				}
			})

			t.Run("refused for a client without the capability", func(t *testing.T) {
				// No handler: the SDK declares no elicitation capability.
				plain := connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil), era)
				res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
				var got string
				if err != nil {
					got = err.Error()
				} else {
					got = text(res)
					if !res.IsError {
						t.Errorf("trigger-elicitation-request for a client without elicitation = %q, want an error", got)
					}
				}
				if !strings.Contains(got, "elicitation") || !strings.Contains(got, "capability") {
					t.Errorf("trigger-elicitation-request for a client without elicitation: %q, want the refusal naming the capability", got)
				}
			})
		})
	}
}

// A url-mode elicitation reaches only a client that declared the url mode:
// the Go SDK's client declares {"form":{}} unless told otherwise, and the
// specification forbids sending a client a mode it did not declare.
func TestPassthroughURLElicitationNeedsURLMode(t *testing.T) {
	g := launchPassthrough(t)
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		waitForTools(ctx, t, g, "trigger-url-elicitation")
		cancel()
	}
	args := map[string]any{"url": "https://example.com/consent"}
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			// Control: a client that declares the url mode gets it.
			recURL := &recorder{name: "url-capable"}
			capable := connectClient(ctx, t, g, newRecordingClientWith(recURL, &mcp.ClientCapabilities{
				Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			}), era)
			res, err := capable.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-url-elicitation", Arguments: args})
			if err != nil || res.IsError || !strings.Contains(text(res), "URL: https://example.com/consent") {
				t.Errorf("trigger-url-elicitation for a url-capable client: %v %v", res, err)
			}
			if got := recURL.snapshotElicits(); len(got) != 1 || got[0].Mode != "url" || got[0].URL != "https://example.com/consent" {
				t.Errorf("the url-capable client was asked %+v, want one url-mode elicitation of https://example.com/consent", got)
			}

			formOnly, recForm := recordingClient(ctx, t, g, era, "form-only")
			res, err = formOnly.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-url-elicitation", Arguments: args})
			for _, e := range recForm.snapshotElicits() {
				t.Errorf("a client that declared only the form mode was sent a %s-mode elicitation: %+v", e.Mode, e)
			}
			if err == nil && !res.IsError {
				t.Errorf("trigger-url-elicitation for a form-only client = %q, want a refusal", text(res))
			}
		})
	}
}

// 5a. Sampling reaches only the caller; its answer is in the tool's result.
func TestPassthroughSampling(t *testing.T) {
	g := launchPassthrough(t)
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		waitForTools(ctx, t, g, "trigger-sampling-request")
		cancel()
	}
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, recA := recordingClient(ctx, t, g, era, "A-"+era)
			_, recB := recordingClient(ctx, t, g, era, "B-"+era)
			res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "say hi", "maxTokens": 17}})
			if err != nil {
				t.Fatal(err)
			}
			got := text(res)
			for _, want := range []string{"LLM sampling result: \n", `"text": "` + recA.sampleText() + `"`, `"model": "e2e-model"`, `"role": "assistant"`} {
				if res.IsError || !strings.Contains(got, want) {
					t.Errorf("trigger-sampling-request = %q (isError %v), want it to contain %q", got, res.IsError, want)
				}
			}
			samples := recA.snapshotSamples()
			if len(samples) != 1 {
				t.Fatalf("A's sampling handler was called %d times, want once", len(samples))
			}
			s := samples[0]
			if s.SystemPrompt != "You are a helpful test server." || s.MaxTokens != 17 || len(s.Messages) != 1 || s.Messages[0].Role != "user" {
				t.Errorf("A was asked to sample %+v", s)
			} else if tc, ok := s.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Resource trigger-sampling-request context: say hi" {
				t.Errorf("A's sampling message = %#v", s.Messages[0].Content)
			}
			if n := len(recB.snapshotSamples()); n != 0 {
				t.Errorf("B's sampling handler was called %d times, want never", n)
			}
			if reqs := recB.snapshotRequests(); len(reqs) != 0 {
				t.Errorf("B received requests %v, want none", reqs)
			}
		})
	}
}

// 5b. Roots: the server asks the calling client for its roots. The
// everything server remembers the first roots it gets for the life of its
// process, so each era has a gateway of its own.
func TestPassthroughRoots(t *testing.T) {
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			g := launchPassthrough(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			waitForTools(ctx, t, g, "get-roots-list")
			a, _ := recordingClient(ctx, t, g, era, "A", &mcp.Root{URI: "file:///e2e/a-project", Name: "a-project"})
			_, recB := recordingClient(ctx, t, g, era, "B", &mcp.Root{URI: "file:///e2e/b-project", Name: "b-project"})
			res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "get-roots-list"})
			if err != nil {
				t.Fatal(err)
			}
			want := "Current MCP Roots (1 total):\n\n1. a-project\n   URI: file:///e2e/a-project\n\n"
			if got := text(res); res.IsError || !strings.HasPrefix(got, want) {
				t.Errorf("get-roots-list = %q (isError %v), want it to start %q", got, res.IsError, want)
			}
			if reqs := recB.snapshotRequests(); slices.Contains(reqs, "roots/list") {
				t.Errorf("B was asked for its roots: %v", reqs)
			}
		})
	}
}

// rootsCount calls get-roots-list until the server reports n roots or ctx
// ends, and returns its last answer.
func rootsCount(ctx context.Context, t *testing.T, cs *mcp.ClientSession, n int) (string, bool) {
	t.Helper()
	var last string
	ok := eventually(ctx, func() bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-roots-list"})
		if err != nil {
			last = err.Error()
			return false
		}
		last = text(res)
		return strings.HasPrefix(last, fmt.Sprintf("Current MCP Roots (%d total)", n))
	})
	return last, ok
}

// 5c. A root the client adds after the server has its roots reaches the
// server: the client's notifications/roots/list_changed makes the server
// ask again, and the answer must come from that client. Connected directly,
// the everything server shows the new root; through the gateway it must too.
func TestPassthroughRootsChangeReachesServer(t *testing.T) {
	a1 := &mcp.Root{URI: "file:///e2e/first", Name: "first"}
	a2 := &mcp.Root{URI: "file:///e2e/second", Name: "second"}
	wantTwo := "Current MCP Roots (2 total):\n\n1. first\n   URI: file:///e2e/first\n\n2. second\n   URI: file:///e2e/second\n\n"

	t.Run("directly", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := newRecordingClient(&recorder{name: "direct"}, a1)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(filepath.Join(npmBin, "mcp-server-everything"))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if got, ok := rootsCount(ctx, t, cs, 1); !ok {
			t.Fatalf("get-roots-list = %q, want 1 root", got)
		}
		c.AddRoots(a2)
		bounded, cancelBound := context.WithTimeout(ctx, 10*time.Second)
		defer cancelBound()
		if got, ok := rootsCount(bounded, t, cs, 2); !ok || !strings.HasPrefix(got, wantTwo) {
			t.Fatalf("directly, after adding a root, get-roots-list = %q, want it to start %q", got, wantTwo)
		}
	})

	t.Run("through the gateway", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		g := launchPassthrough(t)
		waitForTools(ctx, t, g, "get-roots-list")
		rec := &recorder{name: "A"}
		c := newRecordingClient(rec, a1)
		cs := connectClient(ctx, t, g, c, sessionEra)
		if got, ok := rootsCount(ctx, t, cs, 1); !ok {
			t.Fatalf("get-roots-list = %q, want 1 root", got)
		}
		// No call is in flight when the change reaches the server, as is
		// usual. Its question then either reaches A (asked again) or is
		// refused by the gateway (its stderr says so in the log).
		asked := func() int { return strings.Count(strings.Join(rec.snapshotRequests(), " "), "roots/list") }
		refused := func() int { return strings.Count(g.log(), "roots/list refused") }
		askedBefore, refusedBefore := asked(), refused()
		c.AddRoots(a2)
		waitFor(ctx, t, "the server to ask for the roots again", func() bool { return asked() > askedBefore || refused() > refusedBefore })
		if refused() > refusedBefore {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-roots-list"})
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, l := range strings.Split(g.log(), "\n") {
				if strings.Contains(l, "roots/list refused") {
					lines = append(lines, l)
				}
			}
			if got := text(res); !strings.HasPrefix(got, wantTwo) {
				t.Fatalf("through the gateway, after adding a root, get-roots-list = %q, want it to start %q: the gateway refused the server's roots/list that followed the client's notifications/roots/list_changed:\n%s",
					got, wantTwo, strings.Join(lines, "\n"))
			}
		}
		bounded, cancelBound := context.WithTimeout(ctx, 10*time.Second)
		defer cancelBound()
		if got, ok := rootsCount(bounded, t, cs, 2); !ok || !strings.HasPrefix(got, wantTwo) {
			t.Errorf("through the gateway, after adding a root, get-roots-list = %q, want it to start %q", got, wantTwo)
		}
	})

	// The server's question that follows A's change is A's: it must not be
	// put to B because B happens to have a call in flight.
	t.Run("another client's change is not put to a busy client", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		g := launchPassthrough(t)
		waitForTools(ctx, t, g, "get-roots-list")
		recA := &recorder{name: "A"}
		ca := newRecordingClient(recA, a1)
		connectClient(ctx, t, g, ca, sessionEra)
		b, recB := recordingClient(ctx, t, g, sessionEra, "B", &mcp.Root{URI: "file:///e2e/b-project", Name: "b-project"})
		token := "b-busy"
		call := callAsync(ctx, b, longRun(2, 4, token))
		waitFor(ctx, t, "B's first progress notification", func() bool { return len(recB.progressFor(token)) > 0 })
		ca.AddRoots(a2)
		r := awaitCall(ctx, t, "B's call", call)
		if r.err != nil || text(r.res) != longRunText(2, 4) {
			t.Fatalf("B's call: %v %v", r.res, r.err)
		}
		// A request for B would have come on B's call stream, before its
		// progress: once all 4 steps are handled, so is any such request.
		waitFor(ctx, t, "B's 4 progress notifications", func() bool { return len(recB.progressFor(token)) == 4 })
		if reqs := recB.snapshotRequests(); slices.Contains(reqs, "roots/list") {
			t.Errorf("B was asked for its roots after A changed its own (B received %v); B's roots now stand for A's", reqs)
		}
	})
}

// 6. Resource updates reach the subscribers of their URI, in both eras, and
// no one else; after unsubscribing, they stop.
func TestPassthroughResourceUpdates(t *testing.T) {
	g := launchPassthrough(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	uriA1 := "demo://resource/static/document/architecture.md"
	uriA2 := "demo://resource/static/document/features.md"

	a1, recA1 := recordingClient(ctx, t, g, sessionEra, "A1")
	a2, recA2 := recordingClient(ctx, t, g, modernEra, "A2")
	b1, recB1 := recordingClient(ctx, t, g, sessionEra, "B1")
	_, recB2 := recordingClient(ctx, t, g, modernEra, "B2")
	if err := a1.Subscribe(ctx, &mcp.SubscribeParams{URI: uriA1}); err != nil {
		t.Fatalf("A1 subscribing: %v", err)
	}
	// The 2026-07-28 client subscribes with a subscriptions/listen stream,
	// acknowledged by a notification.
	if err := a2.Subscribe(ctx, &mcp.SubscribeParams{URI: uriA2}); err != nil {
		t.Fatalf("A2 subscribing: %v", err)
	}
	waitFor(ctx, t, "A2's subscription to be acknowledged", func() bool { return recA2.sawNote("notifications/subscriptions/acknowledged") })

	res, err := b1.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); !strings.HasPrefix(got, "Started simulated resource updated notifications for session") {
		t.Fatalf("toggle-subscriber-updates = %q", got)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b1.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates"}) //nolint:errcheck // best effort
	})
	// The server sends one update per subscribed URI at once, then every 5 s:
	// two rounds leave any misrouted update time to show.
	if !eventually(ctx, func() bool { return len(recA1.snapshotUpdated()) >= 2 && len(recA2.snapshotUpdated()) >= 2 }) {
		t.Errorf("gave up waiting for two updates each: A1 got %v, A2 got %v", recA1.snapshotUpdated(), recA2.snapshotUpdated())
	}
	check := func(name string, rec *recorder, uris ...string) {
		t.Helper()
		for _, u := range rec.snapshotUpdated() {
			if !slices.Contains(uris, u) {
				t.Errorf("%s received an update for %q; it subscribed to %q", name, u, uris)
			}
		}
	}
	check("A1", recA1, uriA1)
	check("A2", recA2, uriA2)
	check("B1", recB1)
	check("B2", recB2)

	// B1 subscribes to A1's URI; A1 and A2 unsubscribe. Only B1 gets
	// updates from then on (an update already on its way may still arrive).
	if err := b1.Subscribe(ctx, &mcp.SubscribeParams{URI: uriA1}); err != nil {
		t.Fatalf("B1 subscribing: %v", err)
	}
	if err := a1.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uriA1}); err != nil {
		t.Fatalf("A1 unsubscribing: %v", err)
	}
	if err := a2.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uriA2}); err != nil {
		t.Fatalf("A2 unsubscribing: %v", err)
	}
	n1, n2 := len(recA1.snapshotUpdated()), len(recA2.snapshotUpdated())
	if !eventually(ctx, func() bool { return len(recB1.snapshotUpdated()) >= 2 }) {
		t.Errorf("gave up waiting for two updates for B1, the remaining subscriber of %s: it got %v", uriA1, recB1.snapshotUpdated())
	}
	check("B1", recB1, uriA1)
	if got := len(recA1.snapshotUpdated()); got > n1+1 {
		t.Errorf("A1 received %d updates after unsubscribing", got-n1)
	}
	if got := len(recA2.snapshotUpdated()); got > n2+1 {
		t.Errorf("A2 received %d updates after unsubscribing", got-n2)
	}
}

var mcpLogLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// checkLevels fails for every message rec received below min.
func checkLevels(t *testing.T, name string, rec *recorder, min mcp.LoggingLevel) {
	t.Helper()
	for _, l := range rec.snapshotLogs() {
		if slices.Index(mcpLogLevels, l.Level) < slices.Index(mcpLogLevels, min) {
			t.Errorf("%s (level %s) received a %s message: %v", name, min, l.Level, l.Data)
		}
	}
}

// isRootsLog matches the everything server's message when it got the roots
// of the client of a call.
func isRootsLog(l mcp.LoggingMessageParams) bool {
	return l.Level == "info" && l.Logger == "everything-server" && l.Data == "Roots updated: 1 root(s) received from client"
}

// withLogLevel sets a 2026-07-28 request's log level in its _meta.
func withLogLevel(p *mcp.CallToolParams, level mcp.LoggingLevel) *mcp.CallToolParams {
	if p.Meta == nil {
		p.Meta = mcp.Meta{}
	}
	p.Meta["io.modelcontextprotocol/logLevel"] = string(level)
	return p
}

// 7. Log messages reach a client at and above the level it set, never
// below: during its own call, and when the server logs for everyone.
func TestPassthroughLogging(t *testing.T) {
	t.Run(sessionEra, func(t *testing.T) {
		g := launchPassthrough(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		waitForTools(ctx, t, g, "get-roots-list")
		a, recA := recordingClient(ctx, t, g, sessionEra, "A", &mcp.Root{URI: "file:///e2e/a-project", Name: "a-project"})
		b, recB := recordingClient(ctx, t, g, sessionEra, "B")
		c, recC := recordingClient(ctx, t, g, sessionEra, "C")
		for cs, level := range map[*mcp.ClientSession]mcp.LoggingLevel{a: "info", b: "warning", c: "debug"} {
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "no-such-level"}); err == nil {
			t.Error("logging/setLevel accepted an unknown level")
		}

		// get-roots-list fetches the caller's roots, and the server logs it
		// (info) during the call: A gets it, C (debug) does not: not its call.
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "get-roots-list"})
		if err != nil || !strings.Contains(text(res), "1. a-project") {
			t.Fatalf("get-roots-list: %v %v", res, err)
		}
		waitFor(ctx, t, "A to receive the server's log message of its call", func() bool { return slices.ContainsFunc(recA.snapshotLogs(), isRootsLog) })

		// Subscribing makes the server log (info): B's are dropped.
		uriB := "demo://resource/static/document/startup.md"
		uriA := "demo://resource/static/document/structure.md"
		for cs, uri := range map[*mcp.ClientSession]string{b: uriB, c: uriB, a: uriA} {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(ctx, t, "A to receive the server's log message of its subscription", func() bool {
			return slices.ContainsFunc(recA.snapshotLogs(), func(l mcp.LoggingMessageParams) bool {
				return l.Level == "info" && l.Data == "Received Subscribe Resource request for URI: "+uriA+" "
			})
		})
		// Random-level messages for everyone, every 5 s.
		if res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-simulated-logging"}); err != nil || !strings.HasPrefix(text(res), "Started simulated, random-leveled logging") {
			t.Fatalf("toggle-simulated-logging: %v %v", res, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-simulated-logging"})  //nolint:errcheck // best effort
			a.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates"}) //nolint:errcheck // best effort
		})
		if res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates"}); err != nil || !strings.HasPrefix(text(res), "Started simulated resource updated") {
			t.Fatalf("toggle-subscriber-updates: %v %v", res, err)
		}
		// B's and C's updates travel on the stream of their log messages,
		// after them: once each has its second update, every message meant
		// for it earlier has been handled.
		waitFor(ctx, t, "B's and C's resource updates", func() bool {
			return len(recB.snapshotUpdated()) >= 2 && len(recC.snapshotUpdated()) >= 2
		})
		checkLevels(t, "A", recA, "info")
		checkLevels(t, "B", recB, "warning")
		if slices.ContainsFunc(recC.snapshotLogs(), isRootsLog) {
			t.Error("C received the log message of A's call")
		}
	})

	// A 2026-07-28 client sets its level in each request's _meta. The
	// server logs once it has the client's roots, which it asks for
	// through an input request: the message comes after the input round,
	// during the client's retry, and must reach the client on it.
	t.Run(modernEra+" at info, after an input round", func(t *testing.T) {
		g := launchPassthrough(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		waitForTools(ctx, t, g, "get-roots-list")
		m, rec := recordingClient(ctx, t, g, modernEra, "M", &mcp.Root{URI: "file:///e2e/m-project", Name: "m-project"})
		res, err := m.CallTool(ctx, withLogLevel(&mcp.CallToolParams{Name: "get-roots-list"}, "info"))
		if err != nil || !strings.Contains(text(res), "1. m-project") {
			t.Fatalf("get-roots-list: %v %v", res, err)
		}
		// Messages of one client are handled in order: once the next call's
		// progress is in, the first call's log message would be too.
		res, err = m.CallTool(ctx, longRun(1, 2, "after"))
		if err != nil || text(res) != longRunText(1, 2) {
			t.Fatalf("the next call: %v %v", res, err)
		}
		waitFor(ctx, t, "the next call's progress", func() bool { return len(rec.progressFor("after")) == 2 })
		if !slices.ContainsFunc(rec.snapshotLogs(), isRootsLog) {
			t.Errorf("the client at info did not receive the server's info message of its call (\"Roots updated: 1 root(s) received from client\", sent after the roots input round); it received %+v", rec.snapshotLogs())
		}
	})
	t.Run(modernEra+" at warning", func(t *testing.T) {
		g := launchPassthrough(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		waitForTools(ctx, t, g, "get-roots-list")
		// A client at debug makes the server send everything; the gateway
		// filters for each client.
		d := g.connectEra(ctx, sessionEra)
		if err := d.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		m, rec := recordingClient(ctx, t, g, modernEra, "M", &mcp.Root{URI: "file:///e2e/m-project", Name: "m-project"})
		res, err := m.CallTool(ctx, withLogLevel(&mcp.CallToolParams{Name: "get-roots-list"}, "warning"))
		if err != nil || !strings.Contains(text(res), "1. m-project") {
			t.Fatalf("get-roots-list: %v %v", res, err)
		}
		// Messages of one client are handled in order: once the next call's
		// progress is in, an info message of the first call would be too.
		res, err = m.CallTool(ctx, withLogLevel(longRun(1, 2, "after"), "warning"))
		if err != nil || text(res) != longRunText(1, 2) {
			t.Fatalf("the next call: %v %v", res, err)
		}
		waitFor(ctx, t, "the next call's progress", func() bool { return len(rec.progressFor("after")) == 2 })
		checkLevels(t, "M", rec, "warning")
	})
}

// What the server logs while it handles one client's request is that
// client's: B's subscription (its URI) is none of A's business.
func TestPassthroughLogOfOneClientsRequestStaysWithIt(t *testing.T) {
	g := launchPassthrough(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, recA := recordingClient(ctx, t, g, sessionEra, "A")
	b, recB := recordingClient(ctx, t, g, sessionEra, "B")
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	uriA := "demo://resource/static/document/structure.md"
	uriB := "demo://resource/static/document/startup.md"
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: uriA}); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: uriB}); err != nil {
		t.Fatal(err)
	}
	if err := b.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uriB}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "B to receive the server's log message of its subscription", func() bool {
		return slices.ContainsFunc(recB.snapshotLogs(), func(l mcp.LoggingMessageParams) bool {
			return l.Data == "Received Subscribe Resource request for URI: "+uriB+" "
		})
	})
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates"})
	if err != nil || !strings.HasPrefix(text(res), "Started simulated resource updated") {
		t.Fatalf("toggle-subscriber-updates: %v %v", res, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.CallTool(ctx, &mcp.CallToolParams{Name: "toggle-subscriber-updates"}) //nolint:errcheck // best effort
	})
	// A's update comes on the stream of any message of B's sent to A, after it.
	waitFor(ctx, t, "A's resource update", func() bool { return len(recA.snapshotUpdated()) >= 1 })
	for _, l := range recA.snapshotLogs() {
		if s, _ := l.Data.(string); strings.Contains(s, uriB) {
			t.Errorf("A received the log message of B's request: %q", s)
		}
	}
}

// postModern sends one raw 2026-07-28 request and returns its JSON-RPC
// answer (the last event when the answer is an SSE stream).
func postModern(ctx context.Context, t *testing.T, g *gw, method, name string, id int, params map[string]any) map[string]any {
	t.Helper()
	status, out := postModernAs(ctx, t, g, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, method, name, id, params)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %v", method, status, out)
	}
	return out
}

// postModernAs sends a 2026-07-28 request from a client declaring caps and
// returns the HTTP status and the answer.
func postModernAs(ctx context.Context, t *testing.T, g *gw, caps map[string]any, method, name string, id int, params map[string]any) (int, map[string]any) {
	t.Helper()
	return postModernFromAs(ctx, t, g, "raw", caps, method, name, id, params)
}

// postModernFromAs is postModernAs from a client named client.
func postModernFromAs(ctx context.Context, t *testing.T, g *gw, client string, caps map[string]any, method, name string, id int, params map[string]any) (int, map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modernEra,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": client, "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", g.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"Authorization": "Bearer " + g.token, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": modernEra, "Mcp-Method": method, "Mcp-Name": name,
	} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				msg = []byte(strings.TrimSpace(d))
			}
		}
	}
	var out map[string]any
	if err := json.Unmarshal(msg, &out); err != nil {
		t.Fatalf("%s: status %d, answer %q: %v", method, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

// 8. A 2026-07-28 client calls a tool of the legacy everything server that
// asks for elicitation: the gateway answers input_required, the client
// retries with its answer, and the final result arrives.
func TestPassthroughModernInputRequired(t *testing.T) {
	g := launchPassthrough(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitForTools(ctx, t, g, "trigger-elicitation-request")

	t.Run("the SDK client retries with its handler's answer", func(t *testing.T) {
		cs, rec := recordingClient(ctx, t, g, modernEra, "modern")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
		checkElicitedAnswer(t, "the modern client", rec, callResult{res, err})
		if got := rec.snapshotElicits(); len(got) != 1 || got[0].Message != "Please provide inputs for the following fields:" || !sameJSON(t, got[0].RequestedSchema, wantElicitSchema) {
			t.Errorf("the elicitation handler got %+v, want one call with the server's message and schema", got)
		}
	})

	t.Run("on the wire", func(t *testing.T) {
		first := postModern(ctx, t, g, "tools/call", "trigger-elicitation-request", 1, map[string]any{"name": "trigger-elicitation-request", "arguments": map[string]any{}})
		result, _ := first["result"].(map[string]any)
		if result == nil || result["resultType"] != "input_required" {
			t.Fatalf("first answer = %v, want an input_required result", first)
		}
		state, _ := result["requestState"].(string)
		inputs, _ := result["inputRequests"].(map[string]any)
		if state == "" || len(inputs) != 1 {
			t.Fatalf("input_required result %v: want a requestState and one input request", result)
		}
		var key string
		var input map[string]any
		for k, v := range inputs {
			key, input = k, v.(map[string]any)
		}
		params, _ := input["params"].(map[string]any)
		if input["method"] != "elicitation/create" || params["message"] != "Please provide inputs for the following fields:" || !sameJSON(t, params["requestedSchema"], wantElicitSchema) {
			t.Errorf("input request %q = %v, want the server's elicitation/create unchanged", key, input)
		}

		retry := map[string]any{
			"name": "trigger-elicitation-request", "arguments": map[string]any{}, "requestState": state,
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Raw Client"}}},
		}
		second := postModern(ctx, t, g, "tools/call", "trigger-elicitation-request", 2, retry)
		result, _ = second["result"].(map[string]any)
		if result == nil || result["resultType"] != "complete" {
			t.Fatalf("answer to the retry = %v, want a complete result", second)
		}
		b, _ := json.Marshal(result["content"])
		if !strings.Contains(string(b), `- Name: Raw Client`) || result["isError"] == true {
			t.Errorf("final result %s, want the server's echo of the answer", b)
		}

		// A requestState is good for one retry only.
		third := postModern(ctx, t, g, "tools/call", "trigger-elicitation-request", 3, retry)
		e, _ := third["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.Contains(msg, "requestState already used or expired") {
			t.Errorf("reusing the requestState = %v, want an error saying it was used", third)
		}
	})

	// A client that declared no capability a server may use runs its call
	// on the request's goroutine (no input can be asked of it): the
	// server's request still ends the call at once with -32021, and the
	// server stays usable.
	t.Run("a client that declared nothing", func(t *testing.T) {
		for id := range 3 {
			status, answer := postModernAs(ctx, t, g, map[string]any{}, "tools/call", "trigger-elicitation-request", 10+id,
				map[string]any{"name": "trigger-elicitation-request", "arguments": map[string]any{}})
			e, _ := answer["error"].(map[string]any)
			data, _ := e["data"].(map[string]any)
			required, _ := data["requiredCapabilities"].(map[string]any)
			if code, _ := e["code"].(float64); code != -32021 || required["elicitation"] == nil || status != http.StatusBadRequest {
				t.Errorf("call %d: status %d, answer %v; want 400 with error -32021 requiring elicitation", id, status, answer)
			}
		}
		status, answer := postModernAs(ctx, t, g, map[string]any{}, "tools/call", "echo", 20,
			map[string]any{"name": "echo", "arguments": map[string]any{"message": "after"}})
		if b, _ := json.Marshal(answer["result"]); status != http.StatusOK || !strings.Contains(string(b), "after") {
			t.Errorf("echo after the refused calls: status %d, answer %v", status, answer)
		}
	})
}

// A 2026-07-28 client that gives up on an input request (its elicitation
// handler fails, so the SDK never retries) must not leave the shared server
// unusable for the other clients: their own elicitation and sampling must
// still reach them.
func TestPassthroughAbandonedInputRequestFreesServer(t *testing.T) {
	g := launchPassthrough(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitForTools(ctx, t, g, "trigger-elicitation-request", "trigger-sampling-request")

	quitter := mcp.NewClient(&mcp.Implementation{Name: "e2e-quitter", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("the user closed the dialog")
		},
	})
	q := connectClient(ctx, t, g, quitter, modernEra)
	if _, err := q.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"}); err == nil || !strings.Contains(err.Error(), "the user closed the dialog") {
		t.Fatalf("the quitter's call: %v, want its handler's error", err)
	}

	s, rec := recordingClient(ctx, t, g, sessionEra, "S")
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "still there?"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); res.IsError || !strings.Contains(got, `"text": "`+rec.sampleText()+`"`) {
		t.Errorf("another client's sampling after the abandoned input request = %q (isError %v), want its own answer", got, res.IsError)
	}
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
	checkElicitedAnswer(t, "another client after the abandoned input request", rec, callResult{res, err})
}

// A session-era client calling a server of the 2026-07-28 era only, whose
// tool asks for input: the gateway asks the client the old way (an
// elicitation request) and retries the call with the answer.
func TestPassthroughLegacyClientModernServer(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"modern": {"runCmd": %q}}`, "E2E_SERVER_MODERN_ONLY=1 "+testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_name"})
	if err != nil || text(res) != "Hello, Ada!" {
		t.Fatalf("ask_name: %v %v\nlog:\n%s", res, err, g.log())
	}
	if len(asked) != 1 || asked[0] != "What is your name?" {
		t.Errorf("the client was asked %v", asked)
	}
}
