package metadata

import (
	"reflect"
	"strings"
	"testing"
)

var defaultDocker = []string{"run", "-i", "--rm", "--init", "--network", "none", "--memory", "512m", "--cpus", "1",
	"--pids-limit", "256", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pull", "never"}

func TestParseOCI(t *testing.T) {
	spec, err := Parse(readFixture(t, "oci.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Spec{
		Name:        "io.github.example/weather-oci",
		Description: "Weather forecasts, as a container image",
		Version:     "2.0.1",
		Package:     "oci ghcr.io/example/weather-mcp:2.0.1",
		Command:     "docker",
		Args: append(append([]string{}, defaultDocker...),
			"-e", "LOG_LEVEL", "-e", "NODE_ENV", "-e", "WEATHER_API_KEY",
			"--workdir", "/data", "ghcr.io/example/weather-mcp:2.0.1", "--units", "metric"),
		OCI: &OCI{Image: "ghcr.io/example/weather-mcp:2.0.1", RuntimeArgs: []string{"--workdir", "/data"}, PackageArgs: []string{"--units", "metric"}},
		Env: map[string]string{
			"WEATHER_API_KEY": "${weather_api_key}",
			"LOG_LEVEL":       "info",
			"NODE_ENV":        "production",
		},
		Config:  []Property{{Name: "log_level", Env: "LOG_LEVEL", Default: "info"}},
		Secrets: []string{"weather_api_key"},
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("Parse(oci.json):\n got %#v\nwant %#v", spec, want)
	}
	for _, a := range spec.Args {
		if strings.Contains(a, "${") {
			t.Errorf("a secret placeholder is on docker's command line: %q", spec.Args)
		}
	}
}

func TestDockerArgs(t *testing.T) {
	o := &OCI{Image: "img:1", PackageArgs: []string{"serve"}}
	got, err := Docker{Network: "bridge", Memory: "1g", CPUs: "0.5", Pids: 64, Pull: "missing"}.Args(o, []string{"A"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "-i", "--rm", "--init", "--network", "bridge", "--memory", "1g", "--cpus", "0.5",
		"--pids-limit", "64", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pull", "missing", "-e", "A", "img:1", "serve"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Args:\n got %q\nwant %q", got, want)
	}
	for _, tc := range []struct {
		d    Docker
		want string
	}{
		{Docker{Network: "--privileged"}, `--docker-network "--privileged": name a Docker network`},
		{Docker{Memory: "lots"}, `--docker-memory "lots": write a size such as 512m or 2g`},
		{Docker{CPUs: "0"}, `--docker-cpus "0": write a number of CPUs above zero`},
		{Docker{CPUs: "-1"}, `--docker-cpus "-1"`},
		{Docker{Pids: -2}, `--docker-pids -2: write a number of processes above zero`},
		{Docker{Pull: "sometimes"}, `--docker-pull "sometimes": write never, missing or always`},
	} {
		if _, err := tc.d.Args(o, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.d, err, tc.want)
		}
	}
}

func TestImageRef(t *testing.T) {
	for _, tc := range []struct{ id, version, base, want string }{
		{"ghcr.io/a/b:1.0", "", "", "ghcr.io/a/b:1.0"},
		{"a/b", "2.0", "", "a/b:2.0"},
		{"a/b", "latest", "", "a/b"}, // "latest" is dropped before: no tag means latest
		{"a/b@sha256:00", "2.0", "", "a/b@sha256:00"},
		{"localhost:5000/a/b", "3", "", "localhost:5000/a/b:3"},
		{"a/b", "1", "https://docker.io", "a/b:1"},
		{"a/b", "1", "https://ghcr.io", "ghcr.io/a/b:1"},
		{"quay.io/a/b", "1", "https://ghcr.io", "quay.io/a/b:1"},
	} {
		version := tc.version
		if version == "latest" {
			version = ""
		}
		got, err := imageRef(tc.id, version, tc.base)
		if err != nil || got != tc.want {
			t.Errorf("imageRef(%q, %q, %q) = %q, %v; want %q", tc.id, tc.version, tc.base, got, err, tc.want)
		}
	}
	if _, err := imageRef("--privileged", "", ""); err == nil || !strings.Contains(err.Error(), `identifier "--privileged" is not an image reference`) {
		t.Errorf("an identifier that is a flag: %v", err)
	}
}

func TestParseOCIRefusesIsolationFlags(t *testing.T) {
	for _, tc := range []struct{ word, flag string }{
		{"--privileged", "--privileged"}, {"--network", "--network"}, {"--network=host", "--network"}, {"-v", "-v"},
		{"-v/:/host", "-v"}, {"-itv/:/host", "-v"}, {"-iP", "-P"}, {"-m1g", "-m"}, {"--mount", "--mount"}, {"--cap-add", "--cap-add"},
		{"--env-file", "--env-file"},
	} {
		flag := tc.flag
		entry := `{"name": "a/b", "packages": [{"registryType": "oci", "identifier": "img:1", "transport": {"type": "stdio"},
			"runtimeArguments": [{"type": "positional", "value": "` + tc.word + `"}, {"type": "positional", "value": "x"}]}]}`
		_, err := Parse([]byte(entry))
		want := "its runtime arguments ask for docker run " + flag + ", which host mode does not let registry metadata choose"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `mcp server "a/b"`) {
			t.Errorf("runtime argument %s: error %v, want one saying %q", tc.word, err, want)
		}
	}
	// Glued values of other flags are not mistaken for refused ones.
	for _, word := range []string{"-eMODE=vmp", "-w/srv/vp", "-i", "--workdir=/p"} {
		entry := `{"name": "a/b", "packages": [{"registryType": "oci", "identifier": "img:1", "transport": {"type": "stdio"},
			"runtimeArguments": [{"type": "positional", "value": "` + word + `"}]}]}`
		if _, err := Parse([]byte(entry)); err != nil {
			t.Errorf("runtime argument %s refused: %v", word, err)
		}
	}
	// The oldest spelling: registry_name docker, name and version.
	spec, err := Parse([]byte(`{"name": "a/b", "packages": [{"registry_name": "docker", "name": "acme/srv", "version": "0.3"}]}`))
	if err != nil || spec.Package != "oci acme/srv:0.3" || spec.Command != "docker" {
		t.Errorf("a docker package of the oldest spelling: %+v, %v", spec, err)
	}
}
