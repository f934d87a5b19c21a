package template

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHostOCIServer registers an MCP server published as an OCI image (a
// tiny Go SDK server on the base image, built here) with host mode, from a
// server.json, and calls it through a sandbox's endpoint: docker runs it
// with the entry's variables and arguments and host mode's isolation (no
// network, limits, no capabilities, no privilege gain, no pull); the
// --docker-* flags change that; and an explicit `--command docker --args
// run,-i,--rm,IMAGE` runs it too, as in sbx's example.
func TestHostOCIServer(t *testing.T) {
	need(t)
	d := dockerd
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	dir := t.TempDir()
	if err := goBuild(filepath.Join(dir, "ctx", "ociserver"), "./test/template/ociserver"); err != nil {
		t.Fatal(err)
	}
	dockerfile := "FROM " + baseImage + "\nCOPY ociserver /usr/local/bin/ociserver\nENTRYPOINT [\"/usr/local/bin/ociserver\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "ctx", "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	image := "mcp-gateway-test-ociserver:" + randomHex(6)
	d.must(t, "build", "-t", image, filepath.Join(dir, "ctx"))
	t.Cleanup(func() { _, _ = d.run(context.Background(), nil, "rmi", "-f", image) })

	serverJSON := filepath.Join(dir, "server.json")
	entry := `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
  "name": "io.github.example/report",
  "description": "Says what its container sees",
  "version": "1.0.0",
  "packages": [{
    "registryType": "oci",
    "identifier": "` + image + `",
    "transport": {"type": "stdio"},
    "packageArguments": [{"type": "named", "name": "--label", "value": "from-metadata"}],
    "environmentVariables": [
      {"name": "GREETING", "value": "hello from metadata"},
      {"name": "API_KEY", "isSecret": true, "isRequired": true, "description": "the service's key"}
    ]
  }]
}`
	if err := os.WriteFile(serverJSON, []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}

	h := startHost(t, filepath.Join(dir, "state"))
	out := h.mustCLI("", "server", "add", "report", "--metadata", serverJSON)
	if !strings.Contains(out, `registered mcp server "report"`) {
		t.Errorf("server add --metadata: %s", out)
	}
	h.mustCLI("s3cret-value\n", "secret", "set", "mcp:report:api_key")
	inspect := h.mustCLI("", "server", "inspect", "report")
	var reg struct {
		Command string
		Args    []string
		Package string
	}
	if err := json.Unmarshal([]byte(inspect), &reg); err != nil {
		t.Fatalf("server inspect: %v\n%s", err, inspect)
	}
	wantArgs := []string{"run", "-i", "--rm", "--init", "--network", "none", "--memory", "512m", "--cpus", "1", "--pids-limit", "256",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pull", "never", "-e", "API_KEY", "-e", "GREETING", image, "--label", "from-metadata"}
	if reg.Command != "docker" || strings.Join(reg.Args, " ") != strings.Join(wantArgs, " ") || reg.Package != "oci "+image {
		t.Errorf("server inspect report: command %q args %q package %q; want docker %q", reg.Command, reg.Args, reg.Package, wantArgs)
	}
	if strings.Contains(inspect, "s3cret") {
		t.Errorf("server inspect shows the secret's value:\n%s", inspect)
	}

	// With other isolation settings, and as an explicit docker command.
	out = h.mustCLI("", "server", "add", "report-net", "--metadata", serverJSON, "--docker-network", "bridge", "--docker-memory", "256m", "--docker-pids", "64")
	if !strings.Contains(out, `registered mcp server "report-net"`) {
		t.Errorf("server add --docker-network: %s", out)
	}
	h.mustCLI("s3cret-value\n", "secret", "set", "mcp:report-net:api_key")
	out = h.mustCLI("", "server", "add", "report-cmd", "--command", "docker", "--args", "run,-i,--rm,"+image)
	if !strings.Contains(out, `registered mcp server "report-cmd" (1 tools)`) {
		t.Errorf("server add --command docker: %s", out)
	}
	h.failCLI("the --docker-* flags set how an OCI package of --metadata runs", "", "server", "add", "bad", "--command", "docker", "--args", "run,-i,--rm,"+image, "--docker-network", "bridge")
	h.failCLI(`--docker-pull "sometimes": write never, missing or always`, "", "server", "add", "bad", "--metadata", serverJSON, "--docker-pull", "sometimes")

	token := h.createSandbox("sb", "--static", "report,report-net,report-cmd")
	cs := connectURL(ctx, t, h.url, token, "")
	names := toolNames(ctx, t, cs)
	for _, want := range []string{"report", "report-cmd_report", "report-net_report"} {
		if !contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	report := call(ctx, t, cs, "report", nil)
	t.Logf("the OCI server from metadata reports:\n%s", report)
	for _, want := range []string{
		"args=--label from-metadata\n",
		"GREETING=hello from metadata set=true\n",
		"API_KEY=s3cret-value set=true\n",
		"GATEWAY_ACCESS_TOKEN= set=false\n",
		"interfaces=lo\n",
		"CapEff: 0000000000000000\n",
		"NoNewPrivs: 1\n",
		"memory.max=536870912\n",
		"pids.max=256\n",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the OCI server from metadata reports\n%s\nwithout %q", report, want)
		}
	}
	report = call(ctx, t, cs, "report-net_report", nil)
	for _, want := range []string{"API_KEY=s3cret-value set=true\n", "memory.max=268435456\n", "pids.max=64\n", "CapEff: 0000000000000000\n"} {
		if !strings.Contains(report, want) {
			t.Errorf("the OCI server with --docker-* flags reports\n%s\nwithout %q", report, want)
		}
	}
	if !regexp.MustCompile(`interfaces=lo,eth0`).MatchString(report) {
		t.Errorf("the OCI server with --docker-network bridge reports\n%s\nwithout its eth0", report)
	}
	report = call(ctx, t, cs, "report-cmd_report", nil)
	if !strings.Contains(report, "args=\n") || !strings.Contains(report, "GREETING= set=false\n") {
		t.Errorf("the explicit docker command's server reports\n%s", report)
	}
	if n := len(strings.Fields(d.must(t, "ps", "-q"))); n != 3 {
		t.Errorf("%d containers run for the sandbox's three OCI servers, want 3 (the registrations' tool listings leave none)", n)
	}

	// An image that is not on the engine is not pulled: the registration
	// says why its tools cannot be listed.
	missing := `{"name": "io.github.example/absent", "packages": [{"registryType": "oci", "identifier": "mcp-gateway-test-absent:1", "transport": {"type": "stdio"}}]}`
	if err := os.WriteFile(filepath.Join(dir, "absent.json"), []byte(missing), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := h.cli("", "server", "add", "absent", "--metadata", filepath.Join(dir, "absent.json"))
	if !strings.Contains(out+errOut, "No such image: mcp-gateway-test-absent:1") || !strings.Contains(out, `registered mcp server "absent" (0 tools)`) {
		t.Errorf("server add of an image not on the engine printed %q %q, want docker's reason", out, errOut)
	}

	// The daemon stops its servers' containers when it stops.
	cs.Close()
	h.stop()
	deadline := time.Now().Add(30 * time.Second)
	for strings.TrimSpace(d.must(t, "ps", "-q")) != "" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if left := d.must(t, "ps", "--format", "{{.Image}} {{.Status}}"); strings.TrimSpace(left) != "" {
		t.Errorf("containers outlive the host daemon by 30 s:\n%s", left)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hostGW is a running `mcp-gateway host` daemon whose servers reach the
// tests' dockerd.
type hostGW struct {
	t      *testing.T
	state  string
	logf   string
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
}

var hostReady = regexp.MustCompile(`msg="mcp-gateway host is ready" url=(\S+)`)

func startHost(t *testing.T, state string) *hostGW {
	t.Helper()
	h := &hostGW{t: t, state: state, logf: filepath.Join(t.TempDir(), "host.log")}
	h.cmd = exec.Command(gatewayBin, "host", "--state-dir", state, "--host", "127.0.0.1", "--port", "0", "--log-level", "debug")
	h.cmd.Env = h.env()
	logf, err := os.Create(h.logf)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	h.exited = exited
	go func() { _ = h.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("host log:\n%s", lastLines(h.log(), 60))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := hostReady.FindStringSubmatch(h.log()); m != nil {
			h.url = m[1]
			return h
		}
		select {
		case <-exited:
			t.Fatalf("the host daemon exited:\n%s", h.log())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("the host did not become ready:\n%s", h.log())
	return nil
}

// env is the daemon's and the CLI's environment: the state directory, and
// DOCKER_HOST naming the tests' dockerd (the daemon passes it to servers).
func (h *hostGW) env() []string {
	return append(os.Environ(), "MCP_GATEWAY_STATE_DIR="+h.state, "DOCKER_HOST="+dockerd.host,
		"PATH="+filepath.Dir(dockerd.cli)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// stop stops the daemon with SIGINT, as Ctrl-C does, and waits for it.
func (h *hostGW) stop() {
	h.t.Helper()
	select {
	case <-h.exited:
		return
	default:
	}
	_ = h.cmd.Process.Signal(os.Interrupt)
	select {
	case <-h.exited:
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
		h.t.Errorf("the host daemon did not stop within 30 s of SIGINT:\n%s", lastLines(h.log(), 30))
	}
}

func (h *hostGW) log() string {
	b, _ := os.ReadFile(h.logf)
	return string(b)
}

func (h *hostGW) cli(stdin string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = h.env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

func (h *hostGW) mustCLI(stdin string, args ...string) string {
	h.t.Helper()
	out, errOut, code := h.cli(stdin, args...)
	if code != 0 {
		h.t.Fatalf("mcp-gateway %s: exit %d\n%s%s\nhost log:\n%s", strings.Join(args, " "), code, out, errOut, lastLines(h.log(), 40))
	}
	return out
}

func (h *hostGW) failCLI(want string, stdin string, args ...string) {
	h.t.Helper()
	out, errOut, code := h.cli(stdin, args...)
	if code == 0 || !strings.Contains(errOut, want) {
		h.t.Errorf("mcp-gateway %s: exit %d, stderr %q, stdout %q; want a failure saying %q", strings.Join(args, " "), code, errOut, out, want)
	}
}

// createSandbox makes a sandbox and returns its token.
func (h *hostGW) createSandbox(name string, extra ...string) string {
	h.t.Helper()
	out := h.mustCLI("", append([]string{"sandbox", "create", name, "--json"}, extra...)...)
	var res struct{ Token, URL string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Token == "" || res.URL != h.url {
		h.t.Fatalf("sandbox create %s printed %s (%v)", name, out, err)
	}
	return res.Token
}
