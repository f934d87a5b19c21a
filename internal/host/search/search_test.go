package search

import (
	"fmt"
	"slices"
	"testing"
)

// registry mirrors a few servers of modelcontextprotocol/servers.
var registry = []Document{
	{
		Name:        "memory",
		Description: "Knowledge graph-based persistent memory system",
		Tools: []Tool{
			{"create_entities", "Create multiple new entities in the knowledge graph"},
			{"create_relations", "Create multiple new relations between entities in the knowledge graph"},
			{"read_graph", "Read the entire knowledge graph"},
			{"search_nodes", "Search for nodes in the knowledge graph based on a query"},
		},
	},
	{
		Name:        "filesystem",
		Description: "Secure file operations with configurable access controls",
		Tools: []Tool{
			{"read_file", "Read the complete contents of a file from the file system"},
			{"write_file", "Create a new file or completely overwrite an existing file with new content"},
			{"list_directory", "Get a detailed listing of all files and directories in a specified path"},
			{"move_file", "Move or rename files and directories"},
		},
	},
	{
		Name:        "github",
		Description: "Repository management, file operations, and GitHub API integration",
		Tools: []Tool{
			{"create_issue", "Create a new issue in a GitHub repository"},
			{"search_repositories", "Search for GitHub repositories"},
			{"create_pull_request", "Create a new pull request in a GitHub repository"},
			{"get_file_contents", "Get the contents of a file or directory from a GitHub repository"},
		},
	},
	{
		Name:        "everything",
		Description: "Test server that exercises all the features of the MCP protocol",
		Tools: []Tool{
			{"echo", "Echoes back the input"},
			{"add", "Adds two numbers"},
			{"longRunningOperation", "Demonstrates a long running operation with progress updates"},
			{"sampleLLM", "Samples from an LLM using MCP's sampling feature"},
		},
	},
}

func names(results []Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Name)
	}
	return out
}

func TestRank(t *testing.T) {
	tests := []struct {
		query     string
		first     string   // "" when nothing may match
		firstHas  []string // tools the first result must list
		firstNot  []string // tools it must not list
		notInList []string // servers that must not appear
	}{
		{query: "knowledge graph", first: "memory",
			firstHas: []string{"create_entities", "read_graph"}, notInList: []string{"filesystem", "everything"}},
		{query: "read a file", first: "filesystem",
			firstHas: []string{"read_file", "write_file"}},
		{query: "create issue", first: "github",
			firstHas: []string{"create_issue", "create_pull_request"}, firstNot: []string{"search_repositories"}},
		{query: "files", first: "filesystem", firstHas: []string{"read_file", "move_file"}},
		{query: "readFile", first: "filesystem", firstHas: []string{"read_file"}},
		{query: "read-file", first: "filesystem", firstHas: []string{"read_file"}},
		{query: "search repositories", first: "github", firstHas: []string{"search_repositories"}},
		{query: "echo", first: "everything", firstHas: []string{"echo"}, notInList: []string{"memory", "filesystem", "github"}},
		{query: "creating entities", first: "memory", firstHas: []string{"create_entities"}},
		{query: "long running", first: "everything", firstHas: []string{"longRunningOperation"}},
		{query: "kubernetes pods", first: ""},
		{query: "", first: ""},
		{query: "the of and a", first: ""},
		{query: "  --- ???", first: ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := Rank(registry, tt.query, 0)
			if tt.first == "" {
				if got != nil {
					t.Fatalf("Rank = %+v, want nil", got)
				}
				return
			}
			if len(got) == 0 || got[0].Name != tt.first {
				t.Fatalf("Rank order = %q, want %q first (results %+v)", names(got), tt.first, got)
			}
			for _, tool := range tt.firstHas {
				if !slices.Contains(got[0].Tools, tool) {
					t.Errorf("%s Tools = %q, want %q among them", got[0].Name, got[0].Tools, tool)
				}
			}
			for _, tool := range tt.firstNot {
				if slices.Contains(got[0].Tools, tool) {
					t.Errorf("%s Tools = %q, must not hold %q", got[0].Name, got[0].Tools, tool)
				}
			}
			for _, name := range tt.notInList {
				if slices.Contains(names(got), name) {
					t.Errorf("Rank = %q, must not list %s", names(got), name)
				}
			}
			for i, r := range got {
				if r.Score <= 0 {
					t.Errorf("result %d (%s) has score %v", i, r.Name, r.Score)
				}
				if i > 0 && r.Score > got[i-1].Score {
					t.Errorf("result %d (%s) scores above the one before it", i, r.Name)
				}
			}
		})
	}
}

