package mcpconfig

import "testing"

func TestShareProperty(t *testing.T) {
	servers, warns, err := Parse([]byte(`{"mine": {"runCmd": "x", "share": "per-client"}, "memory": {"share": "shared"}, "filesystem": {"paths": ["/tmp"]}}`), nil)
	if err != nil || len(warns) != 0 {
		t.Fatalf("Parse: %v %v", err, warns)
	}
	got := map[string]string{}
	for _, s := range servers {
		got[s.Name] = s.Share
	}
	if got["mine"] != SharePerClient || got["memory"] != ShareProcess || got["filesystem"] != ShareProcess {
		t.Errorf("share: %v", got)
	}
	for _, bad := range []string{`"per-session"`, `true`, `""`} {
		_, _, err := Parse([]byte(`{"mine": {"runCmd": "x", "share": `+bad+`}}`), nil)
		want := `mcp server "mine": property "share" must be "shared" (one process for every client, the default) or "per-client" (a process per client session)`
		if err == nil || err.Error() != want {
			t.Errorf("share %s: error %v, want %q", bad, err, want)
		}
	}
}
