package e2e

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps through the gateway, the rest (docs/apps.md): subscriptions,
// completions, ui:// templates, a call resumed after the client's input,
// and an app's call forwarded without the gateway's _meta member. The
// ext-apps examples offer none of these, so the servers are Go SDK stdio
// servers of our own (apps2ServerEnv), two with the same ui:// URI and
// template: "alpha" sorts first and keeps them, "beta" gets
// ui://beta.get-time/mcp-app.html and ui://beta.widgets/{id}.

// apps2ServerEnv makes the test server an MCP Apps server named by its value.
const apps2ServerEnv = "MCP_GATEWAY_E2E_APPS2"

const (
	apps2Template        = "ui://widgets/{id}"
	apps2RenamedURI      = "ui://beta.get-time/mcp-app.html"
	apps2RenamedTemplate = "ui://beta.widgets/{id}"
)

// runApps2Server is a session-era-only MCP Apps server (so a 2026-07-28
// client's input is bridged by the gateway, input.go): get-time with its
// ui:// page, a ui:// template with completions, subscriptions, "ask"
// (asks the client's name, then answers as get-time does), "touch" (sends
// resources/updated of its uri) and "only-<label>".
func runApps2Server() {
	label := os.Getenv(apps2ServerEnv)
	uiMeta := mcp.Meta{"ui": map[string]any{"resourceUri": appsOriginalURI, "csp": map[string]any{"connectDomains": []any{"https://" + label + ".example"}}}}
	s := mcp.NewServer(&mcp.Implementation{Name: "apps2-" + label, Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{"2025-11-25"},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Params.URI != appsOriginalURI && !strings.HasPrefix(req.Params.URI, "ui://widgets/") {
				return fmt.Errorf("%s: no resource %q", label, req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{label + " " + req.Params.Ref.URI}}}, nil
		},
	})
	answer := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{
			Content: []mcp.Content{
				&mcp.TextContent{Text: "from " + label},
				&mcp.ResourceLink{URI: appsOriginalURI, Name: "app"},
				&mcp.ResourceLink{URI: "ui://widgets/7", Name: "widget"},
			},
			Meta: mcp.Meta{"ui": map[string]any{"resourceUri": appsOriginalURI}},
		}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "get-time", Meta: uiMeta}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return answer(), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Meta: uiMeta}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		res := answer()
		res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("hello %v", r.Content["name"])})
		return res, nil, nil
	})
	type touchArgs struct {
		URI string `json:"uri"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "touch"}, func(ctx context.Context, _ *mcp.CallToolRequest, a touchArgs) (*mcp.CallToolResult, any, error) {
		if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: a.URI}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched " + a.URI}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "only-" + label}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return answer(), nil, nil
	})
	s.AddResource(&mcp.Resource{URI: appsOriginalURI, Name: "app", MIMEType: "text/html;profile=mcp-app"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: "page of " + label}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: apps2Template, Name: "widget", MIMEType: "text/html;profile=mcp-app"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: "widget of " + label}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}

func startApps2Gateway(t *testing.T, extra ...string) *serveGW {
	t.Helper()
	return startServe(t, fmt.Sprintf(`{"alpha": {"runCmd": %q}, "beta": {"runCmd": %q}}`,
		apps2ServerEnv+"=alpha "+testServerCmd(), apps2ServerEnv+"=beta "+testServerCmd()), extra...)
}

// connectApps2 connects a client of an era ("" for 2026-07-28) that
// reports resource updates on the channel and answers elicitations.
func connectApps2(ctx context.Context, t *testing.T, g *serveGW, era string, updated chan<- string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-apps2", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connecting: %v\nlog:\n%s", err, g.serveLog())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// linkURIs are the resource_link URIs and _meta.ui.resourceUri of a result.
func linkURIs(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			out = append(out, l.URI)
		}
	}
	ui, _ := res.Meta["ui"].(map[string]any)
	return append(out, fmt.Sprint(ui["resourceUri"]))
}

// TestApps2RenamedURIs, both eras: subscribing to beta's renamed ui:// URI
// and to a URI of its renamed template reaches beta under its own URIs,
// and beta's updates come back renamed (a 2026-07-28 client's on its
// subscriptions/listen stream); ui:// templates are namespaced and reads
// of the renamed one reach beta; completions of the renamed template and
// URI are answered by beta, asked with its own; a call that waited for the
// client's input (bridged by the gateway for the 2026-07-28 client) comes
// back with its ui:// references renamed.
func TestApps2RenamedURIs(t *testing.T) {
	g := startApps2Gateway(t)
	for _, era := range []string{"2025-11-25", ""} {
		t.Run("era="+era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			updated := make(chan string, 8)
			cs := connectApps2(ctx, t, g, era, updated)

			t.Run("templates", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // each its own bound
				defer cancel()
				tmpls, err := cs.ListResourceTemplates(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var listed []string
				for _, rt := range tmpls.ResourceTemplates {
					listed = append(listed, rt.URITemplate)
				}
				if want := []string{apps2Template, apps2RenamedTemplate}; !slices.Equal(listed, want) {
					t.Errorf("resources/templates/list = %q, want %q", listed, want)
				}
				for _, c := range []struct{ uri, text string }{
					{"ui://beta.widgets/7", "widget of beta"}, {"ui://widgets/7", "widget of alpha"}, {apps2RenamedURI, "page of beta"},
				} {
					res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.uri})
					if err != nil {
						t.Fatalf("reading %s: %v", c.uri, err)
					}
					if len(res.Contents) != 1 || res.Contents[0].URI != c.uri || res.Contents[0].Text != c.text {
						t.Errorf("reading %s: %+v, want %q under the URI asked", c.uri, res.Contents, c.text)
					}
				}

			})
			t.Run("completions", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // each its own bound
				defer cancel()
				for _, c := range []struct{ ref, want string }{
					{apps2RenamedTemplate, "beta " + apps2Template},
					{apps2RenamedURI, "beta " + appsOriginalURI},
					{apps2Template, "alpha " + apps2Template},
				} {
					res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: c.ref}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: ""}})
					if err != nil {
						t.Fatalf("completing %s: %v", c.ref, err)
					}
					if !slices.Equal(res.Completion.Values, []string{c.want}) {
						t.Errorf("completing %s = %q, want [%q]", c.ref, res.Completion.Values, c.want)
					}
				}

			})
			t.Run("subscriptions", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // each its own bound
				defer cancel()
				for _, uri := range []string{apps2RenamedURI, "ui://beta.widgets/7"} {
					if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
						t.Fatalf("subscribing to %s: %v\nlog:\n%s", uri, err, g.serveLog())
					}
				}
				for _, c := range []struct{ tool, uri, want string }{
					{"beta_touch", appsOriginalURI, apps2RenamedURI},
					{"beta_touch", "ui://widgets/7", "ui://beta.widgets/7"},
				} {
					if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"uri": c.uri}}); err != nil {
						t.Fatal(err)
					}
					select {
					case got := <-updated:
						if got != c.want {
							t.Errorf("beta's update of %s arrived as %s, want %s", c.uri, got, c.want)
						}
					case <-ctx.Done():
						t.Fatalf("beta's update of %s never arrived\nlog:\n%s", c.uri, g.serveLog())
					}
				}

			})
			t.Run("resumed call", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // each its own bound
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_ask", Arguments: map[string]any{}})
				if err != nil {
					t.Fatalf("beta_ask: %v\nlog:\n%s", err, g.serveLog())
				}
				if got := text(res); !strings.Contains(got, "from beta") || !strings.Contains(got, "hello Ada") {
					t.Errorf("beta_ask answered %q", got)
				}
				if got, want := linkURIs(res), []string{apps2RenamedURI, "ui://beta.widgets/7", apps2RenamedURI}; !slices.Equal(got, want) {
					t.Errorf("beta_ask's result names %q, want %q", got, want)
				}
			})
		})
	}
}

// TestApps2CallWithoutMember: with every tool name prefixed
// (--tool-prefix always), an app's call forwarded without the gateway's
// _meta member names a tool by its server's own name: "only-beta", which
// one server has, reaches it; "get-time", which both have, is refused
// with an error naming both, and reaches neither.
func TestApps2CallWithoutMember(t *testing.T) {
	g := startApps2Gateway(t, "--tool-prefix", "always")
	for _, era := range []string{"2025-11-25", ""} {
		t.Run("era="+era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := connectApps2(ctx, t, g, era, make(chan string, 8))
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "only-beta", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("only-beta: %v %+v\nlog:\n%s", err, res, g.serveLog())
			}
			if got := text(res); got != "from beta" {
				t.Errorf("only-beta answered %q", got)
			}
			if got, want := linkURIs(res), []string{apps2RenamedURI, "ui://beta.widgets/7", apps2RenamedURI}; !slices.Equal(got, want) {
				t.Errorf("only-beta's result names %q, want %q", got, want)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-time", Arguments: map[string]any{}})
			want := `Unknown tool: get-time: several mcp servers offer a tool of that name ("alpha" as "alpha_get-time", "beta" as "beta_get-time"), so the gateway cannot tell which is meant`
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != -32602 || !strings.HasPrefix(je.Message, want) {
				t.Errorf("get-time, which both have: %v, want -32602 %s", err, want)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-time", Arguments: map[string]any{}, Meta: mcp.Meta{appsMeta: apps2RenamedURI}})
			if err != nil || text(res) != "from beta" {
				t.Errorf("get-time with the app member: %v %q, want beta's", err, text(res))
			}
		})
	}
}
