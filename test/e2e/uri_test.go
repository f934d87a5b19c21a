package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A forbid of a listed resource or of a template holds for every URI the
// server could resolve to it, not only for the URI the gateway's own
// RFC 6570 matcher picks: with a query, a fragment, a trailing slash, dot
// segments, an encoded unreserved character, a character outside RFC
// 6570's unreserved set in a variable, another case of the scheme. Each
// variant below is one the server behind serves (the fastmcp stand-in:
// FastMCP's template matching behind a URL parser; server-everything: the
// TypeScript SDK behind WHATWG URL parsing), and each is refused by the
// policy for resources/read, resources/subscribe (session era),
// subscriptions/listen (2026-07-28) and completion/complete.
func TestResourceURIVariantsDecidedByPolicy(t *testing.T) {
	standIn, err := filepath.Abs("testdata/fastmcp_standin.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, config, policy string
		denied               map[string]string // URI → the policy that must refuse it
		completions          map[string]string // a completion's ref/resource URI → the policy
		argument, value      string            // the completed argument, and its value so far
		allowed, content     string            // a URI still read, and what it says
	}{{
		name:   "fastmcp",
		config: fmt.Sprintf(`{"fastmcp": {"runCmd": %q}}`, "python3 "+standIn),
		policy: `@id("no-secret")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"notes://secret");
@id("no-profiles")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"users://{id}/profile");
`,
		denied: map[string]string{
			"notes://secret":         "no-secret", // as listed: denied before too
			"notes://secret?x=1":     "no-secret",
			"notes://secret#x":       "no-secret",
			"notes://secret/":        "no-secret",
			"notes://secret/a/..":    "no-secret",
			"notes://secr%65t":       "no-secret",
			"NOTES://secret":         "no-secret",
			"users://7/profile":      "no-profiles", // strict RFC 6570 match: denied before too
			"users://7/profile/":     "no-profiles",
			"users://7/profile?x=1":  "no-profiles",
			"users://1#/profile":     "no-profiles",
			"users://a@b/profile":    "no-profiles",
			"users://7/x/../profile": "no-profiles",
			"users://7/%2E/profile":  "no-profiles",
			"USERS://7/profile":      "no-profiles",
		},
		completions: map[string]string{
			"users://{id}/profile":   "no-profiles", // the template itself: denied before too
			"users://{id}/profile/":  "no-profiles",
			"users://{id}/profile?x": "no-profiles",
			"notes://secret?x":       "no-secret",
		},
		argument: "id", value: "a",
		allowed: "notes://public", content: "the public note",
	}, {
		name:   "everything",
		config: fmt.Sprintf(`{"everything": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything")),
		policy: `@id("no-startup")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"demo://resource/static/document/startup.md");
@id("no-dynamic-text")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"demo://resource/dynamic/text/{resourceId}");
`,
		denied: map[string]string{
			"demo://resource/static/document/startup.md":      "no-startup",
			"demo://resource/static/document/./startup.md":    "no-startup",
			"demo://resource/static/document/x/../startup.md": "no-startup",
			"demo://resource/static/document/%2E/startup.md":  "no-startup",
			"DEMO://resource/static/document/startup.md":      "no-startup",
			"demo://resource/dynamic/text/12":                 "no-dynamic-text",
			"demo://resource/dynamic/text/./12":               "no-dynamic-text",
			"demo://resource/dynamic/text/x/../12":            "no-dynamic-text",
			"demo://resource/dynamic/text/+12":                "no-dynamic-text",
			"Demo://resource/dynamic/text/12":                 "no-dynamic-text",
			"demo://resource/dynamic/text/12?x=1":             "no-dynamic-text",
			"demo://resource/static/document/startup.md?x=1":  "no-startup",
			"demo://resource/static/document/startup.md/":     "no-startup",
			"demo://resource/static/document/startup%2Emd":    "no-startup",
			"demo://resource/static/document/startup.md#x":    "no-startup",
			"demo://resource/dynamic/text/%31%32":             "no-dynamic-text",
			"demo://resource/dynamic/text/12/":                "no-dynamic-text",
			"demo://resource/dynamic/text/12#x":               "no-dynamic-text",
		},
		completions: map[string]string{
			"demo://resource/dynamic/text/{resourceId}":  "no-dynamic-text",
			"demo://resource/dynamic/text/{resourceId}/": "no-dynamic-text", // not served by this server either
		},
		argument: "resourceId", value: "1",
		allowed: "demo://resource/static/document/structure.md", content: "",
	}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			g := startServe(t, c.config, "--policy-file", writePolicy(t, c.policy))
			uris := slices.Sorted(maps.Keys(c.denied))
			for _, era := range bothEras {
				t.Run(era, func(t *testing.T) {
					cs := connectClient(ctx, t, g.gw, mcp.NewClient(&mcp.Implementation{Name: "e2e-uri", Version: "1"}, nil), era)
					for _, uri := range uris {
						want := fmt.Sprintf(`resources/read of %s is denied: forbidden by policy %q`, uri, c.denied[uri])
						res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
						if err == nil || !strings.Contains(err.Error(), want) {
							t.Errorf("reading %s: %v %s, want %q", uri, err, contents(res), want)
						}
						if era != sessionEra {
							continue
						}
						want = fmt.Sprintf(`resources/subscribe of %s is denied: forbidden by policy %q`, uri, c.denied[uri])
						if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil || !strings.Contains(err.Error(), want) {
							t.Errorf("subscribing to %s: %v, want %q", uri, err, want)
						}
					}
					for ref, policy := range c.completions {
						want := fmt.Sprintf(`completion/complete of %s is denied: forbidden by policy %q`, ref, policy)
						res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: ref},
							Argument: mcp.CompleteParamsArgument{Name: c.argument, Value: c.value}})
						if err == nil || !strings.Contains(err.Error(), want) {
							t.Errorf("completing %s: %v %v, want %q", ref, err, res, want)
						}
					}
					// What the policies allow is still read, and read whole.
					res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.allowed})
					if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != c.allowed ||
						(c.content != "" && res.Contents[0].Text != c.content) || res.Contents[0].Text == "" {
						t.Errorf("reading %s: %v %s, want %q", c.allowed, err, contents(res), c.content)
					}
				})
			}
			// A 2026-07-28 client's subscriptions/listen agrees to the
			// subscriptions the policies allow, and to no variant of a forbidden one.
			agreed := listenAgreed(ctx, t, g.gw, append([]string{c.allowed}, uris...))
			if !slices.Equal(agreed, []string{c.allowed}) {
				t.Errorf("subscriptions/listen agreed to %q, want only %q", agreed, c.allowed)
			}
		})
	}
}

func contents(res *mcp.ReadResourceResult) string {
	if res == nil {
		return ""
	}
	b, _ := json.Marshal(res.Contents)
	return string(b)
}

// listenAgreed opens a 2026-07-28 subscriptions/listen stream asking for
// the URIs' updates, and returns the subscriptions its acknowledgement
// agrees to.
func listenAgreed(ctx context.Context, t *testing.T, g *gw, uris []string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": uris},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    modernEra,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
	req, err := http.NewRequestWithContext(ctx, "POST", g.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + g.token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": modernEra, "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Notifications struct {
					ResourceSubscriptions []string `json:"resourceSubscriptions"`
				} `json:"notifications"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(d)), &m); err == nil && m.Method == "notifications/subscriptions/acknowledged" {
			return m.Params.Notifications.ResourceSubscriptions
		}
	}
	t.Fatalf("subscriptions/listen: status %d, no acknowledgement (%v)", resp.StatusCode, sc.Err())
	return nil
}

