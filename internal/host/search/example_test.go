package search_test

import (
	"fmt"

	"github.com/mcp-gateway/mcp-gateway/internal/host/search"
)

func ExampleRank() {
	docs := []search.Document{
		{Name: "filesystem", Description: "Secure file operations", Tools: []search.Tool{
			{Name: "read_file", Description: "Read the contents of a file"},
			{Name: "list_directory", Description: "List a directory"},
		}},
		{Name: "memory", Description: "Knowledge graph memory", Tools: []search.Tool{
			{Name: "read_graph", Description: "Read the knowledge graph"},
		}},
	}
	for _, r := range search.Rank(docs, "read files", 5) {
		fmt.Println(r.Name, r.Tools)
	}
	// Output:
	// filesystem [read_file]
	// memory [read_graph]
}
