package attach

import (
	"slices"
	"testing"
)

func TestDirectArgv(t *testing.T) {
	tests := []struct {
		cmd  string
		env  map[string]string
		want []string // nil: keep the shell
	}{
		{"exec /bin/true", nil, []string{"/bin/true"}},
		{"/bin/echo a b", nil, []string{"/bin/echo", "a", "b"}},
		{"exec '/bin/echo' -tools 100", nil, []string{"/bin/echo", "-tools", "100"}},
		{`/bin/echo "two words" 'it''s'`, nil, []string{"/bin/echo", "two words", "its"}},
		{"true --flag=x", nil, nil}, // resolved through PATH below
		{"/bin/echo $HOME", nil, nil},
		{`/bin/echo "$HOME"`, nil, nil},
		{"/bin/echo a && /bin/echo b", nil, nil},
		{"/bin/echo a; /bin/echo b", nil, nil},
		{"FOO=1 /bin/echo", nil, nil},
		{"cd /tmp", nil, nil},
		{"/bin/echo *", nil, nil},
		{"/bin/echo ~", nil, nil},
		{"./run.sh", nil, nil},
		{"no-such-program-here", nil, nil},
		{"/bin/echo 'unclosed", nil, nil},
		{"exec", nil, nil},
		{"", nil, nil},
		{"/bin/true", map[string]string{"PATH": "/opt/bin"}, nil},
	}
	for _, tt := range tests {
		got, ok := directArgv(tt.cmd, tt.env)
		if tt.cmd == "true --flag=x" {
			if !ok || len(got) != 2 || got[1] != "--flag=x" || got[0][0] != '/' {
				t.Errorf("%q: %q %v, want the absolute path of true and its flag", tt.cmd, got, ok)
			}
			continue
		}
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q %v, want %q", tt.cmd, got, ok, tt.want)
		}
	}
}

func TestHostEnv(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "MCP_GATEWAY_STATE_DIR=/var/lib/gw", "HOME=/home/u", "GATEWAY_ACCESS_TOKEN=t",
		"LC_ALL=C.UTF-8", "AWS_SECRET_ACCESS_KEY=k", "SSH_AUTH_SOCK=/tmp/agent", "https_proxy=http://proxy:3128", "LCX=no", "TZ=UTC", "broken"}
	got := HostEnv(environ)
	want := []string{"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C.UTF-8", "https_proxy=http://proxy:3128", "TZ=UTC"}
	if !slices.Equal(got, want) {
		t.Errorf("HostEnv = %q, want %q", got, want)
	}
	got = HostEnv(environ, "AWS_*", "SSH_AUTH_SOCK")
	want = []string{"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C.UTF-8", "AWS_SECRET_ACCESS_KEY=k", "SSH_AUTH_SOCK=/tmp/agent", "https_proxy=http://proxy:3128", "TZ=UTC"}
	if !slices.Equal(got, want) {
		t.Errorf("HostEnv with --server-env = %q, want %q", got, want)
	}
}
