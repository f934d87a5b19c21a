package cli

import (
	"flag"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// --max-tasks defaults to gateway.DefaultMaxTasks, the launcher hands it to
// serve, and it reaches the gateway's TaskOptions.
func TestMaxTasksFlag(t *testing.T) {
	var g gatewayFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	g.register(fs)
	g.registerHTTP(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if got := g.tasks.options().MaxTotal; got != 1024 {
		t.Errorf("--max-tasks default = %d, want 1024", got)
	}
	if err := fs.Parse([]string{"--max-tasks", "7"}); err != nil {
		t.Fatal(err)
	}
	var served gatewayFlags
	fs2 := flag.NewFlagSet("serve", flag.ContinueOnError)
	served.register(fs2)
	served.registerHTTP(fs2)
	if err := fs2.Parse(g.args()); err != nil {
		t.Fatal(err)
	}
	if got := served.tasks.options(); got.MaxTotal != 7 || got.MaxPerClient != gateway.DefaultMaxTasksPerClient {
		t.Errorf("serve got TaskOptions %+v from the launcher's args, want MaxTotal 7", got)
	}
}
