package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// A --metadata file is named to the daemon by its absolute path in the
// caller's directory; URLs pass unchanged.
func TestCallerPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"":                               "",
		"./server.json":                  filepath.Join(wd, "server.json"),
		"sub/server.yaml":                filepath.Join(wd, "sub", "server.yaml"),
		"/etc/server.json":               "/etc/server.json",
		"file://server.json":             "file://" + filepath.Join(wd, "server.json"),
		"https://registry.example/v0/x":  "https://registry.example/v0/x",
		"http://127.0.0.1:1/server.json": "http://127.0.0.1:1/server.json",
	} {
		if got := callerPath(in); got != want {
			t.Errorf("callerPath(%q) = %q, want %q", in, got, want)
		}
	}
	var f serverAddFlags
	f.req.Metadata = "./server.json"
	if got := f.request("x", nil).Metadata; got != filepath.Join(wd, "server.json") {
		t.Errorf("server add --metadata ./server.json sends %q, want the absolute path", got)
	}
}
