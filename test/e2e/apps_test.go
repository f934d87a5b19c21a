package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/evanw/esbuild/pkg/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two ext-apps examples define the same tool with the same ui:// URI.
// Named so, "preact" comes first in sorted order and keeps both names;
// "vanilla" gets vanilla_get-time and ui://vanilla.get-time/mcp-app.html.
const (
	appsOriginalURI = "ui://get-time/mcp-app.html"
	appsRenamedURI  = "ui://vanilla.get-time/mcp-app.html"
	appsMeta        = "io.github.mcp-gateway/app" // gateway.MetaApp
)

func startAppsGateway(t *testing.T) *serveGW {
	t.Helper()
	return startServe(t, fmt.Sprintf(`{"preact": {"runCmd": %q}, "vanilla": {"runCmd": %q}}`,
		filepath.Join(npmBin, "mcp-server-basic-preact")+" --stdio",
		filepath.Join(npmBin, "mcp-server-basic-vanillajs")+" --stdio"))
}

// TestAppsThroughTheGateway: with two MCP Apps servers whose ui:// URIs
// collide, a client of either era sees the second server's URI namespaced
// in its tool (both _meta keys, the rest of _meta.ui unchanged) and in
// resources/list, reads that server's own page under it, and a call made
// for the app by the tool's original name reaches the app's own server.
// The vanillajs server answers get-time with structuredContent, the preact
// one without: that tells which server answered.
func TestAppsThroughTheGateway(t *testing.T) {
	s := startAppsGateway(t)
	for _, era := range []string{"2025-11-25", ""} {
		t.Run("era="+era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := s.connectEra(ctx, era)
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			uris := map[string][2]any{}
			for _, tool := range tools.Tools {
				ui, _ := tool.Meta["ui"].(map[string]any)
				uris[tool.Name] = [2]any{ui["resourceUri"], tool.Meta["ui/resourceUri"]}
			}
			if got, want := uris["get-time"], [2]any{appsOriginalURI, appsOriginalURI}; got != want {
				t.Errorf("preact's get-time names %v, want %v", got, want)
			}
			if got, want := uris["vanilla_get-time"], [2]any{appsRenamedURI, appsRenamedURI}; got != want {
				t.Errorf("vanilla_get-time names %v, want %v", got, want)
			}

			res, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, r := range res.Resources {
				listed = append(listed, r.URI)
			}
			if want := []string{appsOriginalURI, appsRenamedURI}; strings.Join(listed, " ") != strings.Join(want, " ") {
				t.Errorf("resources/list = %q, want %q", listed, want)
			}
			for _, c := range []struct {
				uri     string
				vanilla bool
			}{{appsOriginalURI, false}, {appsRenamedURI, true}} {
				read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.uri})
				if err != nil {
					t.Fatalf("reading %s: %v", c.uri, err)
				}
				if len(read.Contents) != 1 || read.Contents[0].URI != c.uri || read.Contents[0].MIMEType != "text/html;profile=mcp-app" {
					t.Fatalf("reading %s: %+v, want one page under the URI asked", c.uri, read.Contents)
				}
				// Only the vanillajs page has an element with id server-time.
				if got := strings.Contains(read.Contents[0].Text, `id="server-time"`); got != c.vanilla {
					t.Errorf("reading %s: the vanillajs page = %v, want %v", c.uri, got, c.vanilla)
				}
			}

			for _, c := range []struct {
				name    string
				meta    mcp.Meta
				vanilla bool
			}{
				{"get-time", nil, false},
				{"vanilla_get-time", nil, true},
				{"get-time", mcp.Meta{appsMeta: appsRenamedURI}, true}, // the vanillajs app's own call
				{"get-time", mcp.Meta{appsMeta: appsOriginalURI}, false},
			} {
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: map[string]any{}, Meta: c.meta})
				if err != nil {
					t.Fatalf("calling %s with _meta %v: %v", c.name, c.meta, err)
				}
				if r.IsError || (r.StructuredContent != nil) != c.vanilla {
					t.Errorf("calling %s with _meta %v: %s (structured %v), want the %s server's answer", c.name, c.meta, text(r), r.StructuredContent, map[bool]string{true: "vanillajs", false: "preact"}[c.vanilla])
				}
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-time", Meta: mcp.Meta{appsMeta: "ui://nobody/x.html"}})
			if err == nil || !strings.Contains(err.Error(), `"ui://nobody/x.html", which is not the URI of an app this gateway lists`) {
				t.Errorf("an unknown app's call: %v", err)
			}
		})
	}
	if strings.Contains(s.serveLog(), "is hidden") {
		t.Errorf("the gateway hid something:\n%s", s.serveLog())
	}
}