// A template's @requireApproval holds for every URI the server could
// resolve to it, as its forbid does: a variant the gateway's own matcher
// would not take for the template is read only once a person approves.
func TestResourceURIVariantsAskTheTemplatesApproval(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	standIn, err := filepath.Abs("testdata/fastmcp_standin.py")
	if err != nil {
		t.Fatal(err)
	}
	g := startServe(t, fmt.Sprintf(`{"fastmcp": {"runCmd": %q}}`, "python3 "+standIn), "--policy-file", writePolicy(t, `@id("ask-profiles")
@requireApproval("profiles are personal")
permit(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"users://{id}/profile");
`))
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			var asked []string
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e-uri-approval", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			})
			cs := connectClient(ctx, t, g.gw, c, era)
			for _, uri := range []string{"users://7/profile", "users://7/profile?x=1", "users://7/profile/", "users://a@b/profile", "USERS://7/profile"} {
				asked = nil
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err == nil || !strings.Contains(err.Error(), "approval was denied") {
					t.Errorf("reading %s, approval declined: %v %s; want it refused as declined", uri, err, contents(res))
				}
				if len(asked) != 1 || !strings.Contains(asked[0], "profiles are personal") {
					t.Errorf("reading %s: the person was asked %q; want one question giving the policy's reason", uri, asked)
				}
			}
			asked = nil
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://public"})
			if err != nil || !strings.Contains(contents(res), "the public note") || len(asked) != 0 {
				t.Errorf("reading notes://public: %v %s, asked %q; want it read without a question", err, contents(res), asked)
			}
		})
	}
}
