package host

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/host/metadata"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
)

// An OCI package registers as docker run with host mode's isolation; the
// request's --env and --property variables reach the container by name
// (their values stay in docker's environment), its --docker-* settings
// replace the defaults, and its --args follow the image's arguments.
func TestBuildServerOCI(t *testing.T) {
	h := &Host{opts: Options{Attach: attach.Options{Guard: &netguard.Policy{AllowAll: true}}}}
	file, err := filepath.Abs("metadata/testdata/oci.json")
	if err != nil {
		t.Fatal(err)
	}
	srv, _, err := h.buildServer(context.Background(), ServerRequest{Name: "w", Metadata: file,
		Env: []string{"EXTRA=1"}, Props: []string{"REGION"}, Args: []string{"--verbose"},
		Docker: &metadata.Docker{Network: "bridge", Pull: "missing"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "-i", "--rm", "--init", "--network", "bridge", "--memory", "512m", "--cpus", "1", "--pids-limit", "256",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pull", "missing",
		"-e", "EXTRA", "-e", "LOG_LEVEL", "-e", "NODE_ENV", "-e", "REGION", "-e", "WEATHER_API_KEY",
		"--workdir", "/data", "ghcr.io/example/weather-mcp:2.0.1", "--units", "metric", "--verbose"}
	if srv.Command != "docker" || !slices.Equal(srv.Args, want) || srv.Package != "oci ghcr.io/example/weather-mcp:2.0.1" {
		t.Errorf("registration of an OCI package: %s %q (%s)\nwant docker %q", srv.Command, srv.Args, srv.Package, want)
	}
	if srv.Env["WEATHER_API_KEY"] != "${weather_api_key}" || srv.Env["EXTRA"] != "1" {
		t.Errorf("the container's variables are not in docker's environment: %v", srv.Env)
	}

	for _, tc := range []struct {
		req  ServerRequest
		want string
	}{
		{ServerRequest{Name: "c", Command: "docker", Docker: &metadata.Docker{Network: "bridge"}},
			`mcp server "c": the --docker-* flags set how an OCI package of --metadata runs; with --command docker, give docker's options in --args`},
		{ServerRequest{Name: "n", Metadata: filepath.Join(filepath.Dir(file), "npm.json"), Docker: &metadata.Docker{Memory: "1g"}},
			`mcp server "n": the --docker-* flags are for an OCI package, and ` + filepath.Join(filepath.Dir(file), "npm.json") + ` runs npm @example/weather-mcp@1.4.0`},
		{ServerRequest{Name: "w", Metadata: file, Docker: &metadata.Docker{CPUs: "many"}},
			`mcp server "w": oci ghcr.io/example/weather-mcp:2.0.1: --docker-cpus "many": write a number of CPUs above zero`},
	} {
		if _, _, err := h.buildServer(context.Background(), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.req, err, tc.want)
		}
	}
}