// TestAppsPolicy: policy decides an app's own call as a call of its
// server's real tool: a forbid of MCP::Tool::"vanilla/get-time" refuses the
// vanillajs app's call of get-time (and the exposed vanilla_get-time), not
// the preact app's, and the audit log names the server's tool.
func TestAppsPolicy(t *testing.T) {
	policy := writePolicy(t, `@id("no-vanilla-time")
forbid(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"vanilla/get-time");
`)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startServe(t, fmt.Sprintf(`{"preact": {"runCmd": %q}, "vanilla": {"runCmd": %q}}`,
		filepath.Join(npmBin, "mcp-server-basic-preact")+" --stdio",
		filepath.Join(npmBin, "mcp-server-basic-vanillajs")+" --stdio"),
		"--policy-file", policy, "--audit-file", audit)
	for _, era := range []string{"2025-11-25", ""} {
		t.Run("era="+era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := s.connectEra(ctx, era)
			for _, c := range []struct {
				name string
				meta mcp.Meta
			}{
				{"get-time", mcp.Meta{appsMeta: appsRenamedURI}},
				{"vanilla_get-time", nil},
			} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: map[string]any{}, Meta: c.meta})
				if err != nil || !res.IsError || res.Meta[deniedMeta] == nil || !strings.Contains(text(res), `forbidden by policy "no-vanilla-time"`) {
					t.Errorf("calling %s with _meta %v: %v %v, want refused by no-vanilla-time", c.name, c.meta, err, res)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-time", Arguments: map[string]any{}, Meta: mcp.Meta{appsMeta: appsOriginalURI}})
			if err != nil || res.IsError || res.StructuredContent != nil {
				t.Errorf("the preact app's get-time: %v %v, want the preact server's answer", err, res)
			}
		})
	}
	recs := auditRecords(t, audit)
	if findRecord(recs, map[string]any{"type": "call", "server": "vanilla", "name": "get-time", "decision": "deny", "outcome": "denied"}) == nil {
		t.Errorf("no denied record of vanilla/get-time in the audit log: %v", recs)
	}
	if findRecord(recs, map[string]any{"type": "call", "server": "preact", "name": "get-time", "decision": "allow", "outcome": "ok"}) == nil {
		t.Errorf("no allowed record of preact/get-time in the audit log: %v", recs)
	}
}