func TestRankToolsInServerOrder(t *testing.T) {
	got := Rank(registry, "file", 1)
	want := []string{"read_file", "write_file", "list_directory", "move_file"}
	if len(got) != 1 || !slices.Equal(got[0].Tools, want) {
		t.Fatalf("Rank = %+v, want filesystem with tools %q", got, want)
	}
}

func TestRankNameOutweighsDescription(t *testing.T) {
	docs := []Document{
		{Name: "notes", Description: "stores weather notes"},
		{Name: "weather", Description: "forecasts"},
	}
	if got := names(Rank(docs, "weather", 0)); !slices.Equal(got, []string{"weather", "notes"}) {
		t.Errorf("Rank = %q, want the server named weather first", got)
	}
}

func TestRankCompoundName(t *testing.T) {
	docs := []Document{
		{Name: "server-memory", Description: "memory for the server"},
		{Name: "server", Description: "memory server"},
		{Name: "memory", Description: "server memory"},
	}
	for _, q := range []string{"server-memory", "server_memory", "serverMemory", "servermemory"} {
		got := Rank(docs, q, 0)
		if len(got) == 0 || got[0].Name != "server-memory" {
			t.Errorf("Rank(%q) = %q, want server-memory first", q, names(got))
		}
	}
}

func TestRankLimitAndTies(t *testing.T) {
	var docs []Document
	for i := range 15 {
		// Same text, so same score: only the name orders them.
		docs = append(docs, Document{Name: fmt.Sprintf("srv-%02d", 14-i), Description: "weather forecasts"})
	}
	docs = append(docs, Document{Name: "other", Description: "unrelated"})

	tests := []struct {
		limit int
		want  int
	}{
		{limit: 0, want: DefaultLimit},
		{limit: -3, want: DefaultLimit},
		{limit: 3, want: 3},
		{limit: 100, want: 15},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			got := Rank(docs, "weather", tt.limit)
			if len(got) != tt.want {
				t.Fatalf("Rank with limit %d has %d results, want %d", tt.limit, len(got), tt.want)
			}
			for i, r := range got {
				if want := fmt.Sprintf("srv-%02d", i); r.Name != want {
					t.Errorf("result %d = %s, want %s (ties ordered by name)", i, r.Name, want)
				}
			}
		})
	}

	first := Rank(docs, "weather forecast", 0)
	for range 20 {
		if again := Rank(docs, "weather forecast", 0); !slices.EqualFunc(first, again, func(a, b Result) bool {
			return a.Name == b.Name && a.Score == b.Score
		}) {
			t.Fatalf("Rank is not deterministic: %+v then %+v", first, again)
		}
	}
}

func TestRankNoDocuments(t *testing.T) {
	if got := Rank(nil, "anything", 0); got != nil {
		t.Errorf("Rank(nil) = %+v, want nil", got)
	}
	if got := Rank([]Document{{Name: "empty"}}, "empty", 0); len(got) != 1 {
		t.Errorf("Rank of a document with only a name = %+v, want it found", got)
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"readFile", []string{"read", "fil", "readfil"}},
		{"read_file", []string{"read", "fil", "readfil"}},
		{"read-file", []string{"read", "fil", "readfil"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"Read the FILES, please!", []string{"read", "fil", "pleas"}},
		{"@modelcontextprotocol/server-memory", []string{"modelcontextprotocol", "server", "memory", "servermemory"}},
		{"ipv6 gpt4o", []string{"ipv6", "gpt4o"}},
		{"the of and", nil},
		{"", nil},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := tokenize(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("tokenize(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestStem(t *testing.T) {
	// Words on one line must share a stem; the stem of the first is given.
	tests := []struct {
		stem  string
		words []string
	}{
		{"fil", []string{"file", "files"}},
		{"entity", []string{"entity", "entities"}},
		{"search", []string{"search", "searches", "searching", "searched"}},
		{"creat", []string{"create", "creates", "created", "creating"}},
		{"stop", []string{"stop", "stops", "stopped", "stopping"}},
		{"read", []string{"read", "reads", "reading"}},
		{"issu", []string{"issue", "issues"}},
		{"process", []string{"process", "processes"}},
		{"status", []string{"status"}},
		{"class", []string{"class"}},
		{"analysis", []string{"analysis"}},
		{"add", []string{"add", "adds", "added", "adding"}},
		{"call", []string{"call", "calls", "called", "calling"}},
		{"use", []string{"use", "uses"}},
		{"bus", []string{"bus"}},
		{"ring", []string{"ring"}},
		{"k8s", []string{"k8s"}},
	}
	for _, tt := range tests {
		for _, w := range tt.words {
			if got := stem(w); got != tt.stem {
				t.Errorf("stem(%q) = %q, want %q", w, got, tt.stem)
			}
		}
	}
}