// TestAppsInABrowser renders both colliding apps in headless Chromium,
// through a small host page built on ext-apps' AppBridge, in both eras:
// each iframe shows its own server's page, and the tool call each app
// makes (by clicking its "Get Server Time" button) reaches its own server:
// the vanillajs app shows the time from its server's structuredContent
// (it shows "[ERROR]" when answered by the preact server, which sends none).
// Screenshots of both apps are kept under test/out/apps.
func TestAppsInABrowser(t *testing.T) {
	chromium := findChromium(t)
	s := startAppsGateway(t)
	host := serveAppsHost(t, s)
	outDir, err := filepath.Abs(filepath.Join("..", "out", "apps"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			ctx := browser(t, chromium)
			page := host + "/?" + url.Values{"token": {s.token}, "era": {era}}.Encode()
			defer func() { // the whole page, to see what went wrong
				if t.Failed() {
					if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90)); err == nil {
						path := filepath.Join(outDir, era+"-failed.png")
						if os.WriteFile(path, png, 0o644) == nil {
							t.Logf("screenshot of the failed page: %s", path)
						}
					}
				}
			}()
			if err := chromedp.Do(ctx,
				chromedp.Navigate(page),
				discard(chromedp.Poll[bool](`window.hostState && (window.hostState.errors.length > 0 || window.hostState.ready &&
					Object.values(window.hostState.apps).every(a => a.initialized))`, chromedp.WithPollingTimeout(60*time.Second))),
			); err != nil {
				t.Fatalf("the host page did not render both apps: %v\nstate: %s\nlog:\n%s", err, hostState(ctx), s.serveLog())
			}
			var state struct {
				Errors []string
				Apps   map[string]struct {
					URI, ContentURI string
					Initialized     bool
				}
			}
			evalJSON(t, ctx, `window.hostState`, &state)
			if len(state.Errors) > 0 {
				t.Fatalf("host errors: %q", state.Errors)
			}
			for name, uri := range map[string]string{"get-time": appsOriginalURI, "vanilla_get-time": appsRenamedURI} {
				a, ok := state.Apps[name]
				if !ok || a.URI != uri || a.ContentURI != uri || !a.Initialized {
					t.Errorf("app of %s: %+v, want rendered from %s", name, a, uri)
				}
			}
			// Which page each frame shows: only the vanillajs page has #server-time.
			for name, vanilla := range map[string]bool{"get-time": false, "vanilla_get-time": true} {
				has, err := chromedp.Run(ctx, chromedp.Evaluate[bool](frameDoc(name)+`.getElementById("server-time") !== null`))
				if err != nil {
					t.Fatal(err)
				}
				if has != vanilla {
					t.Errorf("the frame of %s shows the vanillajs page: %v, want %v", name, has, vanilla)
				}
			}

			// Each app calls get-time on its own.
			for _, name := range []string{"get-time", "vanilla_get-time"} {
				if err := chromedp.Do(ctx,
					discard(chromedp.Evaluate[any](`[...`+frameDoc(name)+`.querySelectorAll("button")].find(b => b.textContent.includes("Get Server Time")).click(), true`)),
					discard(chromedp.Poll[int](fmt.Sprintf(`window.hostState.apps[%q].calls.length`, name), chromedp.WithPollingTimeout(30*time.Second))),
				); err != nil {
					t.Fatalf("the app of %s made no call: %v\nstate: %s", name, err, hostState(ctx))
				}
			}
			type call struct {
				Request struct{ Name string }
				Result  struct {
					Content           []struct{ Text string }
					StructuredContent *struct{ Time string }
					IsError           bool
				}
			}
			var calls map[string][]call
			evalJSON(t, ctx, `Object.fromEntries(Object.entries(window.hostState.apps).map(([k, a]) => [k, a.calls]))`, &calls)
			for name, vanilla := range map[string]bool{"get-time": false, "vanilla_get-time": true} {
				cs := calls[name]
				if len(cs) != 1 || cs[0].Request.Name != "get-time" || cs[0].Result.IsError || len(cs[0].Result.Content) == 0 {
					t.Fatalf("the app of %s called %+v", name, cs)
				}
				if got := cs[0].Result.StructuredContent != nil; got != vanilla {
					t.Errorf("the app of %s: answered by the vanillajs server %v, want %v (%+v)", name, got, vanilla, cs[0].Result)
					continue
				}
				// What the app shows is its own server's answer.
				want := cs[0].Result.Content[0].Text
				sel := `.querySelector("code")`
				if vanilla {
					want, sel = cs[0].Result.StructuredContent.Time, `.getElementById("server-time")`
				}
				if _, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(t => t === %q ? t : null)(%s%s.textContent)`, want, frameDoc(name), sel),
					chromedp.WithPollingTimeout(30*time.Second))); err != nil {
					got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](frameDoc(name)+sel+`.textContent`))
					t.Errorf("the app of %s shows %q, want %q", name, got, want)
				}
			}

			for _, name := range []string{"get-time", "vanilla_get-time"} {
				png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#card-"+name)))
				if err != nil {
					t.Fatalf("screenshot of %s: %v", name, err)
				}
				path := filepath.Join(outDir, era+"-"+name+".png")
				if err := os.WriteFile(path, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot of the app of %s: %s", name, path)
			}
		})
	}
}

// findChromium returns Debian's chromium; without it the test is skipped,
// except under CI, where it fails.
func findChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is not installed (apt-get install chromium; .ci/run does): %v", err)
		}
		t.Skipf("chromium is not installed (apt-get install chromium): %v", err)
	}
	return path
}

// browser starts a headless Chromium of its own for the test, with a fresh
// profile and nothing that reaches out to the network.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 1100),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// serveAppsHost bundles the host page's script (ext-apps' app bridge and
// what it imports, from test/npm's node_modules, with esbuild's Go API:
// nothing is fetched) and serves the page on loopback, with /mcp proxied
// to the gateway so the page calls it from its own origin.
func serveAppsHost(t *testing.T, s *serveGW) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "host.js")
	res := api.Build(api.BuildOptions{
		EntryPoints: []string{filepath.Join("testdata", "apps", "host.js")},
		Bundle:      true,
		Format:      api.FormatESModule,
		Platform:    api.PlatformBrowser,
		Target:      api.ES2022,
		NodePaths:   []string{filepath.Dir(npmBin)},
		Outfile:     out,
		Write:       true,
		LogLevel:    api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		t.Fatalf("bundling the host page: %+v", res.Errors)
	}
	gwURL, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: gwURL.Host}) },
		FlushInterval: -1,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join("testdata", "apps", "host.html"))
	})
	mux.HandleFunc("/host.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		http.ServeFile(w, r, out)
	})
	mux.Handle("/mcp", proxy)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// frameDoc is the JavaScript expression of the document of a tool's app frame.
func frameDoc(tool string) string {
	return fmt.Sprintf(`document.getElementById(%q).contentDocument`, "app-"+tool)
}

func evalJSON(t *testing.T, ctx context.Context, expr string, v any) {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(`+expr+`)`))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		t.Fatalf("%s = %s: %v", expr, raw, err)
	}
}

// hostState is the host page's state, for failure messages.
func hostState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.hostState)`))
	return raw
}

// discard runs an action for its effect, for chromedp.Do.
func discard[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
